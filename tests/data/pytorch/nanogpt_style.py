# A nanoGPT-style language-model training loop with no DataLoader: it writes its own token
# file (uint16 ids in an np.memmap), and get_batch reopens that file every call and stacks
# random slices into (x, y), pinned and copied non-blocking on CUDA, as nanoGPT does. A small
# GPT (hand-written causal attention), gradient accumulation, AdamW, loss.item() every iter.
# Built to show a job whose batches come from a plain function called inside the loop:
# --slow-batch-ms makes get_batch sleep, so most of each iteration becomes batch wait.
# Prints nanoGPT's own "iter N: loss ..., time ...ms, tok/s ..." lines and, at the end, one
# "steady:" line over the iterations after --skip, from its own perf_counter marks, and
# nanoGPT's own MFU estimate against --peak-tflops.
import argparse
import math
import os
import tempfile
import time
from contextlib import nullcontext

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.c_attn, self.c_proj = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))
        mask = torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
        self.register_buffer("mask", mask)

    def attn(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = [t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v)]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf")), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, block_size, n_layer, n_embd, n_head):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--n-head", type=int, default=2)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--tokens", type=int, default=200000, help="length of the token file")
    p.add_argument("--data-dir", default=None, help="where to write train.bin (default: a temp dir)")
    p.add_argument("--grad-accum", type=int, default=4)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--time", type=float, default=0.0, help="if > 0, run this many seconds instead of --iters")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                   help="bfloat16: autocast on CUDA only")
    p.add_argument("--log-interval", type=int, default=1)
    p.add_argument("--slow-batch-ms", type=float, default=0.0, help="sleep this long in every get_batch")
    p.add_argument("--skip", type=int, default=10, help="iterations left out of the steady figures")
    p.add_argument("--peak-tflops", type=float, default=989.4, help="the GPU's peak, for the MFU estimate")
    a = p.parse_args()
    assert 0 < a.vocab <= 65536 and a.tokens > a.block_size and a.skip >= 0

    torch.manual_seed(1337)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    use_bf16 = device == "cuda" and a.dtype == "bfloat16"
    ctx = torch.autocast(device_type="cuda", dtype=torch.bfloat16) if use_bf16 else nullcontext()

    tmp = tempfile.TemporaryDirectory() if a.data_dir is None else None
    os.makedirs(a.data_dir or tmp.name, exist_ok=True)
    path = os.path.join(a.data_dir or tmp.name, "train.bin")
    out = np.memmap(path, dtype=np.uint16, mode="w+", shape=(a.tokens,))
    out[:] = np.random.default_rng(1337).integers(0, a.vocab, size=a.tokens, dtype=np.uint16)
    out.flush()

    batch_seconds = [0.0]  # time spent inside get_batch, running total

    def get_batch(split):
        t = time.perf_counter()
        if a.slow_batch_ms > 0:
            time.sleep(a.slow_batch_ms / 1000.0)
        # recreate np.memmap every batch to avoid a memory leak, as nanoGPT does
        data = np.memmap(path, dtype=np.uint16, mode="r")
        ix = torch.randint(len(data) - a.block_size, (a.batch_size,))
        x = torch.stack([torch.from_numpy(data[i:i + a.block_size].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + a.block_size].astype(np.int64)) for i in ix])
        if device == "cuda":
            x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
        batch_seconds[0] += time.perf_counter() - t
        return x, y

    model = GPT(a.vocab, a.block_size, a.n_layer, a.n_embd, a.n_head).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=a.lr)
    tokens_per_iter = a.grad_accum * a.batch_size * a.block_size
    print("device %s, dtype %s, tokens per iteration %d" % (device, "bfloat16" if use_bf16 else "float32",
                                                           tokens_per_iter), flush=True)

    X, Y = get_batch("train")  # fetch the very first batch
    t0 = time.time()
    start = time.perf_counter()
    marks = [start]  # marks[i + 1]: perf_counter just after iteration i's zero_grad
    batch_per_iter = []  # seconds inside get_batch during iteration i
    iter_num = 0
    while True:
        before = batch_seconds[0]
        for micro_step in range(a.grad_accum):
            with ctx:
                logits, loss = model(X, Y)
                loss = loss / a.grad_accum
            # prefetch the next batch while the model is doing the forward pass on the GPU
            X, Y = get_batch("train")
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        marks.append(time.perf_counter())
        batch_per_iter.append(batch_seconds[0] - before)

        t1 = time.time()
        dt = t1 - t0
        t0 = t1
        lossf = loss.item() * a.grad_accum
        if iter_num % a.log_interval == 0:
            print(f"iter {iter_num}: loss {lossf:.4f}, time {dt*1000:.2f}ms, tok/s {tokens_per_iter/dt:.0f}",
                  flush=True)
        iter_num += 1
        done = time.perf_counter() - start >= a.time if a.time > 0 else iter_num >= a.iters
        if done:
            break

    n = iter_num - a.skip
    if n <= 0:
        print(f"steady: none ({iter_num} iters, all within --skip {a.skip})", flush=True)
    else:
        wall = marks[iter_num] - marks[a.skip]  # end of iter skip-1 to end of the last iter
        iters_per_sec = n / wall
        share = sum(batch_per_iter[a.skip:]) / wall
        print(f"steady: {wall * 1000 / n:.3f} ms/iter, {tokens_per_iter * iters_per_sec:.1f} tokens/s, "
              f"{iters_per_sec:.4f} iters/s, get_batch share {share:.4f}", flush=True)
        # nanoGPT's estimate_mfu: 6N + 12*L*H*Q*T FLOPs per token (PaLM, appendix B), against
        # --peak-tflops. N is the parameters that take part in a matmul: nanoGPT leaves out the
        # position embedding and counts its token embedding as the lm_head it is tied to; here
        # the two are not tied, so both embedding tables (lookups, no arithmetic) are left out
        # and the lm_head counts as itself.
        n_params = (sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel() -
                    model.wte.weight.numel())
        per_token = 6 * n_params + 12 * a.n_layer * a.n_head * (a.n_embd // a.n_head) * a.block_size
        achieved = per_token * tokens_per_iter * iters_per_sec
        print(f"estimated mfu: {100 * achieved / (a.peak_tflops * 1e12):.2f}% of {a.peak_tflops} TFLOPS "
              f"({per_token} FLOPs per token, {achieved / 1e12:.2f} TFLOP/s)", flush=True)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
