"""The project's training step under Lightning against a bare PyTorch loop, and against the Hugging Face
Trainer's loop, over the identical batches.

    .venv/bin/python bench/framework_overhead.py [--steps 12] [--max-length 128] [--repeats 5]

Both sides train the same encoder classifier (the offline all-MiniLM-L6-v2, the project's
EncoderClassifierModule and its AdamW groups and linear schedule) from the same initial weights on
the same precomputed batches (the project's datamodule, sample documents), fp32, gradient clipping
at 1.0. The bare loop is forward, loss, backward, clip, optimizer and scheduler step, zero_grad;
the Lightning side is ``Trainer.fit`` with the project's own training step, logging and progress
bar off as in a batch job; the Trainer side is ``Trainer.train`` over the same batches (one batch an
item, the model wrapped to return its loss), with the same optimiser, schedule and clipping. The figure
is the extra time per step each framework adds: what any hardware pays on top of the model's own
compute. The sides alternate for --repeats repeats; times are medians (min-max), each overhead the
median (min-max) of its per-repeat ratios to the bare loop.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def build(args):
    import torch

    from common import load_documents
    from legalft.data.encoder_datamodule import EncoderDataModule
    from legalft.models.encoder_module import EncoderClassifierModule
    from legalft.models.pretrained import load_tokenizer, offline_minilm_path

    _, splits = load_documents(0)
    tokenizer = load_tokenizer(offline_minilm_path())
    datamodule = EncoderDataModule(splits.spec, splits.train, splits.val, None, tokenizer, args.max_length, 16, 4,
                                   batch_size=8, last_window="end")
    batches = list(datamodule.train_dataloader())[: args.steps]
    torch.manual_seed(0)
    module = EncoderClassifierModule(offline_minilm_path(), list(splits.spec.labels), max_length=args.max_length,
                                     stride=16, max_chunks=4, last_window="end", dropout=0.0)
    return module, batches


def bare_loop(module, batches) -> float:
    import torch
    from transformers import get_linear_schedule_with_warmup

    device = "cuda" if torch.cuda.is_available() else "cpu"
    module.to(device).train()
    batches = [{k: v.to(device) for k, v in batch.items()} for batch in batches]
    optimizer = torch.optim.AdamW(module.parameters(), lr=3e-5, weight_decay=0.01, fused=True)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(0.1 * len(batches)), len(batches))
    start = time.perf_counter()
    for batch in batches:
        loss = module.loss(module(batch), batch["targets"])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def lightning_fit(module, batches) -> float:
    import lightning as L
    from lightning.pytorch.callbacks import Timer
    from torch.utils.data import DataLoader

    timer = Timer()
    trainer = L.Trainer(accelerator="auto", devices=1, precision="32-true", max_epochs=1, gradient_clip_val=1.0,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, limit_val_batches=0, callbacks=[timer])
    # the precomputed batches as they are (batch_size=None: no collation)
    trainer.fit(module, train_dataloaders=DataLoader(batches, batch_size=None, shuffle=False))
    return timer.time_elapsed("train")


def hf_trainer_loop(module, batches) -> float:
    import torch
    from torch import nn
    from transformers import Trainer, TrainingArguments

    class WithLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.module = module

        def forward(self, input_ids, attention_mask, chunk_counts, targets, index=None):
            logits = self.module({"input_ids": input_ids, "attention_mask": attention_mask,
                                  "chunk_counts": chunk_counts})
            return {"loss": self.module.loss(logits, targets), "logits": logits}

    arguments = TrainingArguments(
        output_dir="/tmp/legalft-bench-overhead", num_train_epochs=1, per_device_train_batch_size=1,
        learning_rate=3e-5, weight_decay=0.01, warmup_steps=0.1, lr_scheduler_type="linear", max_grad_norm=1.0,
        optim="adamw_torch_fused", report_to=[], save_strategy="no", logging_strategy="no",
        remove_unused_columns=False, disable_tqdm=True, dataloader_num_workers=0,
    )
    trainer = Trainer(model=WithLoss(), args=arguments, train_dataset=batches, data_collator=lambda items: items[0])
    seconds = trainer.train().metrics["train_runtime"]
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()

    import copy

    import torch

    torch.set_num_threads(args.threads)
    module, batches = build(args)
    initial = copy.deepcopy(module.state_dict())
    sides = {"bare PyTorch loop": bare_loop, "Lightning + project step": lightning_fit,
             "HF Trainer, same step": hf_trainer_loop}
    times = {name: [] for name in sides}
    for _ in range(args.repeats):
        for name, side in sides.items():
            module.load_state_dict(initial)
            times[name].append(side(module, batches))
    tokens = sum(int(b["attention_mask"].numel()) for b in batches)
    print(f"{len(batches)} steps of 8 sample documents (windows of {args.max_length}, {tokens:,} tokens), "
          f"{args.threads} threads; median (min-max) of {args.repeats} interleaved repeats")
    print(f"\n{'':28}{'seconds':>22}{'ms / step':>11}")
    for name, measured in times.items():
        cell = f"{statistics.median(measured):.2f} ({min(measured):.2f}-{max(measured):.2f})"
        print(f"{name:28}{cell:>22}{statistics.median(measured) / len(batches) * 1000:>11.0f}")
    print()
    for name in ("Lightning + project step", "HF Trainer, same step"):
        extra = [mine / bare - 1 for mine, bare in zip(times[name], times["bare PyTorch loop"])]
        print(f"{name}: {statistics.median(extra):+.1%} time over the bare loop "
              f"(per repeat {min(extra):+.1%} to {max(extra):+.1%})")


if __name__ == "__main__":
    main()
