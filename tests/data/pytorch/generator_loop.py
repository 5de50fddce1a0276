# A training loop over a plain Python generator, no DataLoader: `for step, (x, y) in
# enumerate(batches(...))`, where the generator builds each float batch itself (x: randn, y:
# class ids) and can sleep --fetch-ms per batch first. A tiny MLP, SGD or AdamW, loss.item()
# every step. Built to show batch wait that lives in a generator the loop pulls from (not in
# a loader): with --fetch-ms the loop waits on its generator; --step-ms adds busy-wait
# compute to every step instead. Prints its own "step N loss X" lines every 50 steps and, at
# the end, one "steady:" line over the steps after --skip, from its own perf_counter marks.
import argparse
import time

import torch


def batches(batch, classes, fetch_ms, device, fetch_seconds):
    # Yields (x, y) forever; adds the time spent making each batch to fetch_seconds[0].
    while True:
        t = time.perf_counter()
        if fetch_ms > 0:
            time.sleep(fetch_ms / 1000.0)
        x = torch.randn(batch, 32)
        y = torch.randint(0, classes, (batch,))
        x, y = x.to(device), y.to(device)
        fetch_seconds[0] += time.perf_counter() - t
        yield x, y


def busy_wait(ms):
    end = time.perf_counter() + ms / 1000.0
    while time.perf_counter() < end:
        pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--time", type=float, default=0.0, help="if > 0, run this many seconds instead of --steps")
    p.add_argument("--fetch-ms", type=float, default=0.0, help="sleep this long per batch in the generator")
    p.add_argument("--step-ms", type=float, default=0.0, help="extra busy-wait compute per step")
    p.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--skip", type=int, default=10, help="steps left out of the steady figures")
    a = p.parse_args()
    assert a.skip >= 0

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).to(device)
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
    print("device %s, batch %d" % (device, a.batch), flush=True)

    fetch_seconds = [0.0]  # time spent inside the generator making batches, running total
    start = time.perf_counter()
    marks = [start]  # marks[i + 1]: perf_counter just after step i's zero_grad
    fetch_per_step = []  # seconds inside the generator during step i
    before = 0.0
    steps = 0
    for step, (x, y) in enumerate(batches(a.batch, 10, a.fetch_ms, device, fetch_seconds)):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if a.step_ms > 0:
            busy_wait(a.step_ms)
        opt.step()
        opt.zero_grad()
        marks.append(time.perf_counter())
        fetch_per_step.append(fetch_seconds[0] - before)
        before = fetch_seconds[0]

        lossf = loss.item()
        if step % 50 == 0:
            print("step %d loss %.4f" % (step, lossf), flush=True)
        steps = step + 1
        done = time.perf_counter() - start >= a.time if a.time > 0 else steps >= a.steps
        if done:
            break

    n = steps - a.skip
    if n <= 0:
        print(f"steady: none ({steps} steps, all within --skip {a.skip})", flush=True)
    else:
        wall = marks[steps] - marks[a.skip]  # end of step skip-1 to end of the last step
        steps_per_sec = n / wall
        share = sum(fetch_per_step[a.skip:]) / wall
        print(f"steady: {wall * 1000 / n:.3f} ms/step, {a.batch * steps_per_sec:.1f} samples/s, "
              f"fetch share {share:.4f}", flush=True)


if __name__ == "__main__":
    main()
