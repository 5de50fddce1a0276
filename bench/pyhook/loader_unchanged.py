#!/usr/bin/env python3
# The DataLoader figures of two versions of the Python hook side by side: tests/data/pytorch/
# plain_loop.py (a DataLoader loop that knows nothing of nodus) under each hook, alternating,
# the hook's steady samples/s and data wait (mean of its steady lines), medians over repeats.
# The older hook comes from git: loader_unchanged.py --old REV (default HEAD~1).
#   python3 bench/pyhook/loader_unchanged.py --old 438dc8e --repeats 3
import argparse
import json
import os
import statistics
import subprocess
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
p = argparse.ArgumentParser()
p.add_argument("--old", default="HEAD~1")
p.add_argument("--python", default="/usr/bin/python3")
p.add_argument("--repeats", type=int, default=3)
a = p.parse_args()

work = tempfile.mkdtemp(prefix="nodus-loader-unchanged.")
old = os.path.join(work, "old")
os.makedirs(old)
with open(os.path.join(old, "sitecustomize.py"), "w") as f:
    f.write(subprocess.run(["git", "-C", root, "show", a.old + ":telemetry/pyhook/sitecustomize.py"],
                           check=True, capture_output=True, text=True).stdout)
hooks = {"old (%s)" % a.old: old, "new": os.path.join(root, "telemetry", "pyhook")}


def run(hook_dir, workers):
    out = tempfile.mkdtemp(dir=work)
    env = dict(os.environ, NODUS_HOOK_DIR=out, PYTHONPATH=hook_dir, NODUS_WARMUP="10")
    subprocess.run([a.python, os.path.join(root, "tests/data/pytorch/plain_loop.py"), "--workers",
                    str(workers), "--steps", "250", "--sample-ms", "1.2", "--step-ms", "10"],
                   env=env, stdout=subprocess.DEVNULL, check=True)
    with open(os.path.join(out, "auto-0.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    steady = [r for r in rows if r.get("phase") == 1]
    return (statistics.mean(r["samples_per_sec"] for r in steady),
            statistics.mean(r["data_wait"] for r in steady if "data_wait" in r))


print("| num_workers | hook | samples/s (median; each run) | data wait (median) |")
print("| ---: | --- | --- | ---: |")
for workers in (0, 2):
    results = dict((name, []) for name in hooks)
    for _ in range(a.repeats):
        for name, hook_dir in hooks.items():
            results[name].append(run(hook_dir, workers))
    for name, runs in results.items():
        sps = [r[0] for r in runs]
        print("| %d | %s | %.1f (%s) | %.2f%% |" % (
            workers, name, statistics.median(sps), ", ".join("%.1f" % x for x in sps),
            100 * statistics.median(r[1] for r in runs)))
