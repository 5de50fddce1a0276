# A 2-process data-parallel job on CPU (gloo). With torchrun (RANK set) each process is one
# rank; run directly, it spawns its two ranks itself with torch.multiprocessing (Debian's
# torchrun 1.13 fails on Python 3.11 before starting any worker). Each rank reads its shard
# through a DistributedSampler and prints its own lines. Knows nothing of nodus.
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Synthetic(Dataset):
    def __len__(self):
        return 2400

    def __getitem__(self, i):
        time.sleep(0.0005)
        return torch.randn(8), torch.randn(1)


def train(rank, world, port):
    if port is not None:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                          WORLD_SIZE=str(world))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = Synthetic()
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print("rank %d step %d loss %.4f" % (rank, step, loss.item()), flush=True)
    dist.destroy_process_group()
    print("rank %d done" % rank, flush=True)


def main():
    if "RANK" in os.environ:
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), None)
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(train, args=(2, port), nprocs=2)


if __name__ == "__main__":
    main()
