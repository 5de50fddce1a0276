#!/usr/bin/env python3
# The Python hook's overhead, side by side: the same loop (loop.py) with and without nodus's
# sitecustomize on PYTHONPATH, runs alternating so that machine load hits both alike, medians
# over the repeats. Usage: overhead.py [--python /usr/bin/python3] [--repeats 7] [--out FILE]
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
p = argparse.ArgumentParser()
p.add_argument("--python", default="/usr/bin/python3")
p.add_argument("--repeats", type=int, default=7)
p.add_argument("--out", default="")
p.add_argument("--micro-only", action="store_true", help="only the in-process cost per batch")
a = p.parse_args()

cases = [("tiny step (in-memory batches of 32, no compute)", ["--step-ms", "0", "--batches", "3000"]),
         ("1 ms step", ["--step-ms", "1", "--batches", "1500"]),
         ("10 ms step", ["--step-ms", "10", "--batches", "300"])]
lines = []


def run(args, hook_dir):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if hook_dir:
        env["PYTHONPATH"] = hook_dir
        env["NODUS_HOOK_DIR"] = hook_dir
        env["NODUS_WARMUP"] = "20"
    out = subprocess.run([a.python, os.path.join(here, "loop.py")] + args, env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.split("loop_samples_per_sec")[1].split()[0])


for name, args in ([] if a.micro_only else cases):
    off, on = [], []
    for r in range(a.repeats):
        d = tempfile.mkdtemp(prefix="nodus-hook-")
        shutil.copy(os.path.join(root, "telemetry/pyhook/sitecustomize.py"), d)
        pair = [(off, None), (on, d)] if r % 2 == 0 else [(on, d), (off, None)]
        for sink, hook in pair:
            sink.append(run(args, hook))
        if not os.path.exists(os.path.join(d, "auto-0.jsonl")):
            sys.exit("the hook wrote nothing: it was not active")
        shutil.rmtree(d)
    m_off, m_on = statistics.median(off), statistics.median(on)
    per_batch_us = (1e6 * 32 / m_on - 1e6 * 32 / m_off)
    lines.append("| %s | %.0f | %.0f | %+.2f%% | %.1f |" % (
        name, m_off, m_on, 100.0 * (m_on - m_off) / m_off, per_batch_us))
    print(lines[-1], flush=True)

header = ["| loop | samples/s without hook (median of %d) | with hook | change | us per batch |"
          % a.repeats, "| --- | ---: | ---: | ---: | ---: |"]
text = "\n".join(header + lines) + "\n"
print(text)
if a.out and not a.micro_only:
    with open(a.out, "w") as f:
        f.write(text)

# The hook's own cost per batch, in one process, in CPU time of this thread (so a loaded machine
# that preempts the process does not inflate it): 200k batches through the real wrapper,
# the wrapped __next__ against the unwrapped one.
import importlib.util
import time
spec = importlib.util.spec_from_file_location("nodus_hook", os.path.join(root, "telemetry/pyhook/sitecustomize.py"))
d = tempfile.mkdtemp(prefix="nodus-hook-")
os.environ["NODUS_HOOK_DIR"] = d
os.environ["NODUS_WARMUP"] = "20"
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
import torch  # noqa: E402


class FakeModule(object):
    class _BaseDataLoaderIter(object):
        _dataset = object()

        def __next__(self):
            return batch


batch = (torch.zeros(32, 8), torch.zeros(32))
plain = FakeModule._BaseDataLoaderIter.__next__
hook = mod._NodusHook(d)
mod._nodus_patch(FakeModule, hook)  # the real wrapper: clocks, frame, record()
it = FakeModule._BaseDataLoaderIter()
wrapped = type(it).__next__
n = 200000
cpu = time.thread_time
best = None
for rep in range(5):
    t0 = cpu()
    for i in range(n):
        wrapped(it)
    t1 = cpu()
    for i in range(n):
        plain(it)
    t2 = cpu()
    per = ((t1 - t0) - (t2 - t1)) / n * 1e6
    best = per if best is None else min(best, per)
shutil.rmtree(d)
line = "hook cost per batch (in-process CPU time, best of 5 x %d calls): %.2f us" % (n, best)
print(line)
if a.out:
    with open(a.out, "a") as f:
        f.write("\n" + line + "\n")
