#!/usr/bin/env python3
"""GPU workloads with no DataLoader, for recording telemetry fixtures on a CUDA machine.

  gpu_loop.py busy [seconds]  back-to-back bf16 matmuls: the GPU never waits
  gpu_loop.py sync [seconds]  ~15 ms of matmuls, then loss.item() and ~25 ms of host work per
                              step: the GPU idles inside every step, data wait 0

Appends {"t", "step", "data_wait": 0} to $NODUS_METRICS about once a second (the data is
already on the GPU, so the loop never waits for a batch).
"""
import json
import os
import sys
import time

import torch


def main():
    mode = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 20
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    path = os.environ.get("NODUS_METRICS")
    end = time.time() + seconds
    last_report = time.time()
    step = 0
    while time.time() < end:
        for _ in range(10 if mode == "sync" else 50):
            y = x @ x
        if mode == "sync":
            float(y[0, 0].item())  # a host-device sync, as logging a loss does
            time.sleep(0.025)      # Python-side work while the GPU has nothing queued
        else:
            torch.cuda.synchronize()
        step += 1
        if path and time.time() - last_report >= 1:
            last_report = time.time()
            with open(path, "a") as f:
                f.write(json.dumps({"t": round(last_report, 3), "step": step, "data_wait": 0.0})
                        + "\n")


if __name__ == "__main__":
    main()
