# A plain PyTorch training loop that knows nothing of nodus: a map-style synthetic dataset whose
# samples cost --sample-ms each to produce (a sleep: the loader waits, it does not compute), a
# tiny model, its own "step N loss X" lines. Built to show a loader-starved job at
# --workers 0 (most of each step is data wait) that more workers fix.
import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Synthetic(Dataset):
    def __init__(self, n, sample_ms):
        self.n = n
        self.sample_s = sample_ms / 1000.0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.sample_s > 0:
            time.sleep(self.sample_s)
        g = torch.Generator().manual_seed(i)
        return torch.randn(32, generator=g), i % 10


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--sample-ms", type=float, default=1.0)
    p.add_argument("--step-ms", type=float, default=0.0, help="extra compute per step")
    a = p.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Synthetic(a.steps * a.batch, a.sample_ms), batch_size=a.batch,
                        num_workers=a.workers, shuffle=False)
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if a.step_ms > 0:
            end = time.perf_counter() + a.step_ms / 1000.0
            while time.perf_counter() < end:
                pass
        if step % 50 == 0:
            print("step %d loss %.4f" % (step, loss.item()))
    print("done %d steps" % (step + 1))


if __name__ == "__main__":
    main()
