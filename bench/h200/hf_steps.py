"""A Hugging Face causal-LM training loop as people write it, knowing nothing of nodus.

GPT-2 small built from its config (no download), random token ids made here, AdamW, bf16
autocast, `model(input_ids=..., labels=...)`, no DataLoader. Prints its own steady figures
(after --skip steps): ms/step and tokens/s.
"""
import argparse
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=8)
p.add_argument("--seq", type=int, default=1024)
p.add_argument("--steps", type=int, default=160)
p.add_argument("--skip", type=int, default=10)
a = p.parse_args()

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_positions=a.seq)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
vocab = model.config.vocab_size
t0 = None
for step in range(a.steps):
    ids = torch.randint(0, vocab, (a.batch_size, a.seq), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if step + 1 == a.skip:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
    if step % 10 == 0:
        print(f"step {step}: loss {loss.item():.4f}", flush=True)
torch.cuda.synchronize()
wall = time.perf_counter() - t0
n = a.steps - a.skip
print(f"steady: {1000 * wall / n:.3f} ms/step, {n * a.batch_size * a.seq / wall:.1f} tokens/s",
      flush=True)
