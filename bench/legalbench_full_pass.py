"""How long a full in-context pass over LegalBench takes, per model size: measured here, projected on paper.

    LEGALFT_LEGALBENCH_DIR=/path/to/legalbench .venv/bin/python bench/legalbench_full_pass.py [--sample 8]

1. Counts the work: every task's test rows (its README's "Size (samples)" less its train rows, or its
   test split when present) times the tokens of its base prompt (LegalBench's own demonstrations),
   measured with SmolLM2's tokenizer on up to --sample rows per task (test rows when present, else
   train rows, which fill the same template).
2. Measures this machine: label scoring (``label_log_likelihoods``) with SmolLM2-135M on real base
   prompts: prompt tokens per second, and the FLOP/s that implies (2 x weights x tokens).
3. Projects: the CPU time for the 135M model, and for each model size on one GPU at an assumed
   sustained share of its bf16 peak (prefill is compute-bound; --gpu-tflops, --utilisation). Generation
   adds one decode step per answer token, bound by reading the weights (--gpu-bandwidth) once per batch.
4. With --server-json (what ``bench/server_vs_lm_eval.py --json-out`` wrote): the same pass through engine=server and
   through lm-eval's local-completions, each from the tokens the server computed per row over the prompt tokens of a
   row in that bench (the framework reads one-token labels from one request per prompt; lm-eval echoes the prompt
   once per label), at the tokens per second the vLLM server on this CPU computed for SmolLM2-135M, and on one GPU
   at the FLOP count above.
These are projections from FLOP counts, not GPU measurements; the GPU column counts every prompt token
(no shared-prefix reuse), so it is an upper bound for the scorer.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from common import legalbench_root, offline_smollm2  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")

MODELS = {"SmolLM2-135M": 0.135e9, "Llama-3.2-1B": 1.24e9, "Mistral-7B": 7.2e9, "Llama-3-8B": 8.0e9}


def readme_size(folder: Path) -> int | None:
    match = re.search(r"\*\*Size \(samples\)\*\*:\s*([\d,]+)", (folder / "README.md").read_text(errors="replace"))
    return int(match.group(1).replace(",", "")) if match else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=8, help="rows per task whose prompts are tokenized")
    parser.add_argument("--timed-rows", type=int, default=24, help="rows label-scored to measure tokens/s")
    parser.add_argument("--gpu-tflops", type=float, default=989.0, help="bf16 dense peak (H100 SXM: 989)")
    parser.add_argument("--utilisation", type=float, default=0.4, help="assumed sustained share of that peak")
    parser.add_argument("--gpu-bandwidth", type=float, default=3.35e12, help="HBM bytes/s (H100 SXM: 3.35e12)")
    parser.add_argument("--decode-batch", type=int, default=32)
    parser.add_argument("--answer-tokens", type=int, default=8, help="generated tokens per row")
    parser.add_argument("--server-json", type=Path, help="bench/server_vs_lm_eval.py --json-out's figures")
    args = parser.parse_args()

    import torch

    from legalft.data.legalbench import LegalBenchSource
    from legalft.llm.answers import label_log_likelihoods
    from legalft.llm.prompts import PromptBuilder

    root = legalbench_root()
    model, tokenizer = offline_smollm2(on_accelerator=False)  # this machine's tokens/s, measured on the CPU
    builder = PromptBuilder("base_prompt")
    with_test = {f.parent.name for f in Path(root).glob("tasks/*/test.tsv")}
    tasks = LegalBenchSource(root=root, tasks="all", splits=["train"]).load()
    tested = {t.spec.name: t for t in LegalBenchSource(root=root, tasks=sorted(with_test)).load()} if with_test else {}
    tasks = [tested.get(t.spec.name, t) for t in tasks]
    total_rows = total_tokens = 0
    unsized = []
    for task in tasks:
        size = readme_size(Path(root) / "tasks" / task.spec.name)
        rows = len(task.test) if task.test else (size - len(task.train) if size else None)
        sample = (task.test or task.train)[: args.sample]
        if rows is None or not sample:
            unsized.append(task.spec.name)
            continue
        lengths = [len(tokenizer(p)["input_ids"]) for p in builder.build(task, sample)]
        total_rows += rows
        total_tokens += rows * sum(lengths) / len(lengths)
    print(f"LegalBench: {len(tasks)} tasks, {total_rows:,} test rows, {total_tokens / 1e6:.1f} M prompt tokens "
          f"(base prompts, SmolLM2's tokenizer)" + (f"; no size for {', '.join(unsized)}" if unsized else ""))

    # tokens/s of label scoring on this CPU, on real base prompts of the tasks that have test rows
    timed = [(t, t.test[: max(1, args.timed_rows // 8)]) for t in tasks if t.test][:8]
    torch.set_num_threads(os.cpu_count() or 1)
    tokens, start = 0, time.perf_counter()
    for task, rows in timed:
        prompts = builder.build(task, rows)
        tokens += sum(len(tokenizer(p)["input_ids"]) for p in prompts)
        label_log_likelihoods(model, tokenizer, prompts, list(task.spec.labels), batch_size=8)
    seconds = time.perf_counter() - start
    cpu_tokens_per_s = tokens / seconds
    cpu_flops = 2 * MODELS["SmolLM2-135M"] * cpu_tokens_per_s
    print(f"this machine ({os.cpu_count()} cores): label scoring {cpu_tokens_per_s:,.0f} prompt tokens/s with "
          f"SmolLM2-135M, {cpu_flops / 1e9:.1f} GFLOP/s counting every prompt token (the demonstrations a task's "
          "prompts share run once per batch, so more than the matmuls do)")

    gpu_flops = args.gpu_tflops * 1e12 * args.utilisation
    print(f"\n{'model':16}{'weights':>9}{'CPU here (h)':>14}{'1 GPU, scoring (h)':>20}{'+ generation (h)':>18}")
    for name, weights in MODELS.items():
        flops = 2 * weights * total_tokens
        cpu_hours = flops / cpu_flops / 3600
        gpu_hours = flops / gpu_flops / 3600
        decode_hours = (total_rows / args.decode_batch) * args.answer_tokens * (2 * weights) / args.gpu_bandwidth / 3600
        print(f"{name:16}{weights / 1e9:>8.2f}B{cpu_hours:>14,.1f}{gpu_hours:>20.2f}{gpu_hours + decode_hours:>18.2f}")
    if args.server_json:
        server_columns(json.loads(args.server_json.read_text())["score"], total_tokens, gpu_flops)
    print(f"\nGPU: {args.gpu_tflops:.0f} TFLOP/s bf16 peak at {args.utilisation:.0%} sustained for the prompts; "
          f"generation adds {args.answer_tokens} decode steps per row in batches of {args.decode_batch}, each "
          f"reading the bf16 weights at {args.gpu_bandwidth / 1e12:.2f} TB/s. On paper, not measured on a GPU.")


def server_columns(scoring: dict, total_tokens: float, gpu_flops: float) -> None:
    """Label scoring through a server: every side's tokens computed per prompt token (bench/server_vs_lm_eval.py), at
    the vLLM server's measured tokens per second here and at the GPU's FLOP/s."""
    sides = list(scoring["tokens_per_row"])
    per_token = {s: scoring["tokens_per_row"][s] / scoring["prompt_tokens_per_row"] for s in sides}
    print("\nlabel scoring through one server (bench/server_vs_lm_eval.py): server tokens per prompt token "
          + ", ".join(f"{s} {per_token[s]:.2f}" for s in sides)
          + f"; vLLM on this CPU computed {scoring['server_tokens_per_s'][sides[0]]:,.0f} tokens/s for SmolLM2-135M")
    print(f"{'model':16}" + "".join(f"{'vLLM here, ' + s + ' (h)':>28}{'1 GPU, ' + s + ' (h)':>24}" for s in sides))
    for name, weights in MODELS.items():
        cells = []
        for side in sides:
            tokens = total_tokens * per_token[side]
            here = tokens / scoring["server_tokens_per_s"][side] * (weights / MODELS["SmolLM2-135M"]) / 3600
            cells.append(f"{here:>28,.1f}{2 * weights * tokens / gpu_flops / 3600:>24.2f}")
        print(f"{name:16}" + "".join(cells))


if __name__ == "__main__":
    main()
