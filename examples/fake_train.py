#!/usr/bin/env python3
"""A stand-in for a training job, without torch, for fast tests of nodus sweeps and metrics.

It reports what a data-loading-bound job would: each loading process supplies --loader-rate
samples/s (num_workers 0 means the main process loads), the GPU consumes at most --gpu-rate, so

    samples_per_sec = min(gpu_rate, loader_rate * max(1, num_workers))
    data_wait       = 1 - samples_per_sec / gpu_rate

and appends {"t", "step", "samples_per_sec", "data_wait"} lines to $NODUS_METRICS every
--report-every steps, printing a progress line each time. With the defaults the shape follows
the H200 measurements in nodus's docs (1038 samples/s with no workers, the GPU's 8400 at 14).

    python3 examples/fake_train.py --num-workers 4 --steps 20 --step-seconds 0.01
"""

import argparse
import json
import os
import sys
import time


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--report-every", type=int, default=5)
    p.add_argument("--step-seconds", type=float, default=0.01, help="sleep per step")
    p.add_argument("--loader-rate", type=float, default=1038.0)
    p.add_argument("--gpu-rate", type=float, default=8400.0)
    p.add_argument("--exit-code", type=int, default=0, help="exit with this status at the end")
    p.add_argument("--hf-summary", action="store_true",
                   help="end with a Hugging Face Trainer-style summary line on stdout")
    args = p.parse_args(argv)
    if args.num_workers < 0 or args.steps < 1 or args.report_every < 1:
        sys.exit("fake_train.py: --num-workers must be >= 0, --steps and --report-every >= 1")

    rate = min(args.gpu_rate, args.loader_rate * max(1, args.num_workers))
    wait = 1.0 - rate / args.gpu_rate
    path = os.environ.get("NODUS_METRICS")
    for step in range(1, args.steps + 1):
        time.sleep(args.step_seconds)
        if step % args.report_every and step != args.steps:
            continue
        line = {"t": round(time.time(), 3), "step": step, "samples_per_sec": round(rate, 2),
                "data_wait": round(wait, 4)}
        if path:
            with open(path, "a") as f:
                f.write(json.dumps(line) + "\n")
        print(f"step {step}/{args.steps}  {rate:.1f} samples/s  data wait {wait:.0%}", flush=True)
    if args.hf_summary:
        print({"train_runtime": round(args.steps * args.step_seconds, 4),
               "train_samples_per_second": round(rate, 3), "epoch": 1.0}, flush=True)
    sys.exit(args.exit_code)


if __name__ == "__main__":
    main(sys.argv[1:])
