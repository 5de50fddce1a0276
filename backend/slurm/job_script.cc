#include "backend/slurm/job_script.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "billing/stop_plan.h"
#include "telemetry/pyhook.h"

namespace nodus::backend::slurm {

std::string slurm_job_name(const JobRecord& job, const SlurmSettings& settings) {
  auto created_ms = static_cast<int64_t>(std::llround(job.created_at * 1000));
  std::string tag = settings.store_tag.empty() ? "" : settings.store_tag + "-";
  return "nodus-" + tag + std::to_string(job.id) + "-" + std::to_string(created_ms);
}

std::string output_path(const SlurmSettings& settings, const JobRecord& job) {
  return settings.workdir + "/" + slurm_job_name(job, settings) + ".out";
}

std::string metrics_path(const SlurmSettings& settings, const JobRecord& job) {
  return settings.workdir + "/" + slurm_job_name(job, settings) + ".metrics.jsonl";
}

std::string shell_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string exec_line(const std::vector<std::string>& argv) {
  std::string line = "exec";
  for (const auto& arg : argv) line += " " + shell_quote(arg);
  return line;
}

namespace {

// Starts `command` in the background, its status to come back through a pipe: sets nodus_pid
// (the process that runs it and then writes its status; the command is its only child) and
// nodus_sfd. Why not `command &` and `wait`: the script hands signals on to the job from traps,
// and a trap that runs as the job ends makes bash (5.2) lose the job's status: the wait
// returns 128 + the signal, and a wait after it -1 (measured: 17 of 60 runs under a flood of
// TERMs; the job's status a pipe carries came back in 60 of 60). A `read` a trap interrupts
// goes on reading once the trap has run. `ignore_stops`: the writer ignores TERM, INT, HUP and
// QUIT (a signal to every process of the step must not take the status with it), which the
// command inherits: only for timeout(1), which sets its own handlers for them.
std::string start_watched(const std::string& command, bool ignore_stops) {
  std::string s = "exec {nodus_o}>&1 {nodus_e}>&2\nexec {nodus_sfd}< <(";
  if (ignore_stops) s += "trap '' TERM INT HUP QUIT; ";
  s += command +
       " >&$nodus_o 2>&$nodus_e {nodus_o}>&- {nodus_e}>&- </dev/null; echo \"s$?\")\n"
       "nodus_pid=$!\nexec {nodus_o}>&- {nodus_e}>&-\n";
  return s;
}

// Waits for the status start_watched's command ends with, through the signals the script hands
// on meanwhile, then stops handing them on; the status is in nodus_status. Without a status
// (its writer was killed), the writer's own, from wait. No `=~` here nor in the traps: a trap
// runs between any two commands, and its `[[ =~ ]]` would replace BASH_REMATCH under the
// parse (seen once in CI: the status read as empty, the script exited 0 for a job's 7).
constexpr std::string_view kWaitForJob = R"SH(nodus_status=
while :; do
  read -r -u "$nodus_sfd" nodus_line
  nodus_r=$?
  ((nodus_r > 128)) && continue
  nodus_line=${nodus_line#s}
  ((nodus_r == 0)) && [[ -n $nodus_line && $nodus_line != *[!0-9]* ]] && nodus_status=$nodus_line
  break
done
trap '' TERM INT HUP QUIT USR1 USR2
exec {nodus_sfd}<&-
if [[ -z $nodus_status ]]; then
  wait $nodus_pid 2>/dev/null
  nodus_status=$?
fi
)SH";

// Ends the script as the job ended: with its status, or (a death by a signal, which reaches the
// script as 128 + the signal) killed by that signal, so Slurm records what the job did.
constexpr std::string_view kEndAsTheJobDid =
    R"SH(if ((nodus_status > 128 && nodus_status < 160)); then
  case $((nodus_status - 128)) in
    17 | 18 | 19 | 20 | 21 | 22 | 23 | 28) ;;
    *)
      # A node's part leaves its status first: a death by SIGKILL runs no EXIT trap.
      declare -F nodus_ending >/dev/null && { trap - EXIT; nodus_ending; }
      ulimit -c 0; trap - $((nodus_status - 128)); kill -s $((nodus_status - 128)) $$ ;;
  esac
