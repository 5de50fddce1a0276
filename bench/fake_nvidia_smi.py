#!/usr/bin/env python3
"""A stand-in for `nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N`, for the
supervisor benchmarks on a machine without GPUs (bench/run.sh puts it on PATH as nvidia-smi for
one job only). Every N ms it prints one CSV line per GPU (FAKE_SMI_GPUS, default 10) in the
field order nodus asks for: timestamp, index, utilization.gpu, utilization.memory, memory.used,
power.draw, clocks.sm, pcie.link.gen.current. FAKE_SMI_BURST (default 1) rounds are printed per
emission, so a long series (24 h of 1 s rounds) can be delivered in minutes. It answers nothing
else."""
import datetime
import os
import sys
import time

args = sys.argv[1:]
if "-lms" not in args:
    sys.exit("fake nvidia-smi: only the streaming query (-lms N) is supported")
interval = int(args[args.index("-lms") + 1]) / 1000
gpus = int(os.environ.get("FAKE_SMI_GPUS", "10"))
burst = int(os.environ.get("FAKE_SMI_BURST", "1"))
while True:
    now = datetime.datetime.now()
    stamp = now.strftime("%Y/%m/%d %H:%M:%S.") + f"{now.microsecond // 1000:03d}"
    sys.stdout.write("".join(f"{stamp}, {i}, 87, 40, 50000, 600.50, 1980, 5\n" for i in range(gpus)) * burst)
    sys.stdout.flush()
    time.sleep(interval)
