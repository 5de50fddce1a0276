# A stack of Linear layers trained with SGD and gradient accumulation, nothing else: its FLOPs
# per optimizer step are known exactly (forward 2*B*D*D per layer; backward the weight's
# gradient for every layer and the input's for every layer but the first, each 2*B*D*D), so a
# FLOP count can be checked against them. Prints "steady: X ms/step, Y steps/s" over the steps
# after --skip, from its own perf_counter marks.
import argparse
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--grad-accum", type=int, default=2)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--skip", type=int, default=10)
    a = p.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(a.dim, a.dim) for _ in range(a.layers)])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    marks = []
    for step in range(a.steps):
        for _ in range(a.grad_accum):
            x = torch.randn(a.batch, a.dim)
            loss = model(x).square().mean() / a.grad_accum
            loss.backward()
        opt.step()
        opt.zero_grad()
        marks.append(time.perf_counter())
    n = a.steps - a.skip
    wall = marks[-1] - marks[a.skip - 1]
    print("steady: %.3f ms/step, %.4f steps/s" % (1000 * wall / n, n / wall), flush=True)


if __name__ == "__main__":
    main()