fi
exit $nodus_status
)SH";

// nodus_signal_child SIG: sends SIG to the command start_watched runs (its writer's only child).
constexpr std::string_view kSignalChild = R"SH(nodus_signal_child() {
  local c=
  read -r c _ 2>/dev/null </proc/$nodus_pid/task/$nodus_pid/children
  [[ -n $c && $c != *[!0-9]* ]] && kill -s "$1" "$c" 2>/dev/null
}
)SH";

// Traps that hand each signal Slurm or srun may send the script on through `handler SIG`.
std::string hand_signals_to(std::string_view handler) {
  return "for nodus_sig in TERM INT HUP QUIT USR1 USR2; do trap \"" + std::string(handler) +
         " $nodus_sig\" $nodus_sig; done\n";
}

int64_t millis(billing::Seconds s) { return static_cast<int64_t>(std::floor(s.count() * 1000)); }

// nodus_tool NAME: sets nodus_path to NAME in a fixed system folder, never from the job's PATH;
// nodus_env: the environment of its own each such tool runs with.
constexpr std::string_view kTools = R"SH(nodus_tool() {
  local d
  for d in /usr/bin /bin /usr/sbin /sbin /usr/local/bin /opt/slurm/bin; do
    [[ -f $d/$1 && -x $d/$1 ]] && { nodus_path=$d/$1; return 0; }
  done
  return 1
}
nodus_env=(/usr/bin/env -i "SLURM_CONF=${SLURM_CONF-}" SLURM_TIME_FORMAT=%s LC_ALL=C)
)SH";

