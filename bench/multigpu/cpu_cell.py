#!/usr/bin/env python3
"""A stand-in cell for dry runs of cpusets.sh where there is no GPU and no torch: like PyTorch's
CPU work, it starts one busy worker per core it believes it has (OMP_NUM_THREADS when set, else
every core of the machine, as torch's default does), and appends its throughput (work units per
second, summed over the workers) to $NODUS_METRICS once a second, as examples/train.py does.

usage: cpu_cell.py SECONDS"""
import json
import multiprocessing as mp
import os
import sys
import time


def work(counter, stop):
    n = 0
    while not stop.is_set():
        for _ in range(20000):
            n += 1
        with counter.get_lock():
            counter.value += 1


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30
    threads = int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count())
    counter, stop = mp.Value("q", 0), mp.Event()
    procs = [mp.Process(target=work, args=(counter, stop)) for _ in range(threads)]
    for p in procs:
        p.start()
    path = os.environ.get("NODUS_METRICS")
    t0 = time.monotonic()
    last_t, last_n, step = t0, 0, 0
    while time.monotonic() - t0 < seconds:
        time.sleep(1)
        now, n = time.monotonic(), counter.value
        step += 1
        line = {"t": round(time.time(), 3), "step": step,
                "samples_per_sec": round((n - last_n) / (now - last_t), 2)}
        if path:
            with open(path, "a") as f:
                f.write(json.dumps(line) + "\n")
        print(f"step {step} {line['samples_per_sec']} units/s on {threads} workers "
              f"(NODUS_CPUS={os.environ.get('NODUS_CPUS', '-')})", flush=True)
        last_t, last_n = now, n
    stop.set()
    for p in procs:
        p.join()


if __name__ == "__main__":
    main()
