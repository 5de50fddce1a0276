#!/bin/bash
# Containment on the device machine (pure cgroup v2, nodus in a delegated subtree): does every
# local job get a cgroup of its own there, and does nothing of a hostile job survive?
# Prints one PASS/FAIL line per check and a summary; with $OUT set, writes everything there too.
#   NODUS=path/to/nodus bash bench/h200/cgroup_check.sh     (default .device/nodus, build/nodus)
set -u
NODUS=${NODUS:-}
if [[ -z $NODUS ]]; then
  for c in "$PWD/.device/nodus" "$PWD/build/nodus"; do [[ -x $c ]] && NODUS=$c && break; done
fi
[[ -x ${NODUS:-} ]] || { echo "FAIL no nodus binary (set NODUS=)"; exit 2; }
OUT=${OUT:-}
LOG=$(mktemp)
WORK=$(mktemp -d --tmpdir nodus-cgcheck-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
FAILS=0

say() { echo "$*" | tee -a "$LOG"; }
pass() { say "PASS $*"; }
fail() { say "FAIL $*"; FAILS=$((FAILS + 1)); }
fresh() { export NODUS_HOME=$WORK/home-$1; mkdir -p "$NODUS_HOME"; export NODUS_LOCAL_GPUS=H100:2; }
show() { "$NODUS" show "$1" --format json; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin).get('$1'))"; }
# Processes whose command line holds $1, this script's own excluded.
survivors() { pgrep -f -- "$1" | grep -vx "$$" || true; }
# Kills what a failed check left (pids on one line).
reap() { for p in $1; do kill -9 "$p" 2>/dev/null; done; }
wait_gone() {  # marker, seconds: prints survivors left after that long
  local end=$((SECONDS + $2))
  while ((SECONDS < end)); do [[ -z $(survivors "$1") ]] && return 0; sleep 0.1; done
  survivors "$1"
}
cgroup_of() { show "$1" | field note | sed -n 's/.*contained by cgroup \([^;]*\).*/\1/p'; }

say "host: $(uname -r); /proc/self/cgroup: $(tr '\n' ' ' < /proc/self/cgroup)"
say "mounts: $(grep cgroup /proc/self/mountinfo | awk '{print $5, $(NF-2)}' | tr '\n' ';')"
say "nodus: $NODUS ($(id -un))"

# 1. A trivial job gets a cgroup under nodus's own cgroup, removed at its end.
fresh 1
"$NODUS" run -- true >/dev/null 2>&1
CG=$(cgroup_of 1)
if [[ -n $CG ]]; then
  pass "a local job gets a cgroup: $CG"
  if [[ ! -d $CG ]]; then pass "its cgroup is removed at the end"; else fail "cgroup $CG left behind"; fi
else
  fail "no cgroup: $(show 1 | field note)"
fi

# 2. kill -9 of the supervisor: processes that left by setsid + env -i and a double fork + setsid
#    + execve with an empty environment must die with it.
fresh 2
M=88812$$
cat > "$WORK/escape.py" <<'PY'
import os, sys
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execve("/bin/sleep", ["sleep", sys.argv[1]], {})
    os._exit(0)
os.wait()
PY
"$NODUS" run --gpu H100 --max-cost 1 -- bash -c \
  "setsid env -i sleep ${M}1 & python3 $WORK/escape.py ${M}2; sleep ${M}3" >/dev/null 2>&1 &
SUP=$!
for _ in $(seq 100); do [[ $(survivors "$M" | wc -l) -ge 3 ]] && break; sleep 0.1; done
kill -9 $SUP
LEFT=$(wait_gone "$M" 5)
if [[ -z $LEFT ]]; then pass "kill -9 of the supervisor: no escaped process survives"
else fail "kill -9 of the supervisor: survivors $LEFT"; reap "$LEFT"; fi

# 3. timeout -s KILL on nodus's process group: the sentinel survives it and kills the job.
fresh 3
M=88813$$
setsid timeout -s KILL 2 "$NODUS" run --gpu H100 --max-cost 1 -- bash -c "sleep $M; echo done" \
  >/dev/null 2>&1
LEFT=$(wait_gone "$M" 5)
if [[ -z $LEFT ]]; then pass "timeout -s KILL 2 nodus run: nothing of the job survives"
else fail "timeout -s KILL: survivors $LEFT"; reap "$LEFT"; fi
"$NODUS" ps -a >/dev/null 2>&1
if "$NODUS" run --gpu H100:2 --no-wait -- true >/dev/null 2>&1; then pass "its GPU claim is free again"
else fail "GPU claim still held"; fi

# 4. The hopper (fork, parent exits, setsid, execve with an empty environment every 3 hops,
#    SIGTERM ignored) under --timeout 2s, five times.
cat > "$WORK/hopper.py" <<'PY'
import os, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
marker, hops = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0
while True:
    if os.fork() != 0:
        os._exit(0)
    os.setsid()
    hops += 1
    if hops % 3 == 0:
        os.execve(sys.executable, [sys.executable, sys.argv[0], marker, str(hops)], {})
PY
OK=0
for i in 1 2 3 4 5; do
  fresh 4$i
  M=88814$$$i
  "$NODUS" run --gpu H100 --timeout 2s --grace 500ms -- bash -c \
    "for k in 1 2 3; do python3 $WORK/hopper.py $M & done; sleep 300" >/dev/null 2>&1
  LEFT=$(wait_gone "$M" 2)
  if [[ -z $LEFT ]]; then OK=$((OK + 1)); else
    for _ in $(seq 50); do reap "$LEFT"; LEFT=$(survivors "$M"); [[ -z $LEFT ]] && break; done
  fi
done
if [[ $OK == 5 ]]; then pass "hopper stopped by --timeout 2s in 5 of 5"
else fail "hopper survived in $((5 - OK)) of 5"; fi

# 5. Kill latency: 100 TERM-ignoring children, --timeout 1s --grace 200ms; the job's wall past
#    timeout + grace (median of 5).
LAT=()
for i in 1 2 3 4 5; do
  fresh 5$i
  "$NODUS" run --timeout 1s --grace 200ms -- bash -c \
    "for i in \$(seq 100); do (trap '' TERM; exec sleep 88815$$) & done; trap '' TERM; wait" \
    >/dev/null 2>&1
  LAT+=("$(show 1 | python3 -c 'import json,sys; j=json.load(sys.stdin); print(round((j["wall_s"]-1.2)*1000,1))')")
done
MED=$(printf '%s\n' "${LAT[@]}" | sort -g | sed -n 3p)
say "kill latency past the deadline (ms, 5 runs): ${LAT[*]}; median $MED"
if python3 -c "import sys; sys.exit(0 if float('$MED') <= 20 else 1)"; then
  pass "median kill latency ${MED} ms <= 20 ms"
else fail "median kill latency ${MED} ms > 20 ms (the issue's goal)"; fi
LEFT=$(wait_gone "88815$$" 2)
if [[ -z $LEFT ]]; then pass "no child of the 100 survives"; else fail "survivors $LEFT"; reap "$LEFT"; fi

# 6. The fallback is still there and says so.
fresh 6
NODUS_CGROUP=off "$NODUS" run -- true >/dev/null 2>&1
if show 1 | field note | grep -q "no cgroup: cgroups disabled"; then
  pass "NODUS_CGROUP=off falls back and says so"
else fail "fallback note: $(show 1 | field note)"; fi

say "summary: $FAILS failed"
if [[ -n $OUT ]]; then mkdir -p "$OUT" && cp "$LOG" "$OUT/cgroup_check.txt"; fi
rm -f "$LOG"
exit $((FAILS > 0))
