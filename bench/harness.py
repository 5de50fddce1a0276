#!/usr/bin/env python3
"""Measurements for bench/run.sh: each subcommand runs one benchmark and writes its numbers as
JSON into the results folder; `report` turns them into bench/RESULTS.md.

Only the standard library; every peer runs in the same invocation as nodus, interleaved rep by
rep so that the load of the (shared) machine falls on both alike.
"""

import argparse
import datetime
import glob
import json
import os
import platform
import random
import resource
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

POLL_S = 0.001  # /proc is polled at 1 ms


# ---------------------------------------------------------------------------------------------
# helpers

def summary(values):
    """median, min, max and count of a list of numbers (None when empty)."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values), "values": values}


def save(results, name, data):
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, name + ".json"), "w") as f:
        json.dump(data, f, indent=1)


def load(results, name):
    path = os.path.join(results, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def nodus_env(home, **extra):
    env = dict(os.environ)
    env["NODUS_HOME"] = home
    env.pop("NODUS_LOCAL_GPUS", None)
    env.pop("NODUS_BACKEND", None)
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def gone(pid):
    """True when pid no longer runs (no /proc entry, or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat[stat.rfind(")") + 2] in "ZX"


def proc_cpu_seconds(pid):
    """utime + stime of a live process (all its threads, live and exited), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def proc_sched_seconds(pid):
    """On-CPU time of the live threads of pid from schedstat (nanosecond resolution)."""
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass
    return total / 1e9


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS", "Threads"):
                out[key] = int(value.split()[0])
    return out


def sleep_until(t):
    while True:
        left = t - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.5))


# ---------------------------------------------------------------------------------------------
# 1. launch overhead

def cmd_launch(a):
    home = tempfile.mkdtemp(prefix="launch-", dir=a.work)
    env = nodus_env(home, NODUS_BIN=a.nodus)
    n = a.jobs
    loops = {
        "direct": f"for i in $(seq {n}); do /bin/true; done",
        "timeout": f"for i in $(seq {n}); do timeout 10 /bin/true; done",
        "nodus": f'for i in $(seq {n}); do "$NODUS_BIN" run -- /bin/true 2>/dev/null || exit 1; done',
        "parallel": f"parallel --will-cite -j1 /bin/true ::: $(seq {n})",
    }
    if a.nodus_base:
        # The same loop with the binary before this change, rep by rep beside the new one, on a
        # store of its own: a newer nodus migrates its store, which an older one then refuses.
        loops["nodus_base"] = (f'for i in $(seq {n}); do NODUS_HOME="$NODUS_BASE_HOME" "$NODUS_BASE" '
                               f'run -- /bin/true 2>/dev/null || exit 1; done')
        env["NODUS_BASE"] = a.nodus_base
        env["NODUS_BASE_HOME"] = tempfile.mkdtemp(prefix="launch-base-", dir=a.work)
    if a.with_hooks:
        loops["nodus_help"] = f'for i in $(seq {n}); do "$NODUS_BIN" --version >/dev/null 2>&1; done'
    per_job = {k: [] for k in loops}
    cpu_per_job = {k: [] for k in loops}
    for rep in range(a.reps):
        for name, loop in loops.items():
            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            r = subprocess.run(["bash", "-c", loop], env=env, stdin=subprocess.DEVNULL)
            dt = time.perf_counter() - t0
            ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if r.returncode != 0:
                sys.exit(f"launch: {name} loop failed with {r.returncode}")
            per_job[name].append(dt / n * 1000)
            # CPU of the loop and everything it ran (user + system): unlike wall time, it does not
            # grow with what other processes take from the machine.
            cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
            cpu_per_job[name].append(cpu / n * 1000)
    save(a.results, "launch", {"jobs": n, "reps": a.reps, "load": os.getloadavg(), "base_label": a.base_label,
                               "per_job_ms": {k: summary(v) for k, v in per_job.items()},
                               "cpu_per_job_ms": {k: summary(v) for k, v in cpu_per_job.items()}})


# ---------------------------------------------------------------------------------------------
# 2. stop precision

TREE = """#!/bin/bash
# A job whose tree is three processes: this shell and two children. It writes its pid and
# start time (no fork: $EPOCHREALTIME), then the children's pids, then "ready".
{trap}
echo "$$ $EPOCHREALTIME" > "$1"
sleep {sleep} & echo $! >> "$1"
sleep {sleep} & echo $! >> "$1"
echo ready >> "$1"
wait
"""


def write_trees(folder, sleep=60):
    """The tree's children sleep `sleep` s: far longer than any limit they are stopped at."""
    obey = os.path.join(folder, "tree-obeys-term.sh")
    ignore = os.path.join(folder, "tree-ignores-term.sh")
    with open(obey, "w") as f:
        f.write(TREE.format(trap="", sleep=sleep))
    with open(ignore, "w") as f:
        f.write(TREE.format(trap="trap '' TERM  # only SIGKILL stops it (inherited by the sleeps)", sleep=sleep))
    for p in (obey, ignore):
        os.chmod(p, 0o755)
    return obey, ignore


def read_pidfile(path, deadline):
    """Waits until the tree wrote "ready"; returns (start unix time, pids) or None."""
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                lines = f.read().split("\n")
        except FileNotFoundError:
            lines = []
        if "ready" in lines:
            first = lines[0].split()
            return float(first[1]), [int(first[0])] + [int(x) for x in lines[1:3]]
        time.sleep(POLL_S)
    return None


def stop_sample(cmd, env, pidfile, limit_s, give_up_s=20.0, cwd=None):
    """Runs cmd (which starts a tree that writes pidfile); returns the overshoot of the last
    process's end past start + limit, in ms, and the same measured from the runner's launch."""
    if os.path.exists(pidfile):
        os.unlink(pidfile)
    t_launch = time.time()
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got = read_pidfile(pidfile, time.monotonic() + give_up_s)
    if got is None:
        p.kill()
        p.wait()
        return {"error": "the tree never started"}
    t_start, pids = got
    end = time.monotonic() + limit_s + give_up_s
    t_gone = None
    while time.monotonic() < end:
        if all(gone(pid) for pid in pids):
            t_gone = time.time()
            break
        time.sleep(POLL_S)
    survivors = [pid for pid in pids if not gone(pid)]
    for pid in survivors:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        rc = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    if t_gone is None:
        return {"error": f"{len(survivors)} processes outlived the limit by {give_up_s:.0f} s", "rc": rc}
    return {"overshoot_ms": (t_gone - (t_start + limit_s)) * 1000,
            "from_launch_ms": (t_gone - (t_launch + limit_s)) * 1000,
            "startup_ms": (t_start - t_launch) * 1000, "rc": rc}


def cmd_stop(a):
    home = tempfile.mkdtemp(prefix="stop-", dir=a.work)
    obey, ignore = write_trees(a.work)
    pidfile = os.path.join(a.work, "stop.pids")
    env = nodus_env(home)
    cost_env = nodus_env(home, NODUS_LOCAL_GPUS="TEST:4")
    lim = a.limit
    lim_text = f"{lim:g}"
    # The cost cap: four TEST GPUs at $900/GPU-hour cost $1/s, so a $lim cap is reached lim s after start.
    runners = {
        "timeout": {
            "nodus run --timeout": ([a.nodus, "run", "--timeout", f"{int(lim * 1000)}ms", "--", obey, pidfile], env),
            "timeout(1)": (["timeout", lim_text, obey, pidfile], env),
            "parallel --timeout": (["parallel", "--will-cite", "--timeout", lim_text, obey, ":::", pidfile], env),
        },
        "cost": {
            "nodus run --max-cost": ([a.nodus, "run", "--prices", a.prices, "--gpu", "TEST:4", "--max-cost",
                                      lim_text, "--grace", "500ms", "--", ignore, pidfile], cost_env),
            "timeout -s KILL": (["timeout", "-s", "KILL", lim_text, ignore, pidfile], env),
            "parallel --timeout --termseq KILL,25": (["parallel", "--will-cite", "--timeout", lim_text, "--termseq",
                                                      "KILL,25", ignore, ":::", pidfile], env),
        },
    }
    samples = {group: {name: [] for name in rs} for group, rs in runners.items()}
    for rep in range(a.samples):
        for group, rs in runners.items():
            for name, (cmd, e) in rs.items():
                samples[group][name].append(stop_sample(cmd, e, pidfile, lim))
    out = {"limit_s": lim, "samples": a.samples, "groups": {}}
    for group, by_name in samples.items():
        out["groups"][group] = {}
        for name, ss in by_name.items():
            out["groups"][group][name] = {
                "overshoot_ms": summary([s.get("overshoot_ms") for s in ss]),
                "from_launch_ms": summary([s.get("from_launch_ms") for s in ss]),
                "startup_ms": summary([s.get("startup_ms") for s in ss]),
                "errors": [s["error"] for s in ss if "error" in s],
                "exit_codes": sorted({s.get("rc") for s in ss if s.get("rc") is not None}),
            }
    save(a.results, "stop", out)


# 2b. kill latency by mechanism: deadline -> the job's cgroup is empty (cgroup.kill) against the
# /proc-scan fallback (NODUS_CGROUP=off), on a tree of 100 TERM-ignoring children.

WIDE_TREE = """#!/bin/bash
trap '' TERM
echo "$$ $EPOCHREALTIME" > "$1"
for i in $(seq {n}); do sleep 600 & done
echo $! >> "$1"; echo $! >> "$1"
echo ready >> "$1"
wait
"""


def cgroup_path_of(pid):
    """The cgroup v2 folder of pid (None when it has none we can find)."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            line = next((l for l in f if l.startswith("0::")), None)
        with open("/proc/self/mountinfo") as f:
            mount = next((l.split()[4] for l in f if " - cgroup2 " in l), None)
    except (OSError, StopIteration):
        return None
    if not line or not mount:
        return None
    return mount + line[3:].strip()


def cgroup_empty(path):
    try:
        with open(os.path.join(path, "cgroup.events")) as f:
            return "populated 0" in f.read()
    except FileNotFoundError:
        return True


def kill_sample(cmd, env, pidfile, deadline_s, started_at, give_up_s=20.0):
    """deadline -> every pid gone, and deadline -> the job's cgroup empty (ms). The deadline is
    the job's recorded start (started_at() after the run) + deadline_s."""
    if os.path.exists(pidfile):
        os.unlink(pidfile)
    p = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    got = read_pidfile(pidfile, time.monotonic() + give_up_s)
    if got is None:
        p.kill()
        p.wait()
        return {"error": "the tree never started"}
    t_start, pids = got
    cg = cgroup_path_of(pids[0])
    in_job_cgroup = cg is not None and "/nodus/job-" in cg
    t_pids = t_cg = None
    end = time.monotonic() + deadline_s + give_up_s
    while time.monotonic() < end and (t_pids is None or (in_job_cgroup and t_cg is None)):
        now = time.time()
        if t_pids is None and all(gone(pid) for pid in pids):
            t_pids = now
        if in_job_cgroup and t_cg is None and cgroup_empty(cg):
            t_cg = now
        time.sleep(POLL_S)
    p.wait()
    deadline = started_at() + deadline_s
    if t_pids is None:
        return {"error": "processes outlived the deadline by %.0f s" % give_up_s}
    return {"pids_ms": (t_pids - deadline) * 1000,
            "cgroup_ms": (t_cg - deadline) * 1000 if t_cg is not None else None,
            "cgroup": in_job_cgroup}


def cmd_kill(a):
    home = tempfile.mkdtemp(prefix="kill-", dir=a.work)
    tree = os.path.join(a.work, "tree-wide.sh")
    with open(tree, "w") as f:
        f.write(WIDE_TREE.format(n=a.children))
    os.chmod(tree, 0o755)
    pidfile = os.path.join(a.work, "kill.pids")
    timeout_s, grace_s = a.limit, 0.2
    cmd = [a.nodus, "run", "--timeout", f"{int(timeout_s * 1000)}ms", "--grace", "200ms", "--",
           tree, pidfile]
    mechanisms = {"cgroup": nodus_env(home), "fallback (NODUS_CGROUP=off)": nodus_env(home, NODUS_CGROUP="off")}
    samples = {name: [] for name in mechanisms}
    job = 0
    for _ in range(a.samples):
        for name, env in mechanisms.items():
            job += 1

            def started_at(job=job, env=env):
                out = subprocess.run([a.nodus, "show", str(job), "--format", "json"], env=env,
                                     capture_output=True, text=True).stdout
                return json.loads(out)["started_at"]
            samples[name].append(kill_sample(cmd, env, pidfile, timeout_s + grace_s, started_at))
    out = {"limit_s": timeout_s, "grace_s": grace_s, "children": a.children, "samples": a.samples,
           "mechanisms": {}}
    for name, ss in samples.items():
        out["mechanisms"][name] = {
            "deadline_to_pids_gone_ms": summary([s.get("pids_ms") for s in ss]),
            "deadline_to_cgroup_empty_ms": summary([s.get("cgroup_ms") for s in ss]),
            "had_cgroup": sum(1 for s in ss if s.get("cgroup")),
            "errors": [s["error"] for s in ss if "error" in s],
        }
    save(a.results, "kill", out)
    for name, m in out["mechanisms"].items():
        pg, cg = m["deadline_to_pids_gone_ms"], m["deadline_to_cgroup_empty_ms"]
        print(f"{name}: deadline -> pids gone median {pg['median']:.1f} ms" if pg else f"{name}: no data",
              f"; -> cgroup empty median {cg['median']:.1f} ms" if cg else "", m["errors"] or "")


# ---------------------------------------------------------------------------------------------
# 3 + 6. supervisor CPU and memory

def job_row(home, job_name):
    db = sqlite3.connect(f"file:{home}/nodus.db?mode=ro", uri=True)
    try:
        row = db.execute("SELECT id FROM jobs WHERE name = ? ORDER BY id DESC LIMIT 1", (job_name,)).fetchone()
        if not row:
            return None
        job_id = row[0]
        hosts = db.execute("SELECT count(*) FROM host_samples WHERE job_id = ?", (job_id,)).fetchone()[0]
        gpus = db.execute("SELECT count(*) FROM gpu_samples WHERE job_id = ?", (job_id,)).fetchone()[0]
        stats = db.execute("SELECT json FROM job_stats WHERE job_id = ?", (job_id,)).fetchone()
        stats = json.loads(stats[0]) if stats else {}
        return {"job_id": job_id, "host_samples": hosts, "gpu_samples": gpus,
                "gpu_source": stats.get("gpu_source"), "gpu_note": stats.get("gpu_note")}
    finally:
        db.close()


def cmd_supervisor(a):
    """Two attached jobs at once: `sleep CPU_S` with the default 1 s sampling (supervisor CPU),
    and `sleep MEM_S` sampled every 50 ms (peak RSS over time, CPU per sample)."""
    home = tempfile.mkdtemp(prefix="super-", dir=a.work)
    # Each job asks for a (declared) GPU, so the GPU sampler starts; with no NVML and no
    # nvidia-smi here it falls back to none, which the stored stats say.
    env = nodus_env(home, NODUS_LOCAL_GPUS="H100:18")
    gpu = ["--gpu", "H100"]
    # A third job (and a fourth, shorter) holds 8 GPUs whose telemetry comes from a stand-in nvidia-smi (on its PATH
    # only), so the GPU series, 8 samples a tick, is stored and read back as on a GPU server.
    smi_dir = os.path.join(a.work, "fake-smi")
    os.makedirs(smi_dir, exist_ok=True)
    if not os.path.exists(os.path.join(smi_dir, "nvidia-smi")):
        os.symlink(a.fake_smi, os.path.join(smi_dir, "nvidia-smi"))
    # Two 8-GPU jobs (below): the stand-in reports all 18 declared GPUs, each job keeps its own.
    env_gpu = dict(env, PATH=smi_dir + ":" + env.get("PATH", "/usr/bin:/bin"), FAKE_SMI_GPUS="18")
    t0 = time.monotonic()
    gpu_job = spawn_timed([a.nodus, "run", "--name", "gpu8", "--gpu", "H100:8", "--sample-interval", "50ms",
                           "--", "sleep", str(a.mem_s)], env_gpu, a.work, "gpu8")
    # The same 8-GPU job a third as long: the end-of-job summary's cost per sample is the
    # difference of the two peaks over the difference of their samples (one job's peak alone
    # cannot tell a fixed cost, such as SQLite's page cache, from one that grows).
    short_s = max(10.0, round(a.mem_s / 3))
    gpu_short = spawn_timed([a.nodus, "run", "--name", "gpu8short", "--gpu", "H100:8", "--sample-interval", "50ms",
                             "--", "sleep", f"{short_s:g}"], env_gpu, a.work, "gpu8short")
    cpu_job = spawn_timed([a.nodus, "run", "--name", "cpu"] + gpu + ["--", "sleep", str(a.cpu_s)], env, a.work, "cpu")
    mem_job = spawn_timed([a.nodus, "run", "--name", "mem"] + gpu + ["--sample-interval", "50ms", "--", "sleep",
                                                                   str(a.mem_s)], env, a.work, "mem")
    # Read points: the memory jobs at these fractions of their run, the CPU job 1.5 s before its end.
    mem_points = sorted({max(3.0, a.mem_s * f) for f in (0.05, 1 / 6, 1 / 3, 0.5, 2 / 3, 5 / 6)} |
                        {a.mem_s - 1.5})
    cpu_point = a.cpu_s - 1.5
    events = sorted([(t, "mem") for t in mem_points] + [(cpu_point, "cpu")])
    mem_series, gpu_series, cpu_read = [], [], None

    def read(pid, elapsed):
        return {"elapsed_s": elapsed, "samples_so_far": elapsed / 0.05, "cpu_s": proc_cpu_seconds(pid),
                "sched_s": proc_sched_seconds(pid), **proc_status(pid)}

    for t, what in events:
        sleep_until(t0 + t)
        elapsed = time.monotonic() - t0
        if what == "cpu":
            cpu_read = read(cpu_job["pid"], elapsed)
        else:
            mem_series.append(read(mem_job["pid"], elapsed))
            gpu_series.append(read(gpu_job["pid"], elapsed))
    # Whole-life figures from GNU time (wait4 of nodus itself): start-up and the end-of-job
    # summary (which reads the job's stored series back) included.
    cpu_exit, mem_exit, gpu_exit = reap_timed(cpu_job), reap_timed(mem_job), reap_timed(gpu_job)
    short_exit = reap_timed(gpu_short)
    crowd = crowd_phase(a, env, gpu) if a.crowd else None
    save(a.results, "supervisor", {
        "crowd": crowd,
        "cpu_job": {"sleep_s": a.cpu_s, "interval": "1s", "read": cpu_read, "exit": cpu_exit,
                    "store": job_row(home, "cpu")},
        "mem_job": {"sleep_s": a.mem_s, "interval": "50ms", "series": mem_series, "exit": mem_exit,
                    "store": job_row(home, "mem")},
        "gpu_short_job": {"sleep_s": short_s, "interval": "50ms", "gpus": 8, "exit": short_exit,
                          "store": job_row(home, "gpu8short")},
        "gpu_job": {"sleep_s": a.mem_s, "interval": "50ms", "gpus": 8, "series": gpu_series, "exit": gpu_exit,
                    "store": job_row(home, "gpu8")},
    })


def spawn_timed(cmd, env, work, name):
    """Starts cmd under GNU time, which reports the peak RSS and CPU of cmd alone: a child of
    this Python process would inherit Python's own peak RSS in its ru_maxrss across exec."""
    out = os.path.join(work, f"rusage-{name}.txt")
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M %U %S", "-o", out] + cmd, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children = f"/proc/{p.pid}/task/{p.pid}/children"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(children) as f:
            pids = f.read().split()
        if pids:
            return {"popen": p, "pid": int(pids[0]), "out": out}
        time.sleep(POLL_S)
    p.kill()
    sys.exit(f"supervisor: {cmd[0]} did not start under /usr/bin/time")


def reap_timed(job):
    """Exit code, peak RSS (KiB) and CPU seconds of a command started by spawn_timed."""
    rc = job["popen"].wait()
    with open(job["out"]) as f:
        maxrss, user, system = f.read().split("\n")[-2].split()  # a non-zero exit adds a line before
    return {"rc": rc, "maxrss_kib": int(maxrss), "cpu_s": float(user) + float(system)}


def count_processes():
    return sum(1 for name in os.listdir("/proc") if name.isdigit())


def tick_cost(a, env, gpu, seconds, name):
    """CPU ms per sampling tick of a supervisor sampling every 50 ms for `seconds`."""
    p = subprocess.Popen([a.nodus, "run", "--name", name] + gpu + ["--sample-interval", "50ms", "--", "sleep",
                                                                   str(seconds)], env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # past start-up
    c0, s0 = proc_sched_seconds(p.pid), time.monotonic()
    time.sleep(seconds - 2.5)
    c1, s1 = proc_sched_seconds(p.pid), time.monotonic()
    p.wait()
    return {"cpu_ms_per_tick": 1000 * (c1 - c0) / ((s1 - s0) / 0.05), "processes": count_processes()}


def crowd_phase(a, env, gpu):
    """The sampler finds the job's tree by reading every /proc/PID/stat: its cost per tick grows
    with the number of processes on the host. Measured with the host as it is, then with
    `crowd` more idle processes."""
    base = tick_cost(a, env, gpu, a.crowd_s, "crowd-base")
    sleepers = [subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL) for _ in range(a.crowd)]
    try:
        crowded = tick_cost(a, env, gpu, a.crowd_s, "crowd")
    finally:
        for p in sleepers:
            p.kill()
        for p in sleepers:
            p.wait()
    return {"added": a.crowd, "seconds": a.crowd_s, "base": base, "crowded": crowded}


def cmd_sampler(a):
    """bench/sampler_cost.cc: the host sampler's CPU per tick before and after issue 17, in one run."""
    r = subprocess.run([a.bin, str(a.crowd), str(a.ticks), str(a.reps)], check=True, capture_output=True, text=True)
    data = json.loads(r.stdout)
    data["load"] = os.getloadavg()
    save(a.results, "sampler", data)


# ---------------------------------------------------------------------------------------------
# 4. packing

def draw_cells(seed, count, two_gpu_every):
    rng = random.Random(seed)
    cells = []
    for i in range(count):
        d = round(rng.uniform(0.5, 3.0), 2)
        cells.append({"index": i, "seconds": d, "gpus": 2 if (i % two_gpu_every == two_gpu_every - 1) else 1})
    return cells


def draw_related_cells(seed, models, batches):
    """A grid whose durations follow its parameters, as a sweep of model x batch size does: each
    cell takes its model's factor times its batch size's factor, +-8%, both factors ascending
    (people write the values smallest first, so grid order starts the longest cells last)."""
    rng = random.Random(seed + 1)
    m = sorted(rng.uniform(0.4, 1.0) for _ in range(models))
    b = sorted(rng.uniform(0.8, 3.5) for _ in range(batches))
    return [{"index": i * batches + j, "m": i, "b": j, "gpus": 1,
             "seconds": round(m[i] * b[j] * rng.uniform(0.92, 1.08), 2)}
            for i in range(models) for j in range(batches)]


def list_schedule(cells, gpus):
    """Makespan of the greedy in-order list schedule without any overhead: whenever GPUs free
    up, start the first waiting cells that fit (a cell that does not fit does not hold back
    later ones), which is the order nodus and parallel both start cells in."""
    t, waiting, running = 0.0, list(cells), []
    while waiting or running:
        free = gpus - sum(c["gpus"] for c, _ in running)
        for c in list(waiting):
            if c["gpus"] <= free:
                running.append((c, t + c["seconds"]))
                free -= c["gpus"]
                waiting.remove(c)
        if not running:
            break
        t = min(end for _, end in running)
        running = [(c, end) for c, end in running if end > t]
    return t


def lower_bound(cells, gpus):
    return max(sum(c["seconds"] * c["gpus"] for c in cells) / gpus, max(c["seconds"] for c in cells))


def write_cell_script(folder, name, cells):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write("#!/bin/bash\n# Sleeps for the duration of cell $1 (a lookup, no fork).\n")
        f.write("D=(" + " ".join(f"{c['seconds']:.2f}" for c in cells) + ")\n")
        f.write('exec sleep "${D[$1]}"\n')
    os.chmod(path, 0o755)
    return path


def timed(cmds, env):
    """Starts every command at once; returns the wall time until the last exits, and the codes."""
    t0 = time.perf_counter()
    ps = [subprocess.Popen(c, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE) for c in cmds]
    errs = [p.communicate()[1].decode(errors="replace") for p in ps]
    return time.perf_counter() - t0, [p.returncode for p in ps], errs


def cmd_pack(a):
    gpus = 8
    cells = draw_cells(a.seed, 32, 4)
    one = [c for c in cells if c["gpus"] == 1]
    two = [c for c in cells if c["gpus"] == 2]
    s_all = write_cell_script(a.work, "cells-all.sh", cells)
    s_one = write_cell_script(a.work, "cells-1gpu.sh", one)
    s_two = write_cell_script(a.work, "cells-2gpu.sh", two)
    # The same 32 durations as a grid of GPU counts (one sweep, --gpu H100:{g}): the first 16
    # on 1 GPU, the last 16 on 2. Its script takes the cell's g and i.
    half = len(cells) // 2
    grid = [dict(c, gpus=1 if c["index"] < half else 2) for c in cells]
    s_grid = os.path.join(a.work, "cells-grid.sh")
    with open(s_grid, "w") as f:
        f.write("#!/bin/bash\n# Sleeps for the duration of cell ($1 GPUs, number $2): a lookup, no fork.\n")
        f.write("D=(" + " ".join(f"{c['seconds']:.2f}" for c in grid) + ")\n")
        f.write(f'exec sleep "${{D[($1 - 1) * {half} + $2]}}"\n')
    os.chmod(s_grid, 0o755)
    # The related grid: 4 models x 8 batch sizes, `cells-related.sh {m} {b}`.
    related = draw_related_cells(a.seed, 4, 8)
    s_rel = os.path.join(a.work, "cells-related.sh")
    with open(s_rel, "w") as f:
        f.write("#!/bin/bash\n# Sleeps for the duration of cell (model $1, batch $2): a lookup, no fork.\n")
        f.write("D=(" + " ".join(f"{c['seconds']:.2f}" for c in related) + ")\n")
        f.write('exec sleep "${D[$1 * 8 + $2]}"\n')
    os.chmod(s_rel, 0o755)
    par = ["parallel", "--will-cite"]
    scenarios = {
        "32 cells x 1 GPU": {
            "cells": [dict(c, gpus=1) for c in cells],
            "nodus": [[[a.nodus, "sweep", "--gpu", "H100", "--param", f"i=0..{len(cells) - 1}", "--", s_all, "{i}"]]],
            "parallel": [[par + ["-j8", s_all, ":::"] + [str(i) for i in range(len(cells))]]],
        },
        f"{len(one)} x 1 GPU + {len(two)} x 2 GPUs": {
            "cells": cells,
            # nodus sweep takes one GPU count per sweep: two sweeps at once share the inventory.
            "nodus": [[[a.nodus, "sweep", "--gpu", "H100", "--param", f"i=0..{len(one) - 1}", "--", s_one, "{i}"],
                       [a.nodus, "sweep", "--gpu", "H100:2", "--param", f"i=0..{len(two) - 1}", "--", s_two, "{i}"]]],
            # parallel knows no GPU counts: the 1-GPU cells 8 at a time, then the 2-GPU cells 4 at a time.
            "parallel": [[par + ["-j8", s_one, ":::"] + [str(i) for i in range(len(one))]],
                         [par + ["-j4", s_two, ":::"] + [str(i) for i in range(len(two))]]],
        },
        f"{half} x 1 GPU + {half} x 2 GPUs, one sweep": {
            "cells": grid,
            # One sweep whose --gpu takes the cell's g: one runner packs both counts.
            "nodus": [[[a.nodus, "sweep", "--gpu", "H100:{g}", "--param", "g=1,2", "--param",
                        f"i=0..{half - 1}", "--", s_grid, "{g}", "{i}"]]],
            "parallel": [[par + ["-j8", s_grid, "1", ":::"] + [str(i) for i in range(half)]],
                         [par + ["-j4", s_grid, "2", ":::"] + [str(i) for i in range(half)]]],
        },
        "4 x 8 grid, durations follow the params": {
            "cells": related,
            "nodus": [[[a.nodus, "sweep", "--gpu", "H100", "--param", "m=0..3", "--param", "b=0..7",
                        "--", s_rel, "{m}", "{b}"]]],
            "parallel": [[par + ["-j8", s_rel, ":::", "0", "1", "2", "3", ":::"] + [str(j) for j in range(8)]]],
        },
    }
    out = {"seed": a.seed, "gpus": gpus, "durations": cells, "related": related, "scenarios": {}}
    for name, sc in scenarios.items():
        # "nodus, repeated": the same sweep(s) again in the same store, so nodus knows each
        # cell's duration from the run before and starts the longest first (engine/cell_order.h).
        sc["nodus_repeat"] = sc["nodus"]
        res = {"lower_bound_s": lower_bound(sc["cells"], gpus),
               "list_schedule_s": list_schedule(sc["cells"], gpus),
               # the same, longest cell first: needs the durations in advance, which no runner has
               "lpt_s": list_schedule(sorted(sc["cells"], key=lambda c: -c["seconds"] * c["gpus"]), gpus),
               "runs": {"nodus": [], "nodus_repeat": [], "parallel": []}, "errors": []}
        for rep in range(a.reps):
            home = None
            for runner in ("nodus", "nodus_repeat", "parallel"):
                if runner != "nodus_repeat":  # the repeat runs in the store of the run before
                    home = tempfile.mkdtemp(prefix="pack-", dir=a.work)
                env = nodus_env(home, NODUS_LOCAL_GPUS=f"H100:{gpus}")
                # Create the store first: two nodus processes creating a new store at the same
                # moment can fail (measured under 5. concurrent writers, not here).
                subprocess.run([a.nodus, "ps"], env=env, check=True, stdout=subprocess.DEVNULL)
                total = 0.0
                for phase in sc[runner]:  # phases run one after another; commands in a phase at once
                    dt, rcs, errs = timed(phase, env)
                    total += dt
                    if any(rcs):
                        res["errors"].append(f"{runner}: exit {rcs}: {' | '.join(e.strip()[-300:] for e in errs)}")
                res["runs"][runner].append(total)
        res["makespan_s"] = {r: summary(v) for r, v in res["runs"].items()}
        out["scenarios"][name] = res
    save(a.results, "pack", out)


# ---------------------------------------------------------------------------------------------
# 5. store scale

def hyperfine(cmds, env, runs, results, tag):
    path = os.path.join(results, f"hyperfine-{tag}.json")
    subprocess.run(["hyperfine", "-N", "--style", "none", "--warmup", "1", "--runs", str(runs),
                    "--export-json", path] + cmds, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(path) as f:
        data = json.load(f)
    return {r["command"]: summary([t * 1000 for t in r["times"]]) for r in data["results"]}


BUSY = re.compile(r"SQLITE_BUSY|database is locked|locked|busy", re.IGNORECASE)


def writers(nodus, env, rounds, procs, job, fresh_in=None):
    """procs `nodus run JOB...` at once, `rounds` times; with fresh_in, each round on a store
    that does not exist yet (the first use of nodus on a machine, by several at once)."""
    busy, failed, walls = [], 0, []
    for _ in range(rounds):
        if fresh_in:
            env = dict(env, NODUS_HOME=tempfile.mkdtemp(prefix="fresh-", dir=fresh_in))
        dt, rcs, errs = timed([[nodus, "run"] + job] * procs, env)
        walls.append(dt)
        failed += sum(1 for rc in rcs if rc != 0)
        for e in errs:
            busy += [line for line in e.splitlines() if BUSY.search(line)]
    return {"rounds": rounds, "processes": procs, "failed": failed, "busy_lines": busy,
            "wall_s": summary(walls)}


def cmd_store(a):
    big = os.path.join(a.work, "store-big")
    small = tempfile.mkdtemp(prefix="store-small-", dir=a.work)
    os.makedirs(big, exist_ok=True)
    db = os.path.join(big, "nodus.db")
    if os.path.exists(db):
        for p in glob.glob(db + "*"):
            os.unlink(p)
    t0 = time.perf_counter()
    gen = subprocess.run([a.gen, db, str(a.jobs), str(a.sweeps), str(a.points)], check=True,
                         capture_output=True, text=True)
    gen_s = time.perf_counter() - t0
    size_mb = sum(os.path.getsize(p) for p in glob.glob(db + "*")) / 1e6
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("jobs", "sweeps", "metrics")}
    con.close()
    # A few real jobs and a real sweep in the small store, so both stores answer every command.
    env_small = nodus_env(small, NODUS_LOCAL_GPUS="H100:8")
    for _ in range(3):
        subprocess.run([a.nodus, "run", "--", "/bin/true"], env=env_small, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run([a.nodus, "sweep", "--gpu", "H100", "--param", "i=1..4", "--", "/bin/true"], env=env_small,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sweep_id = a.sweeps // 2
    timings = {}
    for tag, env, sid in (("big", nodus_env(big), sweep_id), ("small", env_small, 1)):
        queries = {"ps": "ps", "show SWEEP": f"show s{sid}", "cost": "cost", "sweeps": "sweeps"}
        cmds = [f"{a.nodus} {q}" for q in queries.values()]
        got = hyperfine(cmds, env, a.runs, a.results, tag)
        timings[tag] = {name: got[cmd] for name, cmd in zip(queries, cmds)}
    # Launch on the big store: does a long history slow every `nodus run`?
    launch = {}
    for tag, env in (("big", nodus_env(big)), ("small", nodus_env(small))):
        loop = f'for i in $(seq {a.launch_jobs}); do "$NODUS_BIN" run -- /bin/true 2>/dev/null || exit 1; done'
        per = []
        for _ in range(3):
            t1 = time.perf_counter()
            subprocess.run(["bash", "-c", loop], env=dict(env, NODUS_BIN=a.nodus), check=True)
            per.append((time.perf_counter() - t1) / a.launch_jobs * 1000)
        launch[tag] = summary(per)
    conc = {}
    for tag, env in (("big", nodus_env(big)), ("small", nodus_env(small))):
        for label, job in (("-- sleep 0.5", ["--", "sleep", "0.5"]), ("-- /bin/true", ["--", "/bin/true"])):
            conc[f"{tag}|{label}"] = writers(a.nodus, env, a.rounds, 16, job)
    # The first use of a store by several processes at once (two sweeps started together, say).
    for procs, rounds, label, job in ((2, a.rounds * 40, "--gpu H100 -- /bin/true", ["--gpu", "H100", "--", "/bin/true"]),
                                      (16, a.rounds * 2, "-- /bin/true", ["--", "/bin/true"])):
        conc[f"new{procs}|{label}"] = writers(a.nodus, env_small, rounds, procs, job, fresh_in=a.work)
    save(a.results, "store", {"generated": {"seconds": gen_s, "size_mb": size_mb, "counts": counts,
                                            "generator": gen.stdout.strip()},
                              "sweep_shown": f"s{sweep_id}", "runs": a.runs, "queries_ms": timings,
                              "run_true_ms": launch, "writers": conc})


# ---------------------------------------------------------------------------------------------
# Slurm (optional): launch latency and stop precision on the local dev cluster

def cmd_slurm(a):
    out = {"available": True}
    env = dict(os.environ)
    env.update(a.env_pairs and dict(kv.split("=", 1) for kv in a.env_pairs) or {})
    home = tempfile.mkdtemp(prefix="slurm-", dir=a.work)
    os.chmod(a.work, 0o755)
    share = tempfile.mkdtemp(prefix="slurm-share-", dir="/tmp")
    os.chmod(share, 0o1777)
    obey, _ = write_trees(share, sleep=600)  # Slurm's --time=1 is a minute
    for p in (obey,):
        os.chmod(p, 0o755)
    nenv = dict(env, NODUS_HOME=home, NO_COLOR="1")
    sb = ["sbatch", "--quiet", "-c1", "--mem=64M", "-o", "/dev/null", "-e", "/dev/null"]

    # Stop precision with Slurm's own --time=1 (minute): a few jobs at once, each polled.
    def time_limit_sample(i, store):
        # Staggered by 10 s, so the samples meet Slurm's periodic limit check at different phases.
        time.sleep(10 * i)
        pidfile = os.path.join(share, f"time-{i}.pids")
        r = subprocess.run(sb + ["--time=1", f"--wrap={obey} {pidfile}"], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            store.append({"error": r.stderr.strip()[-200:]})
            return
        got = read_pidfile(pidfile, time.monotonic() + 120)
        if got is None:
            store.append({"error": "the job never started"})
            return
        t_start, pids = got
        end = time.monotonic() + 240
        while time.monotonic() < end:
            if all(gone(p) for p in pids):
                over = (time.time() - (t_start + 60)) * 1000
                if over < -2000:  # the cluster is shared: someone cancelled it or restarted Slurm
                    store.append({"error": f"ended {-over / 1000:.0f} s before its limit: cancelled by someone else"})
                else:
                    store.append({"overshoot_ms": over})
                return
            time.sleep(POLL_S * 10)  # 10 ms is plenty for a tens-of-seconds overshoot
        for pid in pids:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
        store.append({"error": "still running 4 min after its limit"})

    limit_samples = []
    threads = [threading.Thread(target=time_limit_sample, args=(i, limit_samples)) for i in range(a.samples)]
    for t in threads:
        t.start()

    # Launch latency: sbatch --wait of a trivial job vs nodus run --backend slurm (REST).
    lat = {"sbatch --wait": [], "nodus run --backend slurm": []}
    errors = []
    for _ in range(a.samples):
        for name, cmd in (("sbatch --wait", sb + ["--wait", "--wrap=/bin/true"]),
                          ("nodus run --backend slurm", [a.nodus, "run", "--backend", "slurm", "--", "/bin/true"])):
            t0 = time.perf_counter()
            r = subprocess.run(cmd, env=nenv, capture_output=True, text=True)
            if r.returncode != 0:
                errors.append(f"{name}: exit {r.returncode}: {r.stderr.strip()[-200:]}")
                continue
            lat[name].append((time.perf_counter() - t0) * 1000)
    # Stop precision of nodus's own cancel at the deadline (REST), one at a time.
    nodus_stop = []
    for i in range(a.samples):
        pidfile = os.path.join(share, f"nodus-{i}.pids")
        nodus_stop.append(stop_sample([a.nodus, "run", "--backend", "slurm", "--timeout", "5s", "--", obey, pidfile],
                                      nenv, pidfile, 5.0, give_up_s=120.0))
    for t in threads:
        t.join()
    shutil.rmtree(share, ignore_errors=True)
    out.update({
        "note": a.note,
        "samples": a.samples,
        "launch_ms": {k: summary(v) for k, v in lat.items()},
        "stop": {
            "nodus run --backend slurm --timeout 5s": {
                "overshoot_ms": summary([s.get("overshoot_ms") for s in nodus_stop]),
                "from_launch_ms": summary([s.get("from_launch_ms") for s in nodus_stop]),
                "errors": [s["error"] for s in nodus_stop if "error" in s]},
            "sbatch --time=1 (Slurm alone)": {
                "overshoot_ms": summary([s.get("overshoot_ms") for s in limit_samples]),
                "errors": [s["error"] for s in limit_samples if "error" in s]},
        },
        "errors": errors,
    })
    save(a.results, "slurm", out)


def cmd_slurm_skip(a):
    save(a.results, "slurm", {"available": False, "reason": a.reason})


# ---------------------------------------------------------------------------------------------
# profile: what missed its goal, under callgrind (instruction counts: repeatable on a loaded
# machine) and strace -c (where the wall time of system calls goes)

LONG_NAMES = [
    (re.compile(r"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >"), "std::string"),
    (re.compile(r"nlohmann::json_abi_v3_11_2::basic_json<std::map.*?unsigned char> >(, void)?>"), "json"),
    (re.compile(r"\[/[^\]]*/"), "["),
]


def shorten(line, width=170):
    for pattern, repl in LONG_NAMES:
        line = pattern.sub(repl, line)
    return line if len(line) <= width else line[: width - 3] + "..."


def callgrind_top(cmd, env, work, tag, lines=28):
    out = os.path.join(work, f"callgrind-{tag}.out")
    r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + cmd, env=env,
                       capture_output=True, text=True)
    total = re.search(r"refs:\s+([\d,]+)", r.stderr)
    ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", out], capture_output=True, text=True).stdout
    rows = [shorten(l.rstrip()) for l in ann.splitlines() if re.match(r"^\s*[\d,]+ \(\s*[\d.]+%\)", l)]
    return {"instructions": total.group(1) if total else "?", "top": rows[:lines]}


def strace_summary(cmd, env, work, tag, lines=14):
    out = os.path.join(work, f"strace-{tag}.txt")
    subprocess.run(["strace", "-c", "-w", "-o", out] + cmd, env=env, capture_output=True)
    with open(out) as f:
        return [l.rstrip() for l in f.read().splitlines()[: lines + 2]]


def have(tool):
    return subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode == 0


def cmd_profile(a):
    entries = []
    la = load(a.results, "launch")
    if la and la["per_job_ms"]["nodus"]["median"] - la["per_job_ms"]["direct"]["median"] > 2.0:
        home = tempfile.mkdtemp(prefix="profile-", dir=a.work)
        env = nodus_env(home)
        cmd = [a.nodus, "run", "--", "/bin/true"]
        subprocess.run(cmd, env=env, capture_output=True)  # the store exists, as for every run but the first
        e = {"name": "nodus run -- /bin/true", "why": "1. launch overhead"}
        if have("strace"):
            e["strace"] = strace_summary(cmd, env, a.work, "launch")
        if have("valgrind"):
            e["callgrind"] = callgrind_top(cmd, env, a.work, "launch")
        entries.append(e)
    so = load(a.results, "store")
    big = os.path.join(a.work, "store-big")
    if so and os.path.isdir(big) and have("valgrind"):
        for q, t in so["queries_ms"]["big"].items():
            if t["median"] >= 100:
                args = q.replace("SWEEP", so["sweep_shown"]).split()
                e = {"name": f"nodus {' '.join(args)} (100k-job store)", "why": "5. store scale",
                     "callgrind": callgrind_top([a.nodus] + args, nodus_env(big), a.work, "store-" + args[0])}
                entries.append(e)
    save(a.results, "profile", {"entries": entries})


# ---------------------------------------------------------------------------------------------
# report

def ms(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def mmm(s, digits=1, scale=1.0):
    if not s:
        return "-"
    return f"{s['median'] * scale:.{digits}f} ({s['min'] * scale:.{digits}f}-{s['max'] * scale:.{digits}f})"


def goal(ok):
    return "**met**" if ok else "**missed**"


def machine_section(meta):
    lines = ["## Machine", "", "| | |", "|---|---|"]
    for k, v in meta.items():
        lines.append(f"| {k} | {v} |")
    return lines


def growth_after_warmup(series, seconds):
    """Peak-RSS slope after the first third of the run (SQLite's page cache and the allocator
    warm up first): (KiB before, KiB grown, ticks, bytes per tick)."""
    first = next(p for p in series if p["elapsed_s"] >= seconds / 3 - 1)
    last = series[-1]
    ticks = last["samples_so_far"] - first["samples_so_far"]
    grown = last["VmHWM"] - first["VmHWM"]
    return first, grown, ticks, (grown * 1024 / ticks if ticks else 0.0)


def supervisor_sections(su, verdicts):
    c, m, g = su["cpu_job"], su["mem_job"], su.get("gpu_job")
    r = c["read"]
    pct = 100 * r["cpu_s"] / r["elapsed_s"]
    pct_sched = 100 * r["sched_s"] / r["elapsed_s"]
    src = c["store"] or {}
    L = ["", "## 3. Supervisor cost", "",
         f"`nodus run --gpu H100 -- sleep {c['sleep_s']:g}` (a declared GPU) with the default 1 s sampling. The CPU",
         f"time of the nodus process itself (the supervisor; the job is a separate process) read",
         f"{c['sleep_s'] - r['elapsed_s']:.1f} s before the job ends: utime+stime from /proc/PID/stat (10 ms ticks) and",
         "the sum of /proc/PID/task/*/schedstat (ns). There is no GPU here: the GPU sampler finds neither",
         f"NVML nor nvidia-smi and falls back to none (stored: gpu_note={src.get('gpu_note')!r},",
         f"{src.get('gpu_samples')} GPU samples, {src.get('host_samples')} host samples of the job's tree). The last row",
         "is a job holding 8 GPUs whose telemetry comes from a stand-in `nvidia-smi`",
         "(bench/fake_nvidia_smi.py, put on that job's PATH only): the supervisor parses and stores 8 GPU",
         "samples a tick as on a GPU server (the stand-in's own CPU is not counted; NVML, the first choice",
         "where it exists, is not measured).", "",
         "| supervisor | elapsed s | CPU s (stat) | CPU s (schedstat) | % of one core | CPU ms per tick |",
         "|---|---|---|---|---|---|",
         f"| 1 s sampling, no GPU telemetry | {r['elapsed_s']:.1f} | {r['cpu_s']:.2f} | {r['sched_s']:.3f} | "
         f"{pct:.3f} (schedstat {pct_sched:.3f}) | {1000 * r['sched_s'] / r['elapsed_s']:.2f} |"]
    for label, job in (("50 ms sampling, no GPU telemetry", m), ("50 ms sampling, 8 GPUs (stand-in nvidia-smi)", g)):
        if not job:
            continue
        last = job["series"][-1]
        L.append(f"| {label} | {last['elapsed_s']:.1f} | {last['cpu_s']:.2f} | {last['sched_s']:.3f} | "
                 f"{100 * last['sched_s'] / last['elapsed_s']:.3f} | {1000 * last['sched_s'] / last['samples_so_far']:.2f} |")
    ce = c.get("exit")
    if ce:
        L += ["", f"Over the whole life of the 1 s-sampling supervisor (GNU time: start-up, {c['sleep_s']:g} s of",
              f"supervision, the end-of-job summary and exit): {ce['cpu_s']:.3f} CPU s = "
              f"{100 * ce['cpu_s'] / c['sleep_s']:.3f}% of one core."]
    ok = max(pct, pct_sched) < 0.5
    verdicts.append(("3. supervisor cost", "< 0.5% of one core", f"{max(pct, pct_sched):.3f}%", ok))
    cr = su.get("crowd")
    if cr:
        b, c2 = cr["base"], cr["crowded"]
        L += ["", "The whole supervisor's CPU per tick with the host as it is and with more idle processes",
              "(before issue 17 its samplers read every /proc/PID/stat each tick, so this grew with the host:",
              f"1.16 ms with 76 processes, 12.9 ms with 1076 on 2026-11-29). {cr['seconds']:g} s at 50 ms, after start-up:", "",
              "| processes on the host | CPU ms per tick | % of a core at 1 Hz |", "|---|---|---|",
              f"| {b['processes']} (as it is) | {b['cpu_ms_per_tick']:.3f} | {b['cpu_ms_per_tick'] / 10:.3f} |",
              f"| {c2['processes']} (+{cr['added']} idle `sleep`) | {c2['cpu_ms_per_tick']:.3f} | "
              f"{c2['cpu_ms_per_tick'] / 10:.3f} |"]
    L += ["", f"Goal < 0.5% of one core at the default 1 s sampling: {goal(ok)} ({max(pct, pct_sched):.3f}%)."]

    L += ["", "## 6. Memory", "",
          f"Jobs sampled every 50 ms for {m['sleep_s']:g} s: {int(m['sleep_s'] / 0.05)} ticks, as many as "
          f"{m['sleep_s'] / 0.05 / 60:.0f} min at the default 1 Hz",
          "(a 1-hour job at 1 Hz is 3600 ticks). VmRSS/VmHWM of each supervisor read from /proc while it runs:",
          f"stored series: {(m['store'] or {}).get('host_samples')} host samples (no-GPU job); "
          + (f"{(g['store'] or {}).get('gpu_samples')} GPU + {(g['store'] or {}).get('host_samples')} host samples (8-GPU job)."
             if g else ""), "",
          "| elapsed s | ticks so far | no GPU: VmRSS KiB | no GPU: VmHWM KiB | 8 GPUs: VmRSS KiB | 8 GPUs: VmHWM KiB |",
          "|---|---|---|---|---|---|"]
    for i, p in enumerate(m["series"]):
        q = g["series"][i] if g else {}
        L.append(f"| {p['elapsed_s']:.0f} | {p['samples_so_far']:.0f} | {p['VmRSS']} | {p['VmHWM']} | "
                 f"{q.get('VmRSS', '-')} | {q.get('VmHWM', '-')} |")
    worst = 0.0
    for label, job in (("no GPU", m), ("8 GPUs", g)):
        if not job:
            continue
        first, grown, ticks, per_tick = growth_after_warmup(job["series"], job["sleep_s"])
        hour = 3600 * per_tick / 1024
        worst = max(worst, hour)
        L += ["", f"{label}: warm-up to tick {first['samples_so_far']:.0f} "
                  f"{first['VmHWM'] - job['series'][0]['VmHWM']:+d} KiB; after it {grown:+d} KiB over {ticks:.0f} ticks = "
                  f"{per_tick:.1f} bytes per tick, {hour:+.0f} KiB per hour at 1 Hz, {24 * hour / 1024:+.1f} MiB per day."]
    ok = worst < 1024
    verdicts.append(("6. memory (while running)", "peak RSS flat with duration",
                     f"{worst:+.0f} KiB per hour at 1 Hz after warm-up", ok))
    L += ["", f"Goal flat while the job runs (< 1 MiB more per hour at 1 Hz): {goal(ok)}."]
    rows = [(f"`sleep {c['sleep_s']:g}`, 1 s sampling, no GPU", c['sleep_s'], c),
            (f"`sleep {m['sleep_s']:g}`, 50 ms sampling, no GPU", m['sleep_s'] / 0.05, m)]
    if g:
        rows.append((f"`sleep {g['sleep_s']:g}`, 50 ms sampling, 8 GPUs", g['sleep_s'] / 0.05, g))
    if all(job.get("exit") for _, _, job in rows):
        L += ["", "Peak RSS over the whole life (`ru_maxrss` of nodus itself), which includes the end-of-job summary:",
              "`JobObserver::finish` reads the job's stored samples back one row at a time into running",
              "aggregates (measured with GNU time, 10 ms CPU resolution).", "",
              "| supervisor | ticks | stored samples | peak RSS KiB | last VmHWM while running KiB |", "|---|---|---|---|---|"]
        for label, ticks, job in rows:
            st = job["store"] or {}
            running = job["series"][-1]["VmHWM"] if job.get("series") else job["read"]["VmHWM"]
            L.append(f"| {label} | {ticks:.0f} | {(st.get('gpu_samples') or 0) + (st.get('host_samples') or 0)} | "
                     f"{job['exit']['maxrss_kib']} | {running} |")
        gs = su.get("gpu_short_job")
        if g and gs and gs.get("exit"):
            L.append(f"| `sleep {gs['sleep_s']:g}`, 50 ms sampling, 8 GPUs | {gs['sleep_s'] / 0.05:.0f} | "
                     f"{((gs['store'] or {}).get('gpu_samples') or 0) + ((gs['store'] or {}).get('host_samples') or 0)} | "
                     f"{gs['exit']['maxrss_kib']} | - |")
            jump = g["exit"]["maxrss_kib"] - g["series"][-1]["VmHWM"]
            n_long = (g["store"] or {}).get("gpu_samples") or 0
            n_short = (gs["store"] or {}).get("gpu_samples") or 0
            if n_long > n_short:
                # Two lengths of the same job: what the peak gains per extra sample is what the
                # summary holds per sample; the rest (SQLite's page cache, the accumulators'
                # chunks) is fixed.
                grow = g["exit"]["maxrss_kib"] - gs["exit"]["maxrss_kib"]
                per = max(0, grow) * 1024 / (n_long - n_short)
                day = per * 8 * 86400 / 2**20
                L += ["", f"The end-of-job summary of the 8-GPU job raised its peak {jump:+d} KiB over the "
                          f"running figure. Against the same job a third as long ({n_short} GPU samples against "
                          f"{n_long}), the peak differs by {grow:+d} KiB: {per:.1f} bytes per extra sample, "
                          f"~{day:.1f} MiB more at the end of a 24-hour 8-GPU job at 1 Hz "
                          f"({8 * 86400} samples). The peaks differ by a few KiB from run to run."]
                ok_end = per < 16  # flat: no more than a few bytes per sample of the job's length
                verdicts.append(("6. memory (end-of-job summary)", "peak RSS flat with duration",
                                 f"{grow:+d} KiB for {n_long - n_short} more GPU samples ({per:.1f} B each): "
                                 f"~{day:.1f} MiB more at the end of a 24 h 8-GPU job", ok_end))
    return L


def sampler_section(sa, verdicts):
    """bench/sampler_cost.cc: the sampler's CPU per tick, the old full scan against the tree walk."""
    L = ["", "### The host sampler with the host crowded (issue 17)", "",
         f"`bench/sampler_cost` samples two jobs of three processes (a shell and two `sleep`s, in a session of",
         f"their own; one in a cgroup of its own) {sa['ticks']} times per repeat, {sa['reps']} repeats, the three ways",
         "in turn rep by rep, and takes its own thread's CPU time (others' load does not count). *scan*: the",
         "sampler before issue 17 (every /proc/PID/stat on the host, then the tree picked out); *walk*: the",
         "tree from the main process through /proc/PID/task/*/children (jobs without a cgroup); *cgroup*:",
         "the job's cgroup.procs (every local job where cgroups work).",
         "" if sa.get("cgroup") is True else f"No cgroup here: {sa.get('cgroup')}.", "",
         "| processes on the host | scan ms/tick | walk ms/tick | cgroup ms/tick | scan % of a core at 1 Hz | walk % | cgroup % |",
         "|---|---|---|---|---|---|---|"]
    for key, label in (("base", "as it is"), ("crowded", f"+{sa['crowd']} idle `sleep`")):
        ph = sa[key]
        cg = ph.get("cgroup")
        L.append(f"| {ph['processes']} ({label}) | {mmm(ph['scan'], 3)} | {mmm(ph['walk'], 3)} | "
                 f"{mmm(cg, 3) if cg else '-'} | {ph['scan']['median'] / 10:.3f} | {ph['walk']['median'] / 10:.3f} | "
                 f"{cg['median'] / 10 if cg else float('nan'):.3f} |")
    ph = sa["crowded"]
    worst = max(ph["walk"]["median"], ph.get("cgroup", ph["walk"])["median"]) / 10
    ok = worst <= 0.2
    L += ["", f"Members found each tick: scan {ph['members']['scan']}, walk {ph['members']['walk']}, "
              f"cgroup {ph['members']['cgroup']}.",
          "", f"Goal <= 0.2% of a core at 1 Hz with {sa['crowd']} unrelated processes: {goal(ok)} "
              f"({worst:.3f}% after, {ph['scan']['median'] / 10:.3f}% before)."]
    verdicts.append((f"3. host sampler, +{sa['crowd']} processes", "<= 0.2% of a core at 1 Hz",
                     f"{worst:.3f}% (before: {ph['scan']['median'] / 10:.3f}%)", ok))
    return L


def cmd_report(a):
    meta = load(a.results, "meta") or {}
    L = ["# nodus benchmarks", "",
         "Written by `bench/run.sh` (rerun it to refresh every number). Every peer ran in the same run on the",
         "same machine as nodus, interleaved with it rep by rep. Figures are **median (min-max)** over the",
         "repeats stated; ratios are of medians. " + (a.about or
         "The machine is a shared 2-core VM where other builds run\n"
         "at the same time (load average below), so absolute times are noisy; ratios measured side by side\n"
         "are the figures to read."), ""]
    L += machine_section(meta)
    verdicts = []

    # 1
    la = load(a.results, "launch")
    if la:
        p = la["per_job_ms"]
        d = p["direct"]["median"]
        L += ["", f"## 1. Launch overhead ({la['jobs']} trivial jobs in a row, {la['reps']} repeats)", "",
              "Per job, milliseconds: the wall time of the whole loop divided by the number of jobs.", "",
              "| runner | ms per job | over direct exec | x direct |", "|---|---|---|---|"]
        names = {"direct": "`/bin/true` exec'd from a bash loop", "timeout": "`timeout 10 /bin/true`",
                 "nodus": "`nodus run -- /bin/true`", "parallel": "GNU `parallel -j1 /bin/true ::: 1..N`",
                 "nodus_help": "`nodus --version` (process start only)",
                 "nodus_base": "`nodus run -- /bin/true`, before (" + la.get("base_label", "base commit") + ")"}
        for k in ("direct", "timeout", "nodus_base", "nodus", "parallel", "nodus_help"):
            if k in p:
                L.append(f"| {names[k]} | {mmm(p[k], 2)} | {p[k]['median'] - d:+.2f} | {p[k]['median'] / d:.1f} |")
        over = p["nodus"]["median"] - d
        ok = over <= 2.0
        verdicts.append(("1. launch overhead", "nodus within 2 ms of a direct exec per job",
                         f"{over:+.2f} ms", ok))
        if "load" in la:
            L += ["", f"Load average when the loops ended: {' '.join(f'{x:.2f}' for x in la['load'])}."]
        cp = la.get("cpu_per_job_ms")
        if cp:
            dc = cp["direct"]["median"]
            L += ["", "CPU per job (user + system of the loop and everything it ran, from getrusage(RUSAGE_CHILDREN)),",
                  "which other processes' load does not inflate as it does wall time:", "",
                  "| runner | CPU ms per job | over direct exec |", "|---|---|---|"]
            for k in ("direct", "timeout", "nodus_base", "nodus", "parallel", "nodus_help"):
                if k in cp:
                    L.append(f"| {names[k]} | {mmm(cp[k], 2)} | {cp[k]['median'] - dc:+.2f} |")
        if "nodus_base" in p:
            L += ["", f"Before and after in the same run: {p['nodus_base']['median'] - d:+.2f} ms before, "
                      f"{over:+.2f} ms after."]
        L += ["", f"Goal: nodus within 2 ms of a direct exec per job: {goal(ok)} ({over:+.2f} ms; "
                  f"`timeout 10` adds {p['timeout']['median'] - d:+.2f} ms, parallel {p['parallel']['median'] - d:+.2f} ms)."]
    sl = load(a.results, "slurm")
    if sl:
        if sl.get("available"):
            L += ["", f"Slurm (the local one-node dev cluster, `scripts/slurm-dev-cluster.sh`, {sl['samples']} samples):", ""]
            if sl.get("note"):
                L += [sl["note"], ""]
            L += ["| submit | ms, submit to exit |", "|---|---|"]
            for k, v in sl["launch_ms"].items():
                L.append(f"| `{k}` of a trivial job | {mmm(v, 0)} |")
            for e in sl.get("errors", []):
                L.append(f"\nError: {e}")
        else:
            L += ["", f"Slurm submit latency: not measured ({sl['reason']})."]

    # 2
    st = load(a.results, "stop")
    if st:
        L += ["", f"## 2. Stop precision ({st['samples']} samples per runner, limit {st['limit_s']:g} s)", "",
              "The job is a tree of three processes (bash and two `sleep 60`) that writes its pids and its start",
              "time (`$EPOCHREALTIME`, no fork) to a file; the harness polls `/proc` every 1 ms and takes",
              "\"gone\" as the moment the last of the three has no /proc entry or is a zombie. **Overshoot** =",
              "gone - (job start + limit), so a runner's own start-up does not count; *from launch* counts it",
              "(gone - (runner launched + limit)). Negative = the tree was gone before the deadline.", "",
              "For the cost cap the deadline is the moment the cost reaches the cap: four declared `TEST` GPUs at",
              f"$900/GPU-hour = $1/s and `--max-cost {st['limit_s']:g}`, `--grace 500ms`, and a tree that ignores SIGTERM",
              "(so only SIGKILL ends it: nodus sends SIGTERM `grace` before the cap and SIGKILL 25 ms before it);",
              "the peers are given the same deadline as a hard kill.", "",
              "| deadline | runner | overshoot ms | from launch ms | runner start-up ms | exit codes | errors |",
              "|---|---|---|---|---|---|---|"]
        for group, by in st["groups"].items():
            label = "timeout (tree obeys SIGTERM)" if group == "timeout" else "cost cap (tree ignores SIGTERM)"
            for name, r in by.items():
                L.append(f"| {label} | `{name}` | {mmm(r['overshoot_ms'])} | {mmm(r['from_launch_ms'])} | "
                         f"{mmm(r['startup_ms'])} | {r['exit_codes']} | {len(r['errors'])} |")
        for group, key in (("timeout", "nodus run --timeout"), ("cost", "nodus run --max-cost")):
            r = st["groups"][group][key]["overshoot_ms"]
            ok = r is not None and r["median"] <= 20
            verdicts.append((f"2. stop precision, {group}", "median overshoot <= 20 ms",
                             "-" if r is None else f"{r['median']:.1f} ms", ok))
        L += ["", "Goal: median overshoot <= 20 ms: " + ", ".join(
            f"`{k}` {goal(v[3])} ({v[2]})" for k, v in zip(("--timeout", "--max-cost"), verdicts[-2:])) + "."]
        if sl and sl.get("available"):
            L += ["", "On Slurm (the same tree, its sleeps longer than the limit; nodus cancels through slurmrestd",
                  "at its own deadline; Slurm alone enforces `--time=1` (a minute) from its periodic limit check,",
                  "plus KillWait; those samples start 10 s apart so they meet the check at different phases):", "",
                  "| runner | overshoot ms | from launch ms | errors |", "|---|---|---|---|"]
            for name, r in sl["stop"].items():
                L.append(f"| `{name}` | {mmm(r['overshoot_ms'], 0)} | {mmm(r.get('from_launch_ms'), 0)} | "
                         f"{'; '.join(r['errors']) or '-'} |")
            r = sl["stop"]["nodus run --backend slurm --timeout 5s"]["overshoot_ms"]
            ok = r is not None and r["median"] <= 2000
            verdicts.append(("2. stop precision, Slurm", "within 2 s", "-" if r is None else f"{r['median'] / 1000:.2f} s", ok))
        elif sl:
            L += ["", f"Slurm's own `--time`: not measured ({sl['reason']})."]

    # 3 + 6
    su = load(a.results, "supervisor")
    if su:
        L += supervisor_sections(su, verdicts)
    sa = load(a.results, "sampler")
    if sa:
        L += sampler_section(sa, verdicts)

    # 4
    pk = load(a.results, "pack")
    if pk:
        L += ["", "## 4. Packing", "",
              f"32 cells, durations uniform in 0.5-3.0 s from seed {pk['seed']} (below), every 4th cell needing 2 GPUs in",
              "the mixed case, on a declared 8-GPU inventory (`NODUS_LOCAL_GPUS=H100:8`). Each cell is",
              "`cells.sh {i}`: a bash lookup of its duration, then `exec sleep`. Makespan = wall time of the",
              "command(s), start to exit. Lower bound = max(GPU-seconds / 8, longest cell). *List schedule* = the",
              "greedy in-order schedule with zero overhead (what an ideal runner starting cells in order gets).",
              "nodus runs the mixed case as two sweeps at once (one per GPU count) sharing the inventory",
              "through the store's GPU claims (the store is created before each run); `parallel` has no",
              "notion of GPU counts, so it runs the 1-GPU cells with -j8, then the 2-GPU cells with -j4.",
              "The *one sweep* case is the same 32 durations as a grid of GPU counts, the first 16 on 1 GPU",
              "and the last 16 on 2 (`cells-grid.sh {g} {i}`), run by a single `nodus sweep --gpu H100:{g}",
              "-p g=1,2 -p i=0..15`, which plans and claims both counts itself; `parallel` as above.",
              "The *related grid* is a sweep of 4 models x 8 batch sizes on 1 GPU each whose durations",
              "follow the params (`cells-related.sh {m} {b}`: the model's factor times the batch size's,",
              "+-8%, both ascending, so grid order starts the longest cells last), as real grids do;",
              "on a first run nodus reorders the pending cells as the ended ones show which params make",
              "a cell long (engine/duration_model.h). `parallel -j8` runs the same grid in grid order.", "",
              "| cells | lower bound s | list schedule s (x LB) | runner | makespan s | x lower bound | x list schedule | errors |",
              "|---|---|---|---|---|---|---|---|"]
        for name, sc in pk["scenarios"].items():
            lb = sc["lower_bound_s"]
            for runner, s in sc["makespan_s"].items():
                L.append(f"| {name} | {lb:.2f} | {sc['list_schedule_s']:.2f} ({sc['list_schedule_s'] / lb:.3f}) | "
                         f"{ {'nodus': '`nodus sweep`', 'nodus_repeat': '`nodus sweep`, repeated (durations known)'}.get(runner, '`parallel`')} | {mmm(s, 2)} | "
                         f"{s['median'] / lb:.3f} | {s['median'] / sc['list_schedule_s']:.3f} | "
                         f"{sum(1 for e in sc['errors'] if e.startswith(runner))} |")
            r0 = sc["makespan_s"]["nodus"]["median"] / lb
            rk = sc["makespan_s"].get("nodus_repeat", sc["makespan_s"]["nodus"])["median"] / lb
            verdicts.append((f"4. packing, {name}, durations unknown (first run)", "makespan <= 1.05 x lower bound",
                             f"{r0:.3f}", r0 <= 1.05))
            if "nodus_repeat" in sc["makespan_s"]:
                verdicts.append((f"4. packing, {name}, durations known (repeated sweep)",
                                 "makespan <= 1.05 x lower bound", f"{rk:.3f}", rk <= 1.05))
        for name, sc in pk["scenarios"].items():
            for e in sc["errors"]:
                L.append(f"\nError ({name}): {e}")
        L += ["", "Longest cell first (LPT, which needs every duration in advance) would give " + ", ".join(
            f"{sc['lpt_s'] / sc['lower_bound_s']:.3f} x LB ({name})" for name, sc in pk["scenarios"].items()) + "."]
        L += ["", "Durations (s): " + ", ".join(f"{c['seconds']:.2f}{'x2' if c['gpus'] == 2 else ''}"
                                              for c in pk["durations"]) + "."]
        if "related" in pk:
            L += ["", "Related grid durations (s), model by model: " + "; ".join(
                ", ".join(f"{c['seconds']:.2f}" for c in pk["related"] if c["m"] == m)
                for m in sorted({c["m"] for c in pk["related"]})) + "."]

    # 5
    so = load(a.results, "store")
    if so:
        g = so["generated"]
        L += ["", "## 5. Store scale", "",
              f"Generated through `nodus::store::Store` (bench/gen_store.cc): {g['counts']['jobs']} jobs, "
              f"{g['counts']['sweeps']} sweeps, {g['counts']['metrics']} metric points, stats for every job; "
              f"{g['size_mb']:.0f} MB, written in {g['seconds']:.0f} s. Each command timed with hyperfine "
              f"(no shell, 1 warm-up, {so['runs']} runs); the small store holds 3 runs and one 4-cell sweep.", "",
              "`nodus ps -a` (every job, time and peak memory, beside sqlite3 reading the same rows) is "
              "measured by bench/listing_bench.py: bench/LISTING-RESULTS.md.", "",
              "| command | 100k-job store, ms | small store, ms | goal < 100 ms |", "|---|---|---|---|"]
        for q in so["queries_ms"]["big"]:
            b, s = so["queries_ms"]["big"][q], so["queries_ms"]["small"][q]
            ok = b["median"] < 100
            shown = q.replace("SWEEP", so["sweep_shown"])
            L.append(f"| `nodus {shown}` | {mmm(b)} | {mmm(s)} | {goal(ok)} |")
            verdicts.append((f"5. store scale, nodus {shown}", "< 100 ms", f"{b['median']:.1f} ms", ok))
        rt = so["run_true_ms"]
        L += ["", f"`nodus run -- /bin/true` per job on the 100k-job store: {mmm(rt['big'], 2)} ms; on the small store "
                  f"{mmm(rt['small'], 2)} ms."]
        L += ["", "Concurrent writers: `nodus run` processes started at once, repeated; `sleep 0.5` jobs also",
              "finish at once, `/bin/true` jobs open, write and close the store all together; on a store that",
              "does not exist yet, they also create it together. Every line of their stderr is searched for",
              "SQLITE_BUSY / locked / busy. The packing runs above (two sweeps and their cell supervisors",
              "sharing one store) count too.", "",
              "| store | command | rounds x processes | non-zero exits | busy/locked lines | wall per round s |",
              "|---|---|---|---|---|---|"]
        busy_lines = []
        for key, w in so["writers"].items():
            tag, job = key.split("|")
            store_name = "none yet (a new one per round)" if tag.startswith("new") else \
                {"big": "100k jobs", "small": "small"}[tag]
            L.append(f"| {store_name} | `nodus run {job}` | {w['rounds']} x {w['processes']} | "
                     f"{w['failed']} | {len(w['busy_lines'])} | {mmm(w['wall_s'], 2)} |")
            busy_lines += w["busy_lines"]
        nfail = sum(w["failed"] for w in so["writers"].values())
        if pk:
            for name, sc in pk["scenarios"].items():
                for e in sc["errors"]:
                    busy_lines += [f"(packing, {name}) {l.strip()}" for l in e.split("|") if BUSY.search(l)]
        if busy_lines:
            L += ["", "```"] + busy_lines[:8] + ["```"]
        n = len(busy_lines) + nfail
        verdicts.append(("5. concurrent writers", "no SQLITE_BUSY surfaced", f"{len(busy_lines)} busy lines, {nfail} failures", n == 0))

    pr = load(a.results, "profile")
    if pr and pr["entries"]:
        L += ["", "## Profiles of what missed its goal", "",
              "`strace -c -w` (wall time in each system call, the nodus process only) and valgrind",
              "`--tool=callgrind` (user-space instructions, repeatable on a loaded machine; the top of",
              "`callgrind_annotate --inclusive=yes`)."]
        for e in pr["entries"]:
            L += ["", f"### {e['name']} ({e['why']})"]
            if e.get("strace"):
                L += ["", "```"] + e["strace"] + ["```"]
            if e.get("callgrind"):
                L += ["", f"{e['callgrind']['instructions']} instructions in all:", "", "```"] + e["callgrind"]["top"] + ["```"]

    notes = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ANALYSIS.md")
    if os.path.exists(notes) and not a.no_analysis:
        with open(notes) as f:
            L += ["", f.read().rstrip()]

    L += ["", "## Goals", "", "| benchmark | goal | nodus | |", "|---|---|---|---|"]
    for name, g_, val, ok in verdicts:
        L.append(f"| {name} | {g_} | {val} | {goal(ok)} |")
    with open(a.out, "w") as f:
        f.write("\n".join(L) + "\n")


def cmd_meta(a):
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception:  # noqa: BLE001 - a missing tool leaves a blank, not a failed run
            return ""
    cpu = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip()
    meta = {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": sh("nproc"), "CPU": cpu, "kernel": platform.release(),
        "OS": sh(". /etc/os-release && echo $PRETTY_NAME"),
        "nodus commit": sh(f"git -C {a.repo} rev-parse --short HEAD") +
                        (" (+ uncommitted changes)" if sh(f"git -C {a.repo} status --porcelain --untracked-files=no -- . ':!bench'") else ""),
        "build": a.build_label,
        "load average at start": a.load_start,
        "load average at end": sh("cut -d' ' -f1-3 /proc/loadavg"),
        "GNU parallel": sh("parallel --will-cite --version | head -1"),
        "coreutils timeout": sh("timeout --version | head -1"),
        "hyperfine": sh("hyperfine --version"),
        "SQLite": sh("python3 -c 'import sqlite3; print(sqlite3.sqlite_version)'"),
        "Slurm": sh("dpkg-query -W -f '${Version}' slurmctld 2>/dev/null") or "not installed",
        "total bench time": f"{a.elapsed} s",
    }
    save(a.results, "meta", meta)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)

    def add(name, fn):
        p = sub.add_parser(name)
        p.add_argument("--results", required=True)
        p.set_defaults(fn=fn)
        return p

    p = add("launch", cmd_launch)
    p.add_argument("--nodus", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--with-hooks", action="store_true")
    p.add_argument("--nodus-base", default="", help="nodus before the change, measured beside it")
    p.add_argument("--base-label", default="base commit")
    p = add("stop", cmd_stop)
    p.add_argument("--nodus", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--prices", required=True)
    p.add_argument("--limit", type=float, default=1.0)
    p.add_argument("--samples", type=int, default=10)
    p = add("kill", cmd_kill)
    p.add_argument("--nodus", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--limit", type=float, default=1.0)
    p.add_argument("--children", type=int, default=100)
    p.add_argument("--samples", type=int, default=10)
    p = add("supervisor", cmd_supervisor)
    p.add_argument("--nodus", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--cpu-s", type=float, default=60)
    p.add_argument("--mem-s", type=float, default=180)
    p.add_argument("--fake-smi", required=True)
    p.add_argument("--crowd", type=int, default=1000)
    p.add_argument("--crowd-s", type=float, default=10)
    p = add("sampler", cmd_sampler)
    p.add_argument("--bin", required=True)
    p.add_argument("--crowd", type=int, default=1000)
    p.add_argument("--ticks", type=int, default=200)
    p.add_argument("--reps", type=int, default=5)
    p = add("pack", cmd_pack)
    p.add_argument("--nodus", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--reps", type=int, default=3)
    p = add("store", cmd_store)
    p.add_argument("--nodus", required=True)
    p.add_argument("--gen", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--jobs", type=int, default=100000)
    p.add_argument("--sweeps", type=int, default=1000)
    p.add_argument("--points", type=int, default=1000000)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--launch-jobs", type=int, default=30)
    p.add_argument("--rounds", type=int, default=5)
    p = add("slurm", cmd_slurm)
    p.add_argument("--nodus", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--samples", type=int, default=3)
    p.add_argument("--note", default="", help="printed with the Slurm figures (e.g. when they were measured apart)")
    p.add_argument("env_pairs", nargs="*")
    p = add("slurm-skip", cmd_slurm_skip)
    p.add_argument("--reason", required=True)
    p = add("profile", cmd_profile)
    p.add_argument("--work", required=True)
    p.add_argument("--nodus", required=True)
    p = add("meta", cmd_meta)
    p.add_argument("--repo", required=True)
    p.add_argument("--load-start", required=True)
    p.add_argument("--elapsed", required=True)
    p.add_argument("--build-label", default="Release (-O3 -DNDEBUG), build-bench")
    p = add("report", cmd_report)
    p.add_argument("--out", required=True)
    p.add_argument("--about", default="", help="what the machine is (default: this 2-core VM)")
    p.add_argument("--no-analysis", action="store_true",
                   help="leave out bench/ANALYSIS.md (written from this VM's profiles)")
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
