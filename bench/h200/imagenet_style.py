# An ImageNet-style training script that knows nothing of nodus (no NODUS_METRICS, no regex):
# synthetic JPEG-sized uint8 images decoded and augmented on the CPU in the Dataset (random
# crop, flip, normalize), a ResNet-50 (torchvision when present, else a ResNet-style network
# defined here), batch 256, SGD, channels_last + bf16 autocast, and its own progress lines in
# the shape of the public example: "Epoch: [0][ 40/500] Time 0.550 Data 0.490". It also prints
# its own throughput over the steps after --skip, for the overhead comparison.
import argparse
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=4)
p.add_argument("--batch-size", type=int, default=256)
p.add_argument("--steps", type=int, default=100000)
p.add_argument("--skip", type=int, default=20)
p.add_argument("--print-freq", type=int, default=20)
a = p.parse_args()


class SyntheticImages(Dataset):
    # Each sample: a 256x256 uint8 image "decoded" (generated), cropped to 224, flipped and
    # normalized on the CPU, as a torchvision pipeline would.
    def __len__(self):
        return 1281167

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.randint(0, 256, (3, 256, 256), dtype=torch.uint8, generator=g)
        y0, x0 = torch.randint(0, 33, (2,), generator=g).tolist()
        img = img[:, y0:y0 + 224, x0:x0 + 224].float().div_(255)
        if i % 2:
            img = img.flip(2)
        mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
        return (img - mean) / std, i % 1000


def resnet50():
    try:
        import torchvision
        return torchvision.models.resnet50()
    except Exception:
        pass

    class Bottleneck(nn.Module):
        def __init__(self, cin, mid, stride):
            super().__init__()
            cout = mid * 4
            self.body = nn.Sequential(
                nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(inplace=True),
                nn.Conv2d(mid, mid, 3, stride, 1, bias=False), nn.BatchNorm2d(mid),
                nn.ReLU(inplace=True), nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.skip = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                       nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for mid, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for b in range(blocks):
            layers.append(Bottleneck(cin, mid, stride if b == 0 else 1))
            cin = mid * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 1000)]
    return nn.Sequential(*layers)


device = "cuda" if torch.cuda.is_available() else "cpu"
model = resnet50().to(device, memory_format=torch.channels_last)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
crit = nn.CrossEntropyLoss()
loader = DataLoader(SyntheticImages(), batch_size=a.batch_size, shuffle=True,
                    num_workers=a.workers, pin_memory=True, persistent_workers=a.workers > 0)
end = time.time()
start = None
for i, (images, target) in enumerate(loader):
    data_time = time.time() - end
    if i == a.skip:
        torch.cuda.synchronize() if device == "cuda" else None
        start = time.time()
    images = images.to(device, non_blocking=True).contiguous(memory_format=torch.channels_last)
    target = target.to(device, non_blocking=True)
    with torch.autocast(device, dtype=torch.bfloat16):
        loss = crit(model(images), target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if i % a.print_freq == 0:
        print("Epoch: [0][%5d/%d]\tTime %.3f\tData %.3f\tLoss %.4f"
              % (i, a.steps, time.time() - end, data_time, loss.item()), flush=True)
    end = time.time()
    if i + 1 == a.steps:
        break
if start is not None:
    torch.cuda.synchronize() if device == "cuda" else None
    n = (i + 1 - a.skip) * a.batch_size
    print("own_samples_per_sec %.1f" % (n / (time.time() - start)), flush=True)
