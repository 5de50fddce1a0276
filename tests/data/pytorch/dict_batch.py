# Batches that are dicts of tensors (a tokenizer-style dataset): the samples per batch are
# the leading dimension of the first tensor in the dict. Knows nothing of nodus.
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Tokens(Dataset):
    def __len__(self):
        return 3000

    def __getitem__(self, i):
        time.sleep(0.0005)
        return {"input_ids": torch.full((12,), i % 100), "attention_mask": torch.ones(12),
                "label": torch.tensor(i % 2)}


def main():
    bs = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    seen = 0
    for step, batch in enumerate(DataLoader(Tokens(), batch_size=bs)):
        seen += batch["input_ids"].shape[0]
        if step % 50 == 0:
            print("step %d seen %d" % (step, seen))
    print("seen", seen)


if __name__ == "__main__":
    main()