// The enforcer (job_script.h, docs/slurm.md). What it runs, it runs by absolute path and with
// an environment of its own (`env -i`), so neither the job's PATH nor its variables
// (SLURM_TIME_FORMAT, TZ, ...) reach it; bash itself runs with -p (no BASH_ENV, no functions
// from the environment). Its origin is Slurm's start time of the job (whole seconds, what
// billing counts from), asked of scontrol; "now" is this node's clock while it agrees with
// slurmctld's (sdiag) within a second, else slurmctld's; from then on relative timers count.
// The job runs in a PID namespace of its own (unshare, in a user namespace when the job is not
// root, with its own /proc) under `timeout`, its process 1, which sends the plan's TERM:
// process 1 takes only the signals it handles, and SIGSTOP or SIGKILL from inside the namespace
// not at all. A second `timeout` outside, which nothing in the namespace can address, KILLs
// process 1, and with it everything in the namespace, at the plan's KILL (a job that stopped
// process 1 with ptrace included). A run after a requeue is not run: the plan's clock is the
// job's first run.
std::string enforcer(const billing::StopPlan& plan, const std::vector<std::string>& argv) {
  int64_t term_ms = millis(plan.term_after);
  int64_t kill_ms = millis(plan.kill_after);
  int64_t after = kill_ms - term_ms;
  std::string s = "# The node's own stop, the plan nodus follows too: TERM " +
                  std::to_string(term_ms) + " ms and KILL " + std::to_string(kill_ms) +
                  " ms after Slurm started the job, even when nodus is gone.\n";
  s += "nodus_term_ms=" + std::to_string(term_ms) + " nodus_after_ms=" + std::to_string(after) +
       "\n";
  s += kTools;
  s +=
      R"SH(nodus_tool timeout && nodus_timeout=$nodus_path || { echo "nodus: no timeout(1) on this node: the job does not run" >&2; exit 126; }
nodus_ns=(--pid --fork --mount-proc --kill-child)
((EUID == 0)) || nodus_ns=(--user --map-current-user "${nodus_ns[@]}")
if nodus_tool unshare && nodus_unshare=$nodus_path &&
  /usr/bin/env -i "$nodus_unshare" "${nodus_ns[@]}" "$nodus_timeout" 0 /usr/bin/env true 2>/dev/null; then
  nodus_hops=2
else
  echo "nodus: cannot run the enforcer out of the job's reach (unshare ${nodus_ns[*]} is not permitted here): a job that stops it (SIGSTOP) runs on to Slurm's time limit" >&2
  nodus_hops=0
fi
nodus_sec() { printf -v nodus_s '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
# This node's clock in ms, from bash's own EPOCHREALTIME (no process to start), into nodus_ms
# ("" without it). Glob tests, no =~: from a trap, it would replace BASH_REMATCH under the code
# the trap interrupted.
nodus_clock() {
  nodus_ms=${EPOCHREALTIME//[!0-9]/}
  [[ ${#nodus_ms} -ge 16 && $nodus_ms != *[!0-9]* ]] && nodus_ms=$((10#$nodus_ms / 1000)) || nodus_ms=
}
# Hands signal $1 on to the enforcer that is the job's parent (found through /proc, below the
# status writer, outside the job's namespace): it passes TERM, INT, HUP and QUIT on to the job's
# process group, and the plan's KILL stays where it was; USR1 and USR2 go to that group
# directly. Not a TERM from half a second before the plan's TERM on (nodus_term_at, this node's
# clock): nodus sends its own at the plan's TERM too, and the enforcer's reaches the job then,
# so the job has one TERM, not two.
nodus_pass() {
  local p=$nodus_pid c i nodus_ms
  [[ -n $p ]] || return 0
  if [[ $1 == TERM && -n $nodus_term_at ]]; then
    nodus_clock
    [[ -n $nodus_ms ]] && ((nodus_ms >= nodus_term_at - 500)) && return 0
  fi
  for ((i = 0; i <= nodus_hops; i++)); do
    c=
    read -r c _ 2>/dev/null </proc/$p/task/$p/children
    [[ -n $c && $c != *[!0-9]* ]] || return 0
    p=$c
  done
  case $1 in
    USR1 | USR2) kill -s "$1" -- -"$p" 2>/dev/null ;;
    *) kill -s "$1" "$p" 2>/dev/null ;;
  esac
}
nodus_pid= nodus_term_at=
)SH";
  s += hand_signals_to("nodus_pass");
  s += R"SH(nodus_info= nodus_ctld=
if [[ -n ${SLURM_JOB_ID-} ]] && nodus_tool scontrol; then
  nodus_info=$("${nodus_env[@]}" "$nodus_path" -o show job "$SLURM_JOB_ID" 2>/dev/null)
fi
if [[ $nodus_info =~ (^| )Restarts=([1-9][0-9]*) ]]; then
  echo "nodus: Slurm requeued this job (restart ${BASH_REMATCH[2]}): a bounded job runs once, on the clock of its first run; this run ends here" >&2
  nodus_tool scancel && "${nodus_env[@]}" "$nodus_path" "$SLURM_JOB_ID" 2>/dev/null
  exit 125
fi
nodus_start=
[[ $nodus_info =~ (^| )StartTime=([0-9]+)( |$) ]] && nodus_start=${BASH_REMATCH[2]}
[[ -n $nodus_start ]] && nodus_tool sdiag &&
  [[ $("${nodus_env[@]}" "$nodus_path" 2>/dev/null) =~ output\ at\ [^\(]*\(([0-9]+)\) ]] &&
  nodus_ctld=${BASH_REMATCH[1]}
# This node's clock, in ms: bash's own, else date's.
nodus_clock
nodus_now=${nodus_ms:-$(/usr/bin/env -i /bin/date +%s%3N)}
[[ $nodus_now =~ ^[0-9]+$ ]] || nodus_now=
if [[ -n $nodus_ctld ]]; then
  if [[ -z $nodus_now ]] || ((nodus_now / 1000 - nodus_ctld > 1 || nodus_ctld - nodus_now / 1000 > 1)); then
    echo "nodus: this node's clock is ${nodus_now:+$((nodus_now / 1000 - nodus_ctld)) s }off slurmctld's: the deadline is counted from slurmctld's" >&2
    nodus_now=$((nodus_ctld * 1000 + 500))
  fi
elif [[ -n $nodus_start ]]; then
  echo "nodus: slurmctld's time is not available (sdiag): the deadline is counted on this node's clock" >&2
fi
[[ -n $nodus_now ]] || nodus_now=$(( $(printf '%(%s)T' -1) * 1000 ))
[[ -n $nodus_start ]] || nodus_start=$((nodus_now / 1000))
nodus_left=$((nodus_start * 1000 + nodus_term_ms - nodus_now))
((nodus_left > 0)) || nodus_left=1
nodus_clock
[[ -n $nodus_ms ]] && nodus_term_at=$((nodus_ms + nodus_left))
# In a namespace, process 1 sends the plan's TERM and the timeout outside it the plan's KILL.
# Not `timeout -k` inside: a signal handed on to it before its TERM set a second timer for the
# KILL, and its first timer then sent the KILL at the plan's TERM (coreutils 9.1), which took
# the job's grace away whenever a stop's TERM came just before the plan's.
nodus_chain=("$nodus_timeout")
if ((nodus_after_ms < 1)); then
  nodus_chain+=(-s KILL)
elif ((nodus_hops)); then
  nodus_chain+=(-s TERM)
else
  nodus_sec "$nodus_after_ms" && nodus_chain+=(-s TERM -k "$nodus_s")
fi
nodus_sec "$nodus_left" && nodus_chain+=("$nodus_s")
if ((nodus_hops)); then
  # A plan without grace KILLs inside at its deadline; this one 0.5 s later is the net.
  if ((nodus_after_ms < 1)); then nodus_sec $((nodus_left + 500)); else nodus_sec $((nodus_left + nodus_after_ms)); fi
  nodus_chain=("$nodus_timeout" -s KILL "$nodus_s" "$nodus_unshare" "${nodus_ns[@]}" "${nodus_chain[@]}")
fi
)SH";
  // Slurm signals only the script's own process (proctrack/cgroup signals the other processes
  // of the job only with SIGKILL): the script hands them on (nodus_pass).
  std::string command = "\"${nodus_chain[@]}\"";
  for (const auto& arg : argv) command += " " + shell_quote(arg);
  s += start_watched(command, /*ignore_stops=*/true);
  // Process 1 of a namespace cannot die of a signal it sent itself: the job's death by a signal
  // reaches the script as 128 + the signal, and the script dies of that signal, as the job did
  // (a job that exits 128 + N itself is recorded as killed by signal N).
  s += kWaitForJob;
  s += kEndAsTheJobDid;
  return s;
}

// What each node runs: its rendezvous variables, then the job under the node's own enforcer
// (the same plan, counted from the job's start time on every node: one absolute deadline), or
// the job alone.
std::string node_part(const JobRecord& job) {
  std::string s;
  if (nodes_of(job) > 1)
    s += "# This node's rank: Slurm's node index in the job (srun sets it for each node's task).\n"
         "export NODE_RANK=${SLURM_NODEID-} RANK=${SLURM_NODEID-} LOCAL_RANK=0 "
         "LOCAL_WORLD_SIZE=1 PET_NODE_RANK=${SLURM_NODEID-}\n";
  auto plan = billing::plan_stop(job);
  // The first node to end badly leaves its status for the batch script (srun's own hides it):
  // written once (noclobber), into the folder the batch script made; the others, ended by srun
  // after it, find the file there.
  if (nodes_of(job) > 1)
    s +=
        R"SH(nodus_ending() {
  local rc=${nodus_status:-$1}
  ((rc)) && [[ -n ${NODUS_FIRST_FAILURE-} ]] && (set -C; echo "$rc ${SLURM_NODEID-?} ${SLURMD_NODENAME-?}" >"$NODUS_FIRST_FAILURE") 2>/dev/null
}
trap 'nodus_ending $?' EXIT
)SH";
  if (plan) return s + enforcer(*plan, job.argv);
  // One node's job without a plan execs its command: no shell is left. A node of several stays
  // to leave its status, handing the signals srun passes on to the command, which starts with
  // them at their defaults (its writer ignores TERM, INT, HUP and QUIT).
  if (nodes_of(job) == 1) return s + exec_line(job.argv) + "\n";
  s += kSignalChild;
  s += "nodus_pid=\n" + hand_signals_to("nodus_signal_child");
  s += start_watched("(trap - TERM INT HUP QUIT; " + exec_line(job.argv) + ")",
                     /*ignore_stops=*/true);
  s += kWaitForJob;
  s += kEndAsTheJobDid;
  return s;
}

