"""bf16-mixed against 32-true for the encoder fine-tune on this CPU, side by side, at equal quality.

    .venv/bin/python bench/cpu_precision.py [--epochs 5] [--max-length 128] [--max-chunks 4] [--seeds 0 1 2]

The project's side of bench/encoder_vs_hf_trainer.py (same model, documents, windows, schedule and
seeds), once in fp32 and once under Lightning's bf16-mixed autocast. CPUs with AVX512-BF16 (or AMX)
run bf16 matmuls natively through oneDNN; elsewhere bf16 is emulated and slower. The CPU trainer
config would switch to bf16-mixed only if it is at least 1.3x faster at equal held-out macro-F1.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from common import in_child  # noqa: E402
from encoder_vs_hf_trainer import load_documents, run_legalft  # noqa: E402


def cpu_flags() -> str:
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return "unknown"
    return ", ".join(f for f in ("avx512f", "avx512_bf16", "amx_bf16") if f" {f}" in flags) or "no AVX-512"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--stride", type=int, default=16)
    parser.add_argument("--max-chunks", type=int, default=4)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()

    description, splits = load_documents(args.seeds[0])
    print(f"documents: {description}: {len(splits.train)} train, {len(splits.val)} held out; {args.epochs} epochs, "
          f"windows {args.max_chunks} x {args.max_length}; CPU features: {cpu_flags()}")
    results = {precision: [in_child(run_legalft, argparse.Namespace(**vars(args), seed=seed, precision=precision))
                           for seed in args.seeds] for precision in ("32-true", "bf16-mixed")}
    print(f"\n{'mean over seeds':22}{'32-true':>12}{'bf16-mixed':>12}")
    for label, key, fmt in (("train docs/s", "docs_per_s", "{:.2f}"), ("train seconds", "seconds", "{:.1f}"),
                            ("peak memory MiB", "peak_mb", "{:.0f}"), ("held-out macro-F1", "macro_f1", "{:.3f}")):
        print(f"{label:22}" + "".join(f"{fmt.format(statistics.fmean(r[key] for r in results[p])):>12}"
                                      for p in results))
    speed = (statistics.fmean(r["docs_per_s"] for r in results["bf16-mixed"])
             / statistics.fmean(r["docs_per_s"] for r in results["32-true"]))
    print(f"\nbf16-mixed: {speed:.2f}x the documents/s of 32-true")


if __name__ == "__main__":
    main()
