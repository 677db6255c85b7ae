"""LoRA fine-tuning of the offline causal LM: this project against TRL's SFTTrainer, side by side.

    LEGALFT_LEGALBENCH_DIR=/path/to/legalbench .venv/bin/python bench/lora_vs_trl.py \
        [--tasks hearsay abercrombie proa ...] [--epochs 2] [--batch-size 4] [--max-length 512] [--packing]

Both train the same LoRA adapter (rank 16, alpha 32, dropout 0.05 unless --lora-dropout says
otherwise, every attention and MLP projection) on SmolLM2-135M-Instruct from the same initial weights, on the same examples: LegalBench
train splits as zero-shot prompt + answer, tokenized once by this project (``training_examples``) and
handed to TRL pre-tokenized with a completion mask, so both compute the loss on the answer tokens
only. Same batch size, epochs, learning rate, linear schedule with 10% warm-up, clipping at 1.0,
seed, and the same batches in the same order (TRL's sampler replaced by the project's order, so that
both take the same optimiser steps at any seed and their adapters can be compared at equal quality);
padded batches on both sides, or with --packing padding-free batches on both (each batch's
examples end to end in one row, position ids restarting per example: this project's
``packing=True``, TRL's ``padding_free=True``; the same examples a step as padded); fp32 on both
(--bf16: bf16 autocast on both); gradient checkpointing off on both sides (TRL's default is on;
--gradient-checkpointing turns it on for both). Each side runs in its own process, so peak memory is
its own. Prints training tokens/s (real tokens, padding excluded), peak memory, the last epoch's mean
training loss (the mean over batches seen in each side's own order while the adapter changed) and,
for equal quality, the trained adapter's loss over the whole training set, computed the same way for
both. The sides alternate for --repeats repeats (default 5), each in a fresh process; every figure is
the median (min-max) over repeats. Needs the bench extra: pip install -e ".[bench]".
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from common import (dequantised_copy, in_child, legalbench_root, lora_adapted_model, lora_arguments, lora_examples,
                    peak_memory_mb, train_lora_side, training_set_loss)

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def project_order_trainer(n_examples: int, batch_size: int, seed: int):
    """SFTTrainer taking its examples in the project's order (``ResumableBatches``: epoch ``e``'s batches are
    consecutive runs of one permutation), so both sides take the same optimiser steps. Only the order
    changes: the Trainer still batches, collates and steps as it does with its own random sampler."""
    from torch.utils.data import Sampler
    from trl import SFTTrainer

    from legalft.data.batches import ResumableBatches

    class ProjectOrder(Sampler[int]):
        def __init__(self) -> None:
            self.batches = ResumableBatches(n_examples, batch_size, seed)

        def set_epoch(self, epoch: int) -> None:  # the Trainer calls it at every epoch, as Lightning does
            self.batches.set_epoch(epoch)

        def __iter__(self):
            return (i for batch in self.batches for i in batch)

        def __len__(self) -> int:
            return n_examples

    class SFTTrainerInProjectOrder(SFTTrainer):
        def _get_train_sampler(self, train_dataset=None):
            return ProjectOrder()

    return SFTTrainerInProjectOrder


def run_trl(args, queue) -> None:
    import datasets
    import torch
    from trl import SFTConfig

    torch.set_num_threads(args.threads)
    model, tokenizer = lora_adapted_model(args)  # the same adapter, built the same way (TRL accepts a PeftModel)
    data = lora_examples(args, tokenizer)
    dataset = datasets.Dataset.from_dict({
        "input_ids": [e.input_ids for e in data],
        "completion_mask": [[int(label != -100) for label in e.labels] for e in data],
    })
    config = SFTConfig(
        output_dir="/tmp/legalft-bench-trl", num_train_epochs=args.epochs, per_device_train_batch_size=args.batch_size,
        learning_rate=args.lr, lr_scheduler_type="linear", warmup_steps=0.1, weight_decay=0.0, max_grad_norm=1.0,
        seed=args.seed, packing=False, completion_only_loss=True, report_to=[],
        padding_free=args.packing,  # each batch flattened into one row, as the project's packing=True does
        max_length=None if args.packing else args.max_length,  # TRL's rule for padding-free: inputs come truncated
        save_strategy="no", logging_strategy="steps", logging_steps=1, disable_tqdm=True, dataloader_num_workers=0,
        bf16=args.bf16,  # TRL turns bf16 on by default; the same on both sides
        gradient_checkpointing=args.gradient_checkpointing,  # TRL turns it on by default; the same on both sides
    )
    trainer_class = project_order_trainer(len(data), args.batch_size, args.seed)
    trainer = trainer_class(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
    start = time.perf_counter()
    result = trainer.train()
    seconds = result.metrics.get("train_runtime", time.perf_counter() - start)
    last_epoch = [h["loss"] for h in trainer.state.log_history if "loss" in h and h.get("epoch", 0) > args.epochs - 1]
    tokens = sum(len(e.input_ids) for e in data) * args.epochs
    queue.put({"seconds": seconds, "tokens_per_s": tokens / seconds, "peak_mb": peak_memory_mb(),
               "final_loss": sum(last_epoch) / len(last_epoch), "examples": len(data),
               "train_set_loss": training_set_loss(trainer.model, data, tokenizer.pad_token_id, args.batch_size)})


def main() -> None:
    parser = lora_arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    legalbench_root()
    dequantised_copy(args.model_dir)

    sides = {"legalft": train_lora_side, "TRL SFTTrainer": run_trl}
    runs = {side: [] for side in sides}
    for _ in range(args.repeats):  # interleaved, so drifts in machine speed hit both sides
        for side, target in sides.items():
            runs[side].append(in_child(target, args))
    ours, trl = runs["legalft"], runs["TRL SFTTrainer"]
    print(f"\nSmolLM2-135M + LoRA r16 on {ours[0]['examples']} LegalBench train examples ({len(args.tasks)} tasks), "
          f"{args.epochs} epochs, batch {args.batch_size}, {'bf16 autocast' if args.bf16 else 'fp32'}, "
          f"{'padding-free' if args.packing else 'padded'} batches, gradient checkpointing "
          f"{'on' if args.gradient_checkpointing else 'off'}; median (min-max) of {args.repeats} interleaved repeats")
    print(f"{'':26}{'legalft':>24}{'TRL SFTTrainer':>24}")
    for label, key, fmt in (("train seconds", "seconds", "{:.1f}"), ("tokens / s", "tokens_per_s", "{:.0f}"),
                            ("peak memory MiB", "peak_mb", "{:.0f}"), ("last-epoch training loss", "final_loss", "{:.4f}"),
                            ("training-set loss after", "train_set_loss", "{:.4f}")):
        cells = []
        for side in (ours, trl):
            values = [r[key] for r in side]
            cells.append(f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})")
        print(f"{label:26}{cells[0]:>24}{cells[1]:>24}")
    speed = [a["tokens_per_s"] / b["tokens_per_s"] for a, b in zip(ours, trl)]
    memory = [a["peak_mb"] / b["peak_mb"] for a, b in zip(ours, trl)]
    loss = statistics.median(r["train_set_loss"] for r in ours) / statistics.median(r["train_set_loss"] for r in trl) - 1
    print(f"\nlegalft: {statistics.median(speed):.2f}x TRL's tokens/s (per-repeat {min(speed):.2f}-{max(speed):.2f}), "
          f"peak memory {statistics.median(memory):.2f}x, training-set loss after training {loss:+.1%}")


if __name__ == "__main__":
    main()