// A job on several nodes: the batch script (on the first node) sets the rendezvous every node
// shares, then srun runs one task per node, node_part() in `bash -p`, each with its own
// enforcer. --kill-on-bad-exit: a node whose task fails ends the others' too, and the job ends
// with that task's status.
std::string multi_node_launch(const JobRecord& job, const std::string& output) {
  const std::string n = std::to_string(nodes_of(job));
  std::string s = "# " + n + " nodes, one task each.\n";
  s += kTools;
  s += "nodus_node=" + shell_quote(node_part(job)) + "\n";
  s +=
      R"SH(nodus_tool srun && nodus_srun=$nodus_path || { echo "nodus: no srun on this node: a multi-node job does not run" >&2; exit 126; }
# The rendezvous: the first node's address (its NodeAddr, else its name) and a port from the
# job's id, below Linux's ephemeral ports (32768 up: a connection's local port there made a
# CI run's torchrun fail to bind), unless the job was given its own (-e MASTER_ADDR=..., ...).
nodus_first= nodus_addr=
if [[ -n ${SLURM_JOB_NODELIST-} ]] && nodus_tool scontrol; then
  read -r nodus_first _ < <("${nodus_env[@]}" "$nodus_path" show hostnames "${SLURM_JOB_NODELIST-}" 2>/dev/null)
  [[ -n $nodus_first && $("${nodus_env[@]}" "$nodus_path" -o show node "$nodus_first" 2>/dev/null) =~ (^| )NodeAddr=([^ ]+) ]] &&
    nodus_addr=${BASH_REMATCH[2]}
fi
export MASTER_ADDR=${MASTER_ADDR:-${nodus_addr:-${nodus_first:-$HOSTNAME}}}
export MASTER_PORT=${MASTER_PORT:-$((29500 + ${SLURM_JOB_ID:-0} % 3000))}
)SH";
  s += "export NNODES=" + n + " WORLD_SIZE=" + n + "\n";
  // torchrun reads each flag it is not given from PET_<FLAG>: `torchrun train.py` on every node
  // joins the same rendezvous (static: the first node's agent), one worker per GPU of the node.
  s += "export PET_NNODES=${PET_NNODES:-$NNODES} PET_MASTER_ADDR=${PET_MASTER_ADDR:-$MASTER_ADDR} "
       "PET_MASTER_PORT=${PET_MASTER_PORT:-$MASTER_PORT}\n";
  if (const int per_node = job.gpu_count / nodes_of(job); per_node > 1)
    s += "export PET_NPROC_PER_NODE=${PET_NPROC_PER_NODE:-" + std::to_string(per_node) + "}\n";
  // srun's own status says little: with --kill-on-bad-exit the first task to end badly makes
  // srun TERM the others, and srun then exits 143 whatever that first status was (measured:
  // a task's exit 124, 137 or 3 all gave 143). So a job stopped by its plan (every node's
  // enforcer stops its task at the same deadline) is told apart here, as job_states.cc does,
  // by when it ended: at or after the plan's TERM it exits 124, what one node's enforcer gives.
  int64_t term_s = -1;
  if (auto plan = billing::plan_stop(job))
    term_s = static_cast<int64_t>(std::floor(plan->term_after.count()));
  s += "nodus_term_s=" + std::to_string(term_s) + "\n";
  // The origin, as the enforcer's: Slurm's start time of the job, else this script's start.
  s += R"SH(nodus_t0=$EPOCHSECONDS
