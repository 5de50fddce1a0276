#!/usr/bin/env python3
"""Run inside a nodus job on a multi-GPU machine: checks that the job sees exactly the GPUs nodus
assigned (CUDA_VISIBLE_DEVICES), that torch agrees, and which physical GPU it is, then trains.

usage: check_gpu.py NUM_WORKERS BATCH_SIZE [STEPS]"""
import json, os, subprocess, sys

import torch

visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
expected = len([v for v in visible.split(",") if v != ""])
count = torch.cuda.device_count()
uuids = []
for i in range(count):
    uuids.append(str(torch.cuda.get_device_properties(i).uuid))
smi = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout
physical = {line.split(", ")[1].strip().replace("GPU-", ""): line.split(", ")[0] for line in smi.splitlines() if line}
seen = [physical.get(u.replace("GPU-", ""), "?") for u in uuids]
print(json.dumps({"check": True, "job": os.environ.get("NODUS_JOB_ID"), "visible": visible,
                  "device_count": count, "expected": expected, "physical_indices": seen,
                  "ok": count == expected and ",".join(seen) == visible}), flush=True)
if count != expected:
    sys.exit(3)
steps = sys.argv[3] if len(sys.argv) > 3 else "40"
os.execvp(sys.executable, [sys.executable, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "train.py"),
                           "--model", "resnet18", "--num-workers", sys.argv[1], "--batch-size", sys.argv[2],
                           "--image-size", "128", "--warmup", "5", "--steps", steps])
