#!/usr/bin/env python3
"""Writes the synthetic telemetry series used by tests/telemetry/diagnosis_test.cc.

One row per second: t, gpu, util (a GPU sample; empty gpu = none that second), data_wait (a
report from the job; empty = none), cpu_percent, cores, max_process_cpu (a host sample).
Seeded, so re-running it reproduces the committed files.
"""
import random

T0 = 1795000000.0


def write(name, rows):
    with open(name, "w") as f:
        f.write("t,gpu,util,data_wait,cpu_percent,cores,max_process_cpu\n")
        for r in rows:
            f.write(",".join("" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))
                             for v in r) + "\n")


def series(name, n, util, wait_every, wait, host, gpus=(0,), seed=1):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        t = T0 + i
        dw = None
        if wait is not None and i % wait_every == wait_every - 1:
            dw = wait(i, rng)
        cpu, cores, peak = host(i, rng) if host else (None, None, None)
        for k, g in enumerate(gpus):
            u = util(i, rng) if util else None
            rows.append((t, g if u is not None else None, u, dw if k == 0 else None,
                         cpu if k == 0 else None, cores if k == 0 else None,
                         peak if k == 0 else None))
    write(name, rows)


def clamp(x):
    return max(0.0, min(100.0, x))


# Loader starved (num_workers=4 on 16 cores, docs/facts.md's 83% data wait): 2 s busy, 3 s idle.
series("loader_starved.csv", 60,
       lambda i, r: clamp(90 + r.uniform(-5, 5)) if i % 5 < 2 else clamp(r.uniform(0, 4)),
       5, lambda i, r: 0.95 if i < 5 else 0.83 + r.uniform(-0.02, 0.02),
       lambda i, r: (500 + r.uniform(-30, 30), 16, 100.0))
# CPU-bound: 14 workers keep all 16 cores busy, batches still late.
series("cpu_bound.csv", 60,
       lambda i, r: clamp(70 + r.uniform(-15, 15)) if i % 4 else clamp(r.uniform(0, 20)),
       5, lambda i, r: 0.24 + r.uniform(-0.02, 0.02),
       lambda i, r: (1520 + r.uniform(-40, 40), 16, 100.0))
# I/O-bound: nothing busy on the host, batches late (network storage).
series("io_bound.csv", 60,
       lambda i, r: clamp(85 + r.uniform(-5, 5)) if i % 3 == 0 else clamp(r.uniform(0, 3)),
       5, lambda i, r: 0.45 + r.uniform(-0.03, 0.03),
       lambda i, r: (120 + r.uniform(-20, 20), 16, 30 + r.uniform(-5, 5)))
# Sync-bound: no data wait, low and uneven utilization (the GPU idles inside the step).
series("sync_bound.csv", 60,
       lambda i, r: clamp(r.choice([15, 25, 35, 45, 55, 65]) + r.uniform(-5, 5)),
       5, lambda i, r: 0.01 + r.uniform(0, 0.01),
       lambda i, r: (110 + r.uniform(-10, 10), 16, 100.0))
# Launch-bound: steady 40%, no data wait (tiny kernels, small batch).
series("launch_bound.csv", 60,
       lambda i, r: clamp(40 + r.uniform(-4, 4)),
       5, lambda i, r: 0.01 + r.uniform(0, 0.01),
       lambda i, r: (105 + r.uniform(-5, 5), 16, 100.0))
# Busy, two GPUs.
series("busy.csv", 60,
       lambda i, r: clamp(95 + r.uniform(-3, 4)),
       5, lambda i, r: 0.01,
       lambda i, r: (400 + r.uniform(-20, 20), 16, 100.0), gpus=(0, 1))
# Sawtooth with low utilization and no data_wait reports.
series("sawtooth_no_wait.csv", 60,
       lambda i, r: clamp(88 + r.uniform(-5, 5)) if i % 2 == 0 else clamp(r.uniform(0, 5)),
       5, None, None)
# Host samples and reports, no GPU samples.
series("no_gpu.csv", 30, None, 5, lambda i, r: 0.02, lambda i, r: (100.0, 8, 100.0))
