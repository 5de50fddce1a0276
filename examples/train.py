#!/usr/bin/env python3
"""A real PyTorch training loop whose speed depends on its DataLoader: the job nodus sweeps.

Each sample is made on the CPU the way image pipelines make them: generate an image at
--source-size, resize it to --image-size with torch.nn.functional.interpolate, normalize it.
With --num-workers 0 that work runs in the training process and the model waits for it; with
workers it overlaps with compute. The loop times, for every step, how long it waited for its
batch and how long the step itself took, and every --report-every steps appends a JSON line

    {"t": <unix s>, "step": N, "samples_per_sec": X, "data_wait": wait / (wait + compute), "loss": L}

to the file named by NODUS_METRICS (when set), and prints a one-line progress report.

    python3 examples/train.py --num-workers 4 --batch-size 256 --image-size 128 --model resnet18

Runs on CUDA when present (bf16 autocast, pinned memory), else on the CPU. Works with
PyTorch 1.13 and 2.x; needs nothing but torch.
"""

import argparse
import contextlib
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


class SyntheticImages(Dataset):
    """Deterministic random images that cost CPU time to produce, like decoding and augmenting."""

    def __init__(self, length, source_size, image_size, classes, seed):
        self.length = length
        self.source_size = source_size
        self.image_size = image_size
        self.classes = classes
        self.seed = seed
        self.mean = torch.tensor(MEAN).view(3, 1, 1)
        self.std = torch.tensor(STD).view(3, 1, 1)

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        s = self.source_size
        image = torch.randint(0, 256, (3, s, s), generator=g, dtype=torch.uint8)
        image = image.float().div_(255).unsqueeze(0)
        image = F.interpolate(image, size=(self.image_size, self.image_size), mode="bilinear",
                              align_corners=False).squeeze(0)
        image = (image - self.mean) / self.std
        label = int(torch.randint(0, self.classes, (1,), generator=g))
        return image, label


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """ResNet-18's layout (torchvision's, without torchvision): stem, four stages, pool, fc."""

    def __init__(self, blocks, widths, classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(widths[0]), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], widths[0]
        for i, (n, width) in enumerate(zip(blocks, widths)):
            for j in range(n):
                layers.append(BasicBlock(cin, width, 2 if (j == 0 and i > 0) else 1))
                cin = width
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def make_model(name, classes):
    if name == "resnet18":
        return ResNet([2, 2, 2, 2], [64, 128, 256, 512], classes)
    return ResNet([1, 1], [16, 32], classes)  # "small": finishes fast on two CPU cores


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text}")
    return value


def non_negative(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text}")
    return value


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["small", "resnet18"], default="small")
    p.add_argument("--num-workers", type=non_negative, default=0)
    p.add_argument("--batch-size", type=positive, default=64)
    p.add_argument("--image-size", type=positive, default=128)
    # 176 px per side makes the per-sample CPU cost, on the H200 host in nodus's docs, close to
    # the one behind the measurements there.
    p.add_argument("--source-size", type=positive, default=176,
                   help="side of the generated image before the resize")
    p.add_argument("--warmup", type=non_negative, default=5, help="steps before timing starts")
    p.add_argument("--steps", type=positive, default=50, help="timed steps")
    p.add_argument("--report-every", type=positive, default=5)
    p.add_argument("--classes", type=positive, default=100)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    return p.parse_args(argv)


class Reporter:
    """Appends one JSON line per interval to $NODUS_METRICS and prints a progress line."""

    def __init__(self, batch_size, total_steps):
        self.path = os.environ.get("NODUS_METRICS")
        self.batch_size = batch_size
        self.total_steps = total_steps
        self.reset()

    def reset(self):
        self.steps = 0
        self.wait = 0.0
        self.compute = 0.0

    def add(self, wait, compute):
        self.steps += 1
        self.wait += wait
        self.compute += compute

    def report(self, step, loss):
        if self.steps == 0:
            return
        busy = self.wait + self.compute
        rate = self.steps * self.batch_size / busy
        share = self.wait / busy
        line = {"t": round(time.time(), 3), "step": step, "samples_per_sec": round(rate, 2),
                "data_wait": round(share, 4), "loss": round(loss, 4)}
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps(line) + "\n")
        print(f"step {step}/{self.total_steps}  {rate:.1f} samples/s  data wait {share:.0%}  "
              f"loss {loss:.3f}", flush=True)
        self.reset()


def main(argv):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("train.py: --device cuda but CUDA is not available")
    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    device = torch.device("cuda" if cuda else "cpu")
    if cuda:
        torch.backends.cudnn.benchmark = True

    total = args.warmup + args.steps
    data = SyntheticImages(total * args.batch_size, args.source_size, args.image_size,
                           args.classes, args.seed)
    workers = args.num_workers
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=False, drop_last=True,
                        num_workers=workers, pin_memory=cuda, persistent_workers=workers > 0)

    model = make_model(args.model, args.classes).to(device)
    if cuda:
        model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    model.train()

    def autocast():
        # torch 1.13 checks bf16 support even for a disabled CUDA autocast: only build it on CUDA.
        if cuda:
            return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def sync():
        if cuda:
            torch.cuda.synchronize()

    reporter = Reporter(args.batch_size, args.steps)
    batches = iter(loader)
    wait_total = compute_total = 0.0
    start = time.perf_counter()
    for i in range(total):
        t0 = time.perf_counter()
        images, labels = next(batches)
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        if cuda:
            images = images.contiguous(memory_format=torch.channels_last)
        sync()
        t1 = time.perf_counter()
        with autocast():
            loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        sync()
        t2 = time.perf_counter()

        step = i + 1 - args.warmup  # timed steps count from 1
        if step < 1:
            if step == 0:
                start = time.perf_counter()  # warm-up done: the measured part starts now
            continue
        reporter.add(t1 - t0, t2 - t1)
        wait_total += t1 - t0
        compute_total += t2 - t1
        if step % args.report_every == 0 or step == args.steps:
            reporter.report(step, float(loss.detach()))

    elapsed = time.perf_counter() - start
    samples = args.steps * args.batch_size
    share = wait_total / max(wait_total + compute_total, 1e-12)
    print(f"done: {args.steps} steps of {args.batch_size} on {device.type} in {elapsed:.2f}s, "
          f"{samples / elapsed:.1f} samples/s, data wait {share:.0%}, model {args.model}, "
          f"num_workers {workers}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
