# A token-model training loop whose batch fetch is hidden inside its own step function: the
# loop only calls train_step(model, opt, stream), and train_step does `x, y = next(stream)`
# before its forward, backward and optimizer step. The stream is a class-based iterator
# (TokenStream, __iter__/__next__) whose __next__ calls read_batch, a helper that can sleep
# --fetch-ms per batch. Inputs are LongTensor token ids (batch, seq) into a small embedding +
# linear next-token model. Built to show batch wait that happens inside the user's step but
# outside the model's forward/backward and the optimizer. Prints its own "step N loss X"
# lines every 50 steps and, at the end, one "steady:" line over the steps after --skip.
import argparse
import time

import torch
import torch.nn.functional as F


def read_batch(batch, seq, vocab, fetch_ms):
    # Stands in for reading and tokenizing a batch of text from somewhere slow.
    if fetch_ms > 0:
        time.sleep(fetch_ms / 1000.0)
    tokens = torch.randint(0, vocab, (batch, seq + 1))
    return tokens[:, :-1], tokens[:, 1:]


class TokenStream:
    def __init__(self, batch, seq, vocab, fetch_ms, device):
        self.batch, self.seq, self.vocab = batch, seq, vocab
        self.fetch_ms, self.device = fetch_ms, device

    def __iter__(self):
        return self

    def __next__(self):
        x, y = read_batch(self.batch, self.seq, self.vocab, self.fetch_ms)
        return x.to(self.device), y.to(self.device)


class TinyLM(torch.nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.hidden = torch.nn.Linear(dim, dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, idx):
        return self.head(torch.relu(self.hidden(self.embed(idx))))


fetch_seconds = 0.0  # time spent in next(stream), running total


def train_step(model, opt, stream):
    global fetch_seconds
    t = time.perf_counter()
    x, y = next(stream)
    fetch_seconds += time.perf_counter() - t
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--time", type=float, default=0.0, help="if > 0, run this many seconds instead of --steps")
    p.add_argument("--fetch-ms", type=float, default=0.0, help="sleep this long per batch in read_batch")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--skip", type=int, default=10, help="steps left out of the steady figures")
    a = p.parse_args()
    assert a.skip >= 0

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = TinyLM(a.vocab, a.dim).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
    stream = TokenStream(a.batch, a.seq, a.vocab, a.fetch_ms, device)
    tokens_per_step = a.batch * a.seq
    print("device %s, tokens per step %d" % (device, tokens_per_step), flush=True)

    start = time.perf_counter()
    marks = [start]  # marks[i + 1]: perf_counter just after step i's train_step (ends in zero_grad)
    fetch_per_step = []  # seconds in next(stream) during step i
    step = 0
    while True:
        before = fetch_seconds
        loss = train_step(model, opt, stream)
        marks.append(time.perf_counter())
        fetch_per_step.append(fetch_seconds - before)

        lossf = loss.item()
        if step % 50 == 0:
            print("step %d loss %.4f" % (step, lossf), flush=True)
        step += 1
        done = time.perf_counter() - start >= a.time if a.time > 0 else step >= a.steps
        if done:
            break

    n = step - a.skip
    if n <= 0:
        print(f"steady: none ({step} steps, all within --skip {a.skip})", flush=True)
    else:
        wall = marks[step] - marks[a.skip]  # end of step skip-1 to end of the last step
        steps_per_sec = n / wall
        share = sum(fetch_per_step[a.skip:]) / wall
        print(f"steady: {wall * 1000 / n:.3f} ms/step, {tokens_per_step * steps_per_sec:.1f} tokens/s, "
              f"fetch share {share:.4f}", flush=True)


if __name__ == "__main__":
    main()
