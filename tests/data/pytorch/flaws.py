# A PyTorch training loop that knows nothing of nodus, with one deliberate flaw per --flaw, each
# built to show one row of the symptom -> cause -> fix table (and "healthy" built to show none):
#   healthy         batched fetch from memory in 8 worker processes, bf16 autocast on CUDA, a
#                   model large enough to keep the GPU busy, loss logged every 100 steps
#   loader-main     the same, but num_workers=0 and a per-sample transform: the loop loads
#                   its own batches (data wait)
#   cpu-transforms  a heavy per-sample transform in one worker per core: the cores saturate
#   slow-storage    samples read from a file on disk with the page cache dropped (random 1 KiB
#                   reads, no readahead): the workers wait for storage, the CPU idles
#   item            three .item() calls every step (loss, accuracy, gradient norm for logging)
#   tiny-batch      batch 8 through a deep, narrow model: thousands of tiny kernels
#   fp32            the healthy model without autocast, TF32 off: FP32 matrix math
# Runs on CPU too (smaller sizes): there only the rows a CPU can show apply. Stops after
# --steps batches or --seconds, whichever comes first; prints its own samples/s after step 20.
import argparse
import os
import time

import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler

FEATURES = 256  # one sample: 256 floats, seen by the model as a 1x16x16 image


def transform(x, rounds):
    # A per-sample "augmentation": normalize and smooth, `rounds` times (CPU work per sample).
    for _ in range(rounds):
        x = (x - x.mean()) / (x.std() + 1e-6)
        x = torch.fft.irfft(torch.fft.rfft(x) * 0.5, n=x.numel())
    return x


class Pool(Dataset):
    # Fetches a whole batch per __getitem__ (a list of indices from a BatchSampler).
    def __init__(self, n, rounds):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, FEATURES, generator=g)
        self.y = torch.randint(0, 10, (n,), generator=g)
        self.rounds = rounds

    def __len__(self):
        return len(self.x)

    def __getitem__(self, idx):
        x = self.x[idx]
        if self.rounds:
            x = torch.stack([transform(x[i], self.rounds) for i in range(len(idx))])
        return x, self.y[idx]


class OnDisk(Dataset):
    # Rows of a file read with pread after dropping the file from the page cache: every batch
    # goes to the storage device, as a dataset on a slow or network disk would.
    def __init__(self, path, n):
        self.path, self.n = path, n
        self.row = FEATURES * 4
        if not os.path.exists(path) or os.path.getsize(path) != n * self.row:
            g = torch.Generator().manual_seed(0)
            with open(path, "wb") as f:
                for start in range(0, n, 4096):
                    k = min(4096, n - start)
                    f.write(torch.randn(k, FEATURES, generator=g).numpy().tobytes())
                f.flush()
                os.fsync(f.fileno())
        self.fd = None

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY)
            os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_RANDOM)
        os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_DONTNEED)
        buf = bytearray()
        for i in idx:
            buf += os.pread(self.fd, self.row, i * self.row)
        x = torch.frombuffer(buf, dtype=torch.float32).view(len(idx), FEATURES).clone()
        return x, torch.tensor([i % 10 for i in idx])


class Net(torch.nn.Module):
    def __init__(self, channels, width, depth):
        super().__init__()
        c = channels
        self.conv = torch.nn.Sequential(
            torch.nn.Conv2d(1, c, 3, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(c, 2 * c, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(2 * c, 4 * c, 3, stride=2, padding=1), torch.nn.ReLU())
        layers = [torch.nn.Flatten(), torch.nn.Linear(4 * c * 16, width), torch.nn.ReLU()]
        for _ in range(depth):
            layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        layers.append(torch.nn.Linear(width, 10))
        self.head = torch.nn.Sequential(*layers)

    def forward(self, x):
        return self.head(self.conv(x.view(-1, 1, 16, 16)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--flaw", default="healthy",
                   choices=["healthy", "loader-main", "cpu-transforms", "slow-storage", "item",
                            "tiny-batch", "fp32"])
    p.add_argument("--steps", type=int, default=100000)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--data-dir", default="/var/tmp")
    p.add_argument("--depth", type=int, default=None, help="hidden layers of the head")
    a = p.parse_args()
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    cores = len(os.sched_getaffinity(0))
    torch.manual_seed(0)

    # Sizes: on CUDA large enough to keep an H100-class GPU busy; on CPU small enough for CI.
    batch = (2048 if cuda else 64)
    channels, width, depth = (64, 8192, 3) if cuda else (8, 256, 2)
    workers = 8 if cuda else 1
    rounds = 0
    autocast = cuda
    if a.flaw == "healthy" and cuda:
        # Measured on the H200 (bench/h200/results-2026-12-01-profile): at depth 3 a step took
        # ~8.7 ms and 8 workers fell behind (data wait 11%: rightly called loader-starved); at
        # depth 6 a step takes ~12.3 ms and the loop waits 4.7%.
        depth = 6
    if a.flaw == "loader-main":
        # On CPU the model's step shares the cores with the loading: one round made the data wait
        # 8% with a compiler running beside it (under the 10% line); four make it ~20%.
        workers, rounds = 0, (1 if cuda else 4)
    elif a.flaw == "cpu-transforms":
        workers, rounds = cores, 8
    elif a.flaw == "slow-storage":
        workers = 8 if cuda else 2
    elif a.flaw == "tiny-batch":
        batch, channels, width, depth = 8, 8, 512, 12
    elif a.flaw == "fp32":
        autocast = False
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if a.workers is not None:
        workers = a.workers
    if a.batch is not None:
        batch = a.batch
    if a.depth is not None:
        depth = a.depth

    if a.flaw == "slow-storage":
        ds = OnDisk(os.path.join(a.data_dir, "nodus-flaws-%d.bin" % os.getuid()),
                    (262144 if cuda else 32768))
    else:
        ds = Pool(65536 if cuda else 4096, rounds)
    sampler = BatchSampler(RandomSampler(ds, replacement=True, num_samples=10 ** 9), batch,
                           drop_last=True)
    loader = DataLoader(ds, batch_size=None, sampler=sampler, num_workers=workers,
                        pin_memory=cuda, persistent_workers=workers > 0)
    model = Net(channels, width, depth).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    print("flaw %s on %s: batch %d, workers %d, autocast %s" %
          (a.flaw, dev, batch, workers, autocast), flush=True)

    start = time.perf_counter()
    t20, n20 = None, 0
    for step, (x, y) in enumerate(loader):
        x = x.to(dev, non_blocking=True)
        y = y.to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=autocast):
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out.float(), y)
        if a.flaw == "item":
            acc = (out.argmax(1) == y).float().mean().item()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if a.flaw == "item":
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9).item()
            print("step %d loss %.4f acc %.3f grad-norm %.3f" % (step, loss.item(), acc, gn))
        opt.step()
        if step % 100 == 0 and a.flaw != "item":
            print("step %d loss %.4f" % (step, loss.item()), flush=True)
        if step == 20:
            if cuda:
                torch.cuda.synchronize()
            t20 = time.perf_counter()
        elif t20 is not None:
            n20 += batch
        if step + 1 >= a.steps or time.perf_counter() - start >= a.seconds:
            break
    if cuda:
        torch.cuda.synchronize()
    if t20 is not None and n20:
        print("own_samples_per_sec %.1f" % (n20 / (time.perf_counter() - t20)), flush=True)


if __name__ == "__main__":
    main()