if ((nodus_term_s >= 0)) && [[ -n ${SLURM_JOB_ID-} ]] && nodus_tool scontrol &&
  [[ $("${nodus_env[@]}" "$nodus_path" -o show job "$SLURM_JOB_ID" 2>/dev/null) =~ (^| )StartTime=([0-9]+)( |$) ]]; then
  nodus_t0=${BASH_REMATCH[2]}
fi
)SH";
  // Where the first node to fail leaves its status: a folder of the job's own beside its output
  // (never one that exists: the workdir is open to all); without it, srun's status stands.
  s += "nodus_nodes_dir=" + shell_quote(output + ".nodes") + "\n";
  s += R"SH(unset NODUS_FIRST_FAILURE
mkdir -m 700 -- "$nodus_nodes_dir" 2>/dev/null && export NODUS_FIRST_FAILURE=$nodus_nodes_dir/first-failure
)SH";
  s += start_watched(
      "\"$nodus_srun\" --nodes=" + n + " --ntasks=" + n +
          " --ntasks-per-node=1 --kill-on-bad-exit=1 --label --export=ALL /bin/bash -p -c "
          "\"$nodus_node\" nodus-node",
      /*ignore_stops=*/false);
  // Slurm signals only the batch script's process: srun (the status writer's child) passes them
  // on to every node's task.
  s += kSignalChild;
  s += hand_signals_to("nodus_signal_child");
  s += kWaitForJob;
  s +=
      R"SH(nodus_first=
