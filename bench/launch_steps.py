#!/usr/bin/env python3
"""Where the launch time goes: each step of `nodus run -- /bin/true`, timed by nodus itself.

    python3 bench/launch_steps.py --nodus BUILD/nodus [--runs 40] [--out FILE]

Runs `NODUS_TIMING=1 nodus run -- /bin/true` --runs times in a fresh store (core/timing.h: one
stderr line per step with the wall and CPU milliseconds since the step before, CPU being this
process's, which other processes' load inflates less than wall time), and `/bin/true` alone as
often, interleaved. Writes a markdown table of the median of each step (the whole run's wall time
measured from here, too) to --out (default: stdout). The steps before "main" (exec, the dynamic
loader, static constructors) and after "end reported" (destructors, exit) are in the whole
run's time but in no step: the table says how much that is.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

STEP = re.compile(r"nodus: timing: ([\d.]+) ms \(\+([\d.]+), cpu \+([\d.]+)(?:, faults \+(\d+))?\) (.*)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodus", required=True)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--out")
    a = ap.parse_args()
    home = tempfile.mkdtemp(prefix="launch-steps-")
    env = dict(os.environ, NODUS_HOME=home, NODUS_TIMING="1")
    env.pop("CI", None)
    steps = {}  # name -> [(wall, cpu, faults)], in first-seen order
    whole, direct, last_step = [], [], []
    load_start = os.getloadavg()
    for _ in range(a.runs):
        t0 = time.perf_counter()
        p = subprocess.run([a.nodus, "run", "--", "/bin/true"], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        whole.append((time.perf_counter() - t0) * 1000)
        if p.returncode != 0:
            sys.exit(f"nodus run -- /bin/true: exit {p.returncode}: {p.stderr.decode()[-300:]}")
        at = 0.0
        for line in p.stderr.decode(errors="replace").splitlines():
            m = STEP.match(line)
            if m:
                at = float(m.group(1))
                faults = int(m.group(4)) if m.group(4) else 0
                steps.setdefault(m.group(5), []).append((float(m.group(2)), float(m.group(3)), faults))
        last_step.append(at)
        t0 = time.perf_counter()
        subprocess.run(["/bin/true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        direct.append((time.perf_counter() - t0) * 1000)
    load_end = os.getloadavg()
    med = statistics.median
    out = [f"# Where `nodus run -- /bin/true` spends its time",
           "",
           f"Written by `bench/launch_steps.py` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
           f"{a.runs} runs interleaved with `/bin/true` alone, {os.cpu_count()} CPUs, load average "
           f"{' '.join(f'{x:.2f}' for x in load_start)} at the start and "
           f"{' '.join(f'{x:.2f}' for x in load_end)} at the end. Each step's figures are medians over "
           "the runs, timed by nodus itself (`NODUS_TIMING=1`, core/timing.h); CPU is the nodus "
           "process's own (its threads, not its children: the job and the sentinel), and so are its "
           "minor page faults (getrusage), which cost tens of microseconds each on this kind of VM.",
           "",
           "| step (what ended at it) | wall ms | CPU ms | minor faults |",
           "|---|---|---|---|"]
    for name, v in steps.items():
        out.append(f"| {name} | {med(w for w, _, _ in v):.2f} | {med(c for _, c, _ in v):.2f} | "
                   f"{med(f for _, _, f in v):.0f} |")
    in_steps = med(last_step)
    out += ["",
            f"- Whole run, as a caller sees it: {med(whole):.2f} ms (min {min(whole):.2f}); "
            f"`/bin/true` alone: {med(direct):.2f} ms; over a direct exec: {med(whole) - med(direct):+.2f} ms.",
            f"- From the first step to the last: {in_steps:.2f} ms; before the first and after the last "
            f"(exec, dynamic loading, static constructors, destructors, exit): "
            f"{med(whole) - in_steps:.2f} ms.",
            ""]
    text = "\n".join(out)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
