# A 2-process data-parallel job on CPU (gloo) with no DataLoader: each rank makes its own
# batches in a plain generator, and --slow-rank's generator sleeps --fetch-ms per batch, so that
# rank lags and the other waits for it at every gradient sync. With torchrun (RANK set) each
# process is one rank; run directly, it spawns its two ranks itself with torch.multiprocessing
# (Debian's torchrun 1.13 fails on Python 3.11 before starting any worker). Knows nothing of
# nodus.
import argparse
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel


def batches(rank, a):
    g = torch.Generator().manual_seed(rank)
    while True:
        if rank == a.slow_rank and a.fetch_ms > 0:
            time.sleep(a.fetch_ms / 1000.0)
        yield torch.randn(16, 64, generator=g), torch.randn(16, 1, generator=g)


def train(rank, world, port, a):
    if port is not None:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                          WORLD_SIZE=str(world))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                                        torch.nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (x, y) in enumerate(batches(rank, a)):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print("rank %d step %d loss %.4f" % (rank, step, loss.item()), flush=True)
        if step + 1 >= a.steps:
            break
    dist.destroy_process_group()
    print("rank %d done" % rank, flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--slow-rank", type=int, default=1)
    p.add_argument("--fetch-ms", type=float, default=20.0)
    a = p.parse_args()
    if "RANK" in os.environ:
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), None, a)
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(train, args=(2, port, a), nprocs=2)


if __name__ == "__main__":
    main()
