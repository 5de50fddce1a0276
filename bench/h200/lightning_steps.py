"""A Lightning training loop as people write it, knowing nothing of nodus.

A LightningModule over a small transformer LM fed token ids from a DataLoader over random data,
bf16-mixed, AdamW (Lightning calls optimizer.step(closure): forward and backward run inside the
optimizer's step). A callback prints the loop's own steady figures (after --skip batches):
ms/step and tokens/s.
"""
import argparse
import time

import torch
import lightning as L
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--seq", type=int, default=512)
p.add_argument("--steps", type=int, default=400)
p.add_argument("--skip", type=int, default=10)
a = p.parse_args()


class LM(L.LightningModule):
    def __init__(self, vocab=32000, d=512, layers=6):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        layer = torch.nn.TransformerEncoderLayer(d, 8, 4 * d, batch_first=True)
        self.body = torch.nn.TransformerEncoder(layer, layers)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, ids):
        return self.head(self.body(self.emb(ids)))

    def training_step(self, batch, i):
        (ids,) = batch
        logits = self(ids)
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids.flatten())

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=3e-4)


class Clock(L.Callback):
    # From the end of batch --skip to the end of the last batch, the GPU's work included; the
    # trainer's own teardown after the last batch is left out.
    def on_train_batch_end(self, trainer, module, outputs, batch, i):
        if i + 1 == a.skip:
            torch.cuda.synchronize()
            self.t0 = time.perf_counter()
        if i + 1 == a.steps:
            torch.cuda.synchronize()
            self.t1 = time.perf_counter()

    def on_train_end(self, trainer, module):
        wall = self.t1 - self.t0
        n = a.steps - a.skip
        print(f"steady: {1000 * wall / n:.3f} ms/step, {n * a.batch_size * a.seq / wall:.1f} "
              "tokens/s", flush=True)


data = TensorDataset(torch.randint(0, 32000, (a.steps * a.batch_size, a.seq)))
trainer = L.Trainer(max_steps=a.steps, precision="bf16-mixed", logger=False,
                    enable_checkpointing=False, enable_progress_bar=False, callbacks=[Clock()])
trainer.fit(LM(), DataLoader(data, batch_size=a.batch_size, num_workers=2))
