"""One rank of a CPU all-reduce over gloo, for `nodus run --nodes N` (tests/slurm).

The rendezvous comes from the environment nodus sets on each node: MASTER_ADDR, MASTER_PORT,
WORLD_SIZE and RANK (init_method="env://"). Each rank adds rank + 1 into a tensor; every rank
must then hold 1 + 2 + ... + N. Prints one line per rank and exits 1 on a wrong sum.
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=120))
rank, world = dist.get_rank(), dist.get_world_size()
tensor = torch.full((4,), float(rank + 1))
dist.all_reduce(tensor)
expected = world * (world + 1) / 2
ok = all(v == expected for v in tensor.tolist())
print(
    f"rank {rank}/{world} on {os.environ.get('SLURMD_NODENAME', '?')}: all_reduce sum "
    f"{tensor[0].item():g} (expected {expected:g}) {'ok' if ok else 'WRONG'}",
    flush=True,
)
dist.barrier()
dist.destroy_process_group()
sys.exit(0 if ok else 1)
