"""bf16-mixed against 32-true for the encoder and LoRA fine-tunes on this CPU, side by side, at equal quality.

    .venv/bin/python bench/cpu_precision.py [--epochs 5] [--max-length 128] [--max-chunks 4] [--seeds 0 1 2 3 4]
    LEGALFT_LEGALBENCH_DIR=/path/to/legalbench .venv/bin/python bench/cpu_precision.py --part lora

Each seed is one repeat: both precisions run, in alternating order, and the tables print medians
(min-max) over the seeds. Encoder: the project's side of bench/encoder_vs_hf_trainer.py (same model, documents, windows,
schedule and seeds), once in fp32 and once under Lightning's bf16-mixed autocast; quality is held-out
macro-F1. LoRA: the project's side of bench/lora_vs_trl.py (SmolLM2-135M, rank 16, LegalBench train
splits) both ways; quality is the trained adapter's loss over the training set. CPUs with AVX512-BF16
(or AMX) run bf16 matmuls natively through oneDNN; elsewhere bf16 is emulated and slower. The CPU
trainer config would switch to bf16-mixed only if it is at least 1.3x faster at equal quality.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from common import (LEGALBENCH_TASKS, dequantised_copy, in_child, interleaved, legalbench_root, load_documents,
                    lora_arguments, median_range, ratios, train_encoder_side, train_lora_side)


def cpu_flags() -> str:
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return "unknown"
    return ", ".join(f for f in ("avx512f", "avx512_bf16", "amx_bf16") if f" {f}" in flags) or "no AVX-512"


def print_sides(results: dict, rows: tuple, rate_key: str, rate_name: str) -> None:
    print(f"\n{'median (min-max) over seeds':30}" + "".join(f"{precision:>24}" for precision in results))
    for label, key, fmt in rows:
        print(f"{label:30}" + "".join(f"{median_range((r[key] for r in runs), fmt):>24}" for runs in results.values()))
    print(f"bf16-mixed: {median_range(ratios(results, 'bf16-mixed', '32-true', rate_key))}x the {rate_name} of 32-true")


def encoder_part(args) -> None:
    description, splits = load_documents(args.seeds[0])
    print(f"encoder: {description}: {len(splits.train)} train, {len(splits.val)} held out; {args.epochs} epochs, "
          f"windows {args.max_chunks} x {args.max_length}; CPU features: {cpu_flags()}")
    results = interleaved(("32-true", "bf16-mixed"), lambda precision, repeat: in_child(
        train_encoder_side, argparse.Namespace(**vars(args), seed=args.seeds[repeat], precision=precision)), len(args.seeds))
    print_sides(results, (("train docs/s", "docs_per_s", "{:.2f}"), ("train seconds", "seconds", "{:.1f}"),
                          ("peak memory MiB", "peak_mb", "{:.0f}"), ("held-out macro-F1", "macro_f1", "{:.3f}")),
                "docs_per_s", "documents/s")


def lora_part(args) -> None:
    legalbench_root("--part lora: ")
    dequantised_copy(args.model_dir)
    print(f"\nLoRA: SmolLM2-135M, rank 16, {len(args.tasks)} LegalBench train splits, {args.lora_epochs} epochs, "
          f"batch 4; CPU features: {cpu_flags()}")

    def train(precision: str, repeat: int) -> dict:
        return in_child(train_lora_side, lora_arguments().parse_args([
            "--tasks", *args.tasks, "--epochs", str(args.lora_epochs), "--seed", str(args.seeds[repeat]),
            "--threads", str(args.threads), "--model-dir", str(args.model_dir),
            *(["--bf16"] if precision == "bf16-mixed" else [])]))

    results = interleaved(("32-true", "bf16-mixed"), train, len(args.seeds))
    print_sides(results, (("tokens / s", "tokens_per_s", "{:.0f}"), ("train seconds", "seconds", "{:.1f}"),
                          ("peak memory MiB", "peak_mb", "{:.0f}"), ("training-set loss after", "train_set_loss", "{:.4f}")),
                "tokens_per_s", "tokens/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", nargs="+", choices=["encoder", "lora"], default=["encoder"])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--stride", type=int, default=16)
    parser.add_argument("--max-chunks", type=int, default=4)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="one repeat each")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--tasks", nargs="+", default=LEGALBENCH_TASKS, help="LoRA: LegalBench tasks")
    parser.add_argument("--lora-epochs", type=int, default=2)
    parser.add_argument("--model-dir", type=Path, default=Path("/tmp/legalft-bench-smollm2"))
    args = parser.parse_args()
    if "encoder" in args.part:
        encoder_part(args)
    if "lora" in args.part:
        lora_part(args)


if __name__ == "__main__":
    main()
