# A training loop whose DataLoader takes no flags at all (batch_size 16, the default num_workers
# of 0): what a script looks like before anyone made its loader tunable. Knows nothing of nodus.
# A sample takes 1 ms to load (a sleep, as a read would: it does not compete for the CPU) and a
# step 40 ms (a sleep standing in for the GPU's work): in the main process the loop waits
# 16 ms of every 56 for its batch; one worker loads ahead of it. Each sample carries the id of
# the worker that made it; at the end the script says which workers made its batches and how
# many worker processes it saw alive while it iterated.
import multiprocessing
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Tagged(Dataset):
    def __len__(self):
        return 1280

    def __getitem__(self, i):
        time.sleep(0.001)
        info = get_worker_info()
        return torch.randn(8), -1 if info is None else info.id


def main():
    model = torch.nn.Linear(8, 1)
    seen, alive = set(), 0
    for x, worker in DataLoader(Tagged(), batch_size=16, shuffle=False):
        model(x).sum().backward()
        time.sleep(0.04)
        seen.update(worker.tolist())
        alive = max(alive, len(multiprocessing.active_children()))
    print("workers that made batches: %s" % sorted(seen))
    print("worker processes alive: %d" % alive)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
