#!/usr/bin/env python3
"""Hostile-input benchmarks of issue 11 (part B), one command:

    python3 bench/input_bench.py --nodus build/nodus [--reps 3] [--out bench/INPUT-RESULTS.md]

1. rss: the supervisor's whole-life peak RSS (GNU time %M of the attached `nodus run`) for an
   8-GPU job whose stand-in nvidia-smi (bench/fake_nvidia_smi.py, FAKE_SMI_BURST rounds per
   emission) delivers a 24 h-equivalent series (86,400 rounds x 8 GPUs = 691,200 samples), against
   the same job delivering a 1-minute series (60 rounds). Goal: within 2x.
2. overshoot: `--max-cost 0.01 --grace 1s` on NODUS_LOCAL_GPUS=H100:2 (cap at 6.923 s) while the
   job, which ignores SIGTERM, floods the supervisor: 300k matching lines/s for --metric-regex,
   `yes` unpaced, and `yes` into $NODUS_METRICS. Reported per run: how long after the cap
   deadline the job was recorded ended (ended_at - started_at - t_cap; the SIGKILL is planned 25
   ms before t_cap), the recorded cost, and the supervisor's peak RSS. Goal: <= 20 ms, cost <= cap.
Only the standard library. Writes Markdown to --out (stdout when not given).
"""

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

RATE = 2.6  # H100-SXM, $/GPU-hour, as the built-in catalog has it
HERE = os.path.dirname(os.path.abspath(__file__))

PACED_300K = r"""
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
batch = b"x=y 123\n" * 3000          # 3000 matching lines every 10 ms: 300k lines/s
out = sys.stdout.buffer
next_t = time.monotonic()
while True:
    out.write(batch); out.flush()
    next_t += 0.01
    d = next_t - time.monotonic()
    if d > 0: time.sleep(d)
"""


