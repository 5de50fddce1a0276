# An IterableDataset (a stream with no length), batched by the DataLoader; prints its own
# "it N" lines every 100 batches. Knows nothing of nodus.
import sys
import time

import torch
from torch.utils.data import DataLoader, IterableDataset


class Stream(IterableDataset):
    def __init__(self, n, sample_ms):
        self.n = n
        self.sample_s = sample_ms / 1000.0

    def __iter__(self):
        for i in range(self.n):
            time.sleep(self.sample_s)
            yield torch.full((8,), float(i))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    total = 0.0
    for i, batch in enumerate(DataLoader(Stream(n, 0.5), batch_size=10)):
        total += batch.sum().item()
        if i % 100 == 0:
            print("it %d total %.1f" % (i, total))
    print("sum", total)


if __name__ == "__main__":
    main()
