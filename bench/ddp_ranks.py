"""The encoder fine-tune on one rank and on two gloo DDP ranks of this machine, side by side.

    .venv/bin/python bench/ddp_ranks.py [--epochs 2] [--global-batch 8] [--max-length 256] [--max-chunks 4] [--repeats 5]

Same model (the offline all-MiniLM-L6-v2), documents, global batch, seed and epochs; the machine's
cores are split between the ranks (torch threads per rank = cores / ranks), as a user would. Each
configuration runs in its own process group (Lightning's launcher starts the second rank), and the
timing is of the training epochs only (Lightning's Timer), validation off. Documents: PROSLEX's
validation split when LEGALFT_PROSLEX_DIR points at it, else the project's sample.

What it predicts for GPUs: only the cost of DDP itself (the gradient all-reduce per step and the
processes' start-up), not the speed-up: on a CPU two ranks share the same cores, while on GPUs each
rank brings its own device and the documents/s scale with them until the all-reduce dominates.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
RESULT = "ddp-ranks-result: "


def worker(args) -> None:
    """One configuration; Lightning re-runs this script (same arguments) for every rank but 0."""
    import lightning as L
    import torch
    from lightning.pytorch.callbacks import Timer

    from common import load_documents
    from legalft.data.encoder_datamodule import EncoderDataModule
    from legalft.models.encoder_module import EncoderClassifierModule
    from legalft.models.pretrained import load_tokenizer, offline_minilm_path

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // args.ranks))
    L.seed_everything(args.seed, workers=True)
    _, splits = load_documents(args.seed)
    tokenizer = load_tokenizer(offline_minilm_path())
    module = EncoderClassifierModule(offline_minilm_path(), list(splits.spec.labels), max_length=args.max_length,
                                     stride=args.stride, max_chunks=args.max_chunks, lr=1e-4)
    datamodule = EncoderDataModule(splits.spec, splits.train, splits.val, None, tokenizer, args.max_length, args.stride,
                                   args.max_chunks, batch_size=args.global_batch // args.ranks, seed=args.seed)
    timer = Timer()
    trainer = L.Trainer(
        accelerator="cpu", devices=args.ranks, strategy="ddp" if args.ranks > 1 else "auto", precision="32-true",
        max_epochs=args.epochs, use_distributed_sampler=False, limit_val_batches=0, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False, callbacks=[timer],
    )
    trainer.fit(module, datamodule=datamodule)
    if trainer.is_global_zero:
        seconds = timer.time_elapsed("train")
        print(RESULT + json.dumps({"seconds": seconds, "docs_per_s": len(splits.train) * args.epochs / seconds,
                                   "threads": torch.get_num_threads(), "documents": len(splits.train)}), flush=True)


def measure(args, ranks: int) -> dict:
    command = [sys.executable, __file__, "--worker", "--ranks", str(ranks), "--epochs", str(args.epochs),
               "--global-batch", str(args.global_batch), "--max-length", str(args.max_length),
               "--stride", str(args.stride), "--max-chunks", str(args.max_chunks), "--seed", str(args.seed)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    lines = [line for line in result.stdout.splitlines() if line.startswith(RESULT)]
    if result.returncode != 0 or not lines:
        raise SystemExit(f"{ranks} rank(s) failed:\n{result.stderr[-3000:]}")
    return json.loads(lines[-1][len(RESULT):])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--global-batch", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--stride", type=int, default=32)
    parser.add_argument("--max-chunks", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5, help="runs of each configuration, interleaved")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    from common import interleaved, median_range, ratios
    from common import load_documents

    description, splits = load_documents(args.seed)
    print(f"documents: {description}: {len(splits.train)} train; {args.epochs} epochs, global batch "
          f"{args.global_batch}, windows {args.max_chunks} x {args.max_length} tokens; {os.cpu_count()} cores; "
          f"median (min-max) of {args.repeats} interleaved repeats")
    ranks = {"1 rank": 1, "2 ranks (gloo)": 2}
    sides = interleaved(ranks, lambda side, _: measure(args, ranks[side]), args.repeats)
    print(f"\n{'':24}" + "".join(f"{side:>22}" for side in sides))
    print(f"{'torch threads per rank':24}" + "".join(f"{runs[0]['threads']:>22}" for runs in sides.values()))
    for label, key, fmt in (("train seconds", "seconds", "{:.1f}"), ("train docs/s", "docs_per_s", "{:.2f}")):
        print(f"{label:24}" + "".join(f"{median_range((r[key] for r in runs), fmt):>22}" for runs in sides.values()))
    speed = ratios(sides, "2 ranks (gloo)", "1 rank", "docs_per_s")
    print(f"\n2 ranks / 1 rank: {median_range(speed)}x the documents/s on the same cores")


if __name__ == "__main__":
    main()
