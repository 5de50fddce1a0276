# Turns TF32 off before its loop, as a script that wants exact FP32 does, then iterates a
# DataLoader and prints the flags as they are after the loop. Knows nothing of nodus.
import torch
from torch.utils.data import DataLoader

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
total = 0
for batch in DataLoader(list(range(64)), batch_size=8):
    total += int(batch.sum())
print("sum", total)
print("tf32 matmul", torch.backends.cuda.matmul.allow_tf32,
      "cudnn", torch.backends.cudnn.allow_tf32)