def timed(cmd, env, work, name):
    rusage = os.path.join(work, f"rusage-{name}.txt")
    t0 = time.monotonic()
    rc = subprocess.call(["/usr/bin/time", "-f", "%M", "-o", rusage] + cmd, env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    with open(rusage) as f:
        maxrss = int(f.read().strip().split("\n")[-1])
    return rc, wall, maxrss


def job_row(home):
    db = sqlite3.connect(os.path.join(home, "nodus.db"))
    row = db.execute("SELECT started_at, ended_at, cost, state, gpu_count, rate_per_gpu_hour, id "
                     "FROM jobs ORDER BY id DESC LIMIT 1").fetchone()
    n = db.execute("SELECT count(*) FROM gpu_samples WHERE job_id = ?", (row[6],)).fetchone()[0]
    stats = db.execute("SELECT json FROM job_stats WHERE job_id = ?", (row[6],)).fetchone()
    db.close()
    return {"started": row[0], "ended": row[1], "cost": row[2], "state": row[3], "gpu_samples": n,
            "stats": stats[0] if stats else ""}


def base_env(home, **extra):
    env = dict(os.environ)
    for k in ("NODUS_LOCAL_GPUS", "NODUS_PRICES", "NODUS_BACKEND"):
        env.pop(k, None)
    env["NODUS_HOME"] = home
    env.update(extra)
    return env


def rss_case(a, work, rounds, label):
    home = tempfile.mkdtemp(prefix="rss-", dir=work)
    smi = os.path.join(work, "smi")
    os.makedirs(smi, exist_ok=True)
    link = os.path.join(smi, "nvidia-smi")
    if not os.path.exists(link):
        os.symlink(os.path.join(HERE, "fake_nvidia_smi.py"), link)
    # 50 ms ticks; BURST rounds per emission: 5000 rounds/s at BURST=250 (fewer on a slow host:
    # the table gives the samples actually stored).
    burst = 250 if rounds > 1000 else 1
    # --stretch lengthens the job where the stand-in delivers fewer rounds than asked (the H200
    # host delivers about half), so the stored series reaches the length the label names.
    seconds = rounds / (burst * 20.0) * (a.stretch if rounds > 1000 else 1.0)
    env = base_env(home, NODUS_LOCAL_GPUS="H100:8", FAKE_SMI_GPUS="8", FAKE_SMI_BURST=str(burst),
                   PATH=smi + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
    rc, wall, maxrss = timed([a.nodus, "run", "--gpu", "H100:8", "--sample-interval", "50ms", "--",
                              "sleep", f"{seconds:.2f}"], env, work, label)
    row = job_row(home)
    return {"label": label, "rc": rc, "wall": wall, "maxrss_kib": maxrss, "samples": row["gpu_samples"]}


def flood_case(a, work, kind, rep):
    home = tempfile.mkdtemp(prefix=f"{kind}-", dir=work)
    env = base_env(home, NODUS_LOCAL_GPUS="H100:2")
    common = [a.nodus, "run", "--gpu", "H100:2", "--max-cost", "0.01", "--grace", "1s"]
    if kind == "regex-300k":
        cmd = common + ["--metric-regex", "x=y ([0-9]+)", "--", "python3", "-c", PACED_300K]
    elif kind == "regex-yes":
        cmd = common + ["--metric-regex", "x=y ([0-9]+)", "--", "bash", "-c", "trap '' TERM; yes 'x=y 123'"]
    else:
        cmd = common + ["--", "bash", "-c",
                        "trap '' TERM; yes '{\"samples_per_sec\": 5, \"data_wait\": 0.25}' >> \"$NODUS_METRICS\""]
    rc, wall, maxrss = timed(cmd, env, work, f"{kind}-{rep}")
    row = job_row(home)
    t_cap = 0.01 * 3600 / (2 * RATE)
    over_ms = (row["ended"] - row["started"] - t_cap) * 1000
    store = sum(os.path.getsize(os.path.join(home, f)) for f in ("nodus.db", "nodus.db-wal")
                if os.path.exists(os.path.join(home, f)))
    subprocess.call(["rm", "-rf", home])  # the job's log of a flood is large
    return {"kind": kind, "rc": rc, "wall": wall, "maxrss_kib": maxrss, "over_ms": over_ms,
            "cost": row["cost"], "state": row["state"], "store": store}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nodus", required=True)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out")
    p.add_argument("--only", choices=["rss", "overshoot"])
    p.add_argument("--stretch", type=float, default=1.0,
                   help="run the long RSS case this many times longer (see rss_case)")
    a = p.parse_args()
    a.nodus = os.path.abspath(a.nodus)
    work = tempfile.mkdtemp(prefix="nodus-input-bench-")
    L = ["# Hostile input: supervisor memory and cap overshoot", "",
         f"nodus {a.nodus}, {os.cpu_count()} CPUs, load {open('/proc/loadavg').read().split()[:3]}, "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", ""]
    try:
        if a.only in (None, "rss"):
            short = rss_case(a, work, 60, "1-minute")
            long = rss_case(a, work, 86400, "24h-equivalent")
            L += ["## Supervisor peak RSS against the job's length (8 GPUs)", "",
                  "| series | GPU samples stored | wall s | peak RSS KiB (GNU time) |", "|---|---|---|---|"]
            for r in (short, long):
                L.append(f"| {r['label']} | {r['samples']} | {r['wall']:.1f} | {r['maxrss_kib']} |")
            ratio = long["maxrss_kib"] / short["maxrss_kib"]
            L += ["", f"Ratio {ratio:.2f}x (goal: within 2x).", ""]
            print("\n".join(L[-8:]), file=sys.stderr)
        if a.only in (None, "overshoot"):
            L += ["## Cap overshoot under a flood ($0.01 on 2 x H100, cap at 6.923 s, job ignores SIGTERM)", "",
                  "| flood | run | exit | state | ended past the cap deadline (ms) | cost USD | peak RSS KiB | store bytes |",
                  "|---|---|---|---|---|---|---|---|"]
            for kind in ("regex-300k", "regex-yes", "metrics-file"):
                runs = [flood_case(a, work, kind, i) for i in range(a.reps)]
                for i, r in enumerate(runs):
                    L.append(f"| {kind} | {i + 1} | {r['rc']} | {r['state']} | {r['over_ms']:.1f} | "
                             f"{r['cost']:.6f} | {r['maxrss_kib']} | {r['store']} |")
                    print(L[-1], file=sys.stderr)
                L.append(f"| {kind} | median | | | {statistics.median(r['over_ms'] for r in runs):.1f} | "
                         f"{statistics.median(r['cost'] for r in runs):.6f} | "
                         f"{statistics.median(r['maxrss_kib'] for r in runs):.0f} | |")
            L.append("")
    finally:
        subprocess.call(["rm", "-rf", work])
    text = "\n".join(L) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
