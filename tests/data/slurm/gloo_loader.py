"""Data-parallel steps over gloo, one rank per node, for `nodus run --nodes N` (tests/slurm).

Knows nothing of nodus: each rank iterates a DataLoader and all-reduces a gradient-sized tensor
at every step, as DistributedDataParallel does. The last rank's dataset is slow (a sleep per
sample), so every other rank waits for it at each all-reduce: the rank that lags is the last.
Rendezvous from the environment (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK).
"""

import datetime
import os
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=120))
rank, world = dist.get_rank(), dist.get_world_size()


class Samples(Dataset):
    def __init__(self, delay):
        self.delay = delay

    def __len__(self):
        return 8 * 150

    def __getitem__(self, i):
        if self.delay:
            time.sleep(self.delay)
        return torch.full((16,), float(i))


loader = DataLoader(Samples(0.004 if rank == world - 1 else 0.0), batch_size=8)
grad = torch.zeros(1024)
for batch in loader:
    grad.fill_(batch.mean().item())
    dist.all_reduce(grad)
print(f"rank {rank}/{world} on {os.environ.get('SLURMD_NODENAME', '?')}: done", flush=True)
dist.barrier()
dist.destroy_process_group()
