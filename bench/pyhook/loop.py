# The loop the hook's overhead is measured on: an in-memory DataLoader (so the hook's per-batch
# cost is not hidden behind loading) and a step of --step-ms of matrix work. Prints its own
# throughput over the batches after the first --skip, measured by itself.
import argparse
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--batches", type=int, default=3000)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--step-ms", type=float, default=0.0)
p.add_argument("--skip", type=int, default=100)
a = p.parse_args()
torch.set_num_threads(1)
data = TensorDataset(torch.randn(a.batches * a.batch, 8), torch.randn(a.batches * a.batch, 1))
w = torch.randn(64, 64)
start = None
for i, (x, y) in enumerate(DataLoader(data, batch_size=a.batch)):
    if i == a.skip:
        start = time.perf_counter()
    if a.step_ms > 0:
        end = time.perf_counter() + a.step_ms / 1000.0
        while time.perf_counter() < end:
            w = (w @ w).clamp_(-1, 1)
n = (a.batches - a.skip) * a.batch
print("loop_samples_per_sec %.1f" % (n / (time.perf_counter() - start)))