[[ -n ${NODUS_FIRST_FAILURE-} && -f $NODUS_FIRST_FAILURE && ! -L $NODUS_FIRST_FAILURE ]] &&
  read -r nodus_first_rc nodus_first_rank nodus_first_node <"$NODUS_FIRST_FAILURE" &&
  [[ $nodus_first_rc =~ ^[0-9]+$ ]] && ((nodus_first_rc > 0 && nodus_first_rc < 256)) && nodus_first=$nodus_first_rc
# The deadline's stop, unless the first node to end did so on its own (not with its enforcer's
# 124 or 137), however close to the deadline.
if ((nodus_status != 0 && nodus_term_s >= 0 && EPOCHSECONDS - nodus_t0 >= nodus_term_s - 1)) &&
  [[ -z $nodus_first || $nodus_first == 124 || $nodus_first == 137 ]]; then
  echo "nodus: the job's deadline ended it on every node (srun's status $nodus_status)" >&2
  exit 124
fi
if ((nodus_status != 0)) && [[ -n $nodus_first ]]; then
  echo "nodus: the first node to end badly was $nodus_first_node (rank $nodus_first_rank), with status $nodus_first (srun's status $nodus_status)" >&2
  exit $nodus_first
fi
((nodus_status == 0)) || echo "nodus: a node's task ended with an error, or was stopped, and srun ended the others (srun's status $nodus_status; its lines above name the node)" >&2
exit $nodus_status
)SH";
  return s;
}

}  // namespace

