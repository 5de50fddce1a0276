# A loop that breaks out of its loader early (a step budget smaller than the epoch), then
# keeps running without it for a while. Knows nothing of nodus.
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    budget = int(sys.argv[1]) if len(sys.argv) > 1 else 150
    data = TensorDataset(torch.randn(100000, 4), torch.randn(100000, 1))
    model = torch.nn.Linear(4, 1)
    for step, (x, y) in enumerate(DataLoader(data, batch_size=25)):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        end = time.perf_counter() + 0.02  # compute dominates: data wait stays far below 10%
        while time.perf_counter() < end:
            pass
        if step + 1 == budget:
            print("budget of %d steps reached, loss %.4f" % (budget, loss.item()))
            break
    time.sleep(0.5)
    print("after the loop")


if __name__ == "__main__":
    main()
