# A training loop with an eval loader besides the train loader: every --eval-every steps it
# runs a few eval batches. Knows nothing of nodus. The train loader is iterated most, so it
# drives the figures; the eval loader is listed beside it.
import argparse
import time

import torch
from torch.utils.data import DataLoader, TensorDataset


class Slow(torch.utils.data.Dataset):
    def __init__(self, n, sample_ms):
        self.x = torch.randn(n, 16)
        self.y = torch.randint(0, 4, (n,))
        self.sample_s = sample_ms / 1000.0

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(self.sample_s)
        return self.x[i], self.y[i]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--sample-ms", type=float, default=0.5)
    a = p.parse_args()
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train = DataLoader(Slow(a.steps * 8, a.sample_ms), batch_size=8, shuffle=True)
    evalset = DataLoader(TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,))),
                         batch_size=32)
    for step, (x, y) in enumerate(train):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % a.eval_every == 0:
            with torch.no_grad():
                correct = sum((model(ex).argmax(1) == ey).sum().item() for ex, ey in evalset)
            print("step %d loss %.3f eval acc %.3f" % (step + 1, loss.item(), correct / 64.0))


if __name__ == "__main__":
    main()