namespace {

// The hook's folder and file, made by the job's user on the node that runs the script, which
// shares the workdir with the other nodes and with nodus (which reads what the hook writes).
std::string hook_part() {
  constexpr std::string_view kEnd = "NODUS_PYHOOK_END";
  std::string_view source = telemetry::pyhook_source();
  if (source.find(kEnd) != std::string_view::npos) return "";  // a heredoc cannot carry it
  std::string s = R"(if [[ -n ${NODUS_HOOK_DIR-} ]]; then
  if mkdir -m 700 -- "$NODUS_HOOK_DIR" 2>/dev/null; then
    cat >"$NODUS_HOOK_DIR/sitecustomize.py" <<')" +
                  std::string(kEnd) + "'\n" + std::string(source);
  if (!source.empty() && source.back() != '\n') s += '\n';
  s += std::string(kEnd) + "\n";
  s += R"(  else
    echo "nodus: cannot make $NODUS_HOOK_DIR (it exists, or the workdir is not writable): the job runs without nodus's Python hook" >&2
    PYTHONPATH=${PYTHONPATH#"$NODUS_HOOK_DIR"}
    PYTHONPATH=${PYTHONPATH#:}
    [[ -n $PYTHONPATH ]] || unset PYTHONPATH
    unset NODUS_HOOK_DIR
  fi
fi
)";
  return s;
}

}  // namespace

std::string job_script(const JobRecord& job, const std::string& workdir, const std::string& output,
                       bool hook) {
  std::string s = "#!/bin/bash -p\n# nodus job " + std::to_string(job.id) + "\n";
  // Slurm creates the output with its daemon's umask (0644); the job's output is its user's.
  // Only a regular file: never a device or a link someone put in its place.
  s += "umask 077\n[[ -f " + shell_quote(output) + " && ! -L " + shell_quote(output) +
       " ]] && chmod 600 -- " + shell_quote(output) + "\n";
  // The metrics file lives in a folder open to all: created here as the job's user, never
  // through a link or into a file someone else made.
  s += R"(if [[ -n ${NODUS_METRICS-} ]]; then
  if [[ -L $NODUS_METRICS || ( -e $NODUS_METRICS && ! -O $NODUS_METRICS ) ]]; then
    echo "nodus: $NODUS_METRICS is not this job's own file: NODUS_METRICS is unset" >&2
    unset NODUS_METRICS
  else
    : >>"$NODUS_METRICS" && chmod 600 -- "$NODUS_METRICS"
  fi
fi
)";
  if (hook) s += hook_part();
  s += "cd -- " + shell_quote(workdir) +
       " || { echo \"nodus: cannot enter the working directory \"" + shell_quote(workdir) +
       " >&2; exit 126; }\n";
  return s + (nodes_of(job) > 1 ? multi_node_launch(job, output) : node_part(job));
}

std::optional<int> time_limit_minutes(const JobRecord& job) {
  auto plan = billing::plan_stop(job);
  if (!plan) return std::nullopt;
  return std::max(1, static_cast<int>(std::ceil(plan->kill_after.count() / 60.0)));
}

std::map<std::string, std::string> job_environment(const LaunchSpec& spec,
                                                   const SlurmSettings& settings) {
  std::map<std::string, std::string> env;
  const char* path = std::getenv("PATH");
  env["PATH"] = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (const auto& [name, value] : spec.env) env[name] = value;
  env.erase("SLURM_JWT");
  if (!settings.jwt.empty())
    for (auto it = env.begin(); it != env.end();)
      it = it->second.find(settings.jwt) != std::string::npos ? env.erase(it) : std::next(it);
  return env;
}

std::string gres_request(std::string_view gpu_type, int gpu_count, const SlurmSettings& settings) {
  if (gpu_count <= 0) return "";
  if (gpu_type.empty()) return "gpu:" + std::to_string(gpu_count);
  return "gpu:" + settings.gres_type(gpu_type) + ":" + std::to_string(gpu_count);
}

Result<SubmitRequest> build_submit(const JobRecord& job, const LaunchSpec& spec,
                                   const SlurmSettings& settings) {
  if (job.argv.empty()) return Error::permanent("nothing to run: the job's command is empty");
  SubmitRequest r;
  r.name = slurm_job_name(job, settings);
  r.time_limit_minutes = time_limit_minutes(job);
  r.working_dir = job.workdir;
  if (r.working_dir.empty()) {
    // As a local job inherits nodus's directory, so does a Slurm job (same host, or a shared
    // file system as Slurm sites have); the Slurm workdir only when there is none.
    char cwd[4096];
    r.working_dir = getcwd(cwd, sizeof cwd) != nullptr ? cwd : settings.workdir;
  }
  r.output_path = output_path(settings, job);
  r.script = job_script(job, r.working_dir, r.output_path, spec.env.count("NODUS_HOOK_DIR") > 0);
  r.env = job_environment(spec, settings);
  if (r.env.count("NODUS_METRICS")) r.env["NODUS_METRICS"] = metrics_path(settings, job);
  // Slurm's gres is per node; a multi-node job's gpu_count is every node's (core/job.h).
  r.nodes = nodes_of(job);
  r.gres = gres_request(job.gpu_type, job.gpu_count / r.nodes, settings);
  r.container = job.image;
  r.partition = settings.partition;
  return r;
}

}  // namespace nodus::backend::slurm
