"""Generation versus label scoring for the offline causal LM, side by side, on LegalBench tasks.

    LEGALFT_LEGALBENCH_DIR=/path/to/legalbench .venv/bin/python bench/incontext_answers.py \
        [--tasks hearsay overruling proa] [--limit 40]

Both read the same published base prompts (each task's base_prompt.txt) with SmolLM2-135M-Instruct
on the CPU: greedy generation stopped at a newline (up to --max-new-tokens), and the log-likelihood
of every label with the prompt computed once and its cache shared by the labels. Prints examples
per second, the share of outputs that name no label, and balanced accuracy.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))
from common import legalbench_root, offline_smollm2  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["hearsay", "overruling", "proa"])
    parser.add_argument("--limit", type=int, default=40, help="test examples per task")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()

    from legalft.data.legalbench import LegalBenchSource
    from legalft.evaluation.metrics import legalbench_scores
    from legalft.incontext.answers import generate, label_log_likelihoods
    from legalft.incontext.prompts import PromptBuilder
    from legalft.incontext.runner import match_label

    root = legalbench_root()
    model, tokenizer = offline_smollm2()  # the GPU when there is one (bench/gpu_check.sh)
    builder = PromptBuilder("base_prompt")

    print(f"{'task':14}{'n':>4}  {'generate ex/s':>14}{'invalid':>9}{'bal.acc':>9}  {'score ex/s':>11}{'invalid':>9}"
          f"{'bal.acc':>9}{'speed-up':>10}")
    seconds = {"generate": 0.0, "score": 0.0}
    n = 0
    for task in LegalBenchSource(root=root, tasks=args.tasks).load():
        examples = task.test[: args.limit]
        prompts = builder.build(task, examples)
        gold = [e.labels[0] for e in examples]
        labels = list(task.spec.labels)

        start = time.perf_counter()
        generations = generate(model, tokenizer, prompts, args.max_new_tokens, args.batch_size)
        generate_s = time.perf_counter() - start
        start = time.perf_counter()
        likelihoods = label_log_likelihoods(model, tokenizer, prompts, labels, batch_size=args.batch_size)
        chosen = [labels[int(i)] for i in likelihoods.argmax(1)]
        score_s = time.perf_counter() - start

        gen_invalid = sum(match_label(g, task.spec.labels) is None for g in generations) / len(examples)
        gen_acc = legalbench_scores(task.spec.name, "balanced_accuracy", gold, generations)["balanced_accuracy"]
        score_acc = legalbench_scores(task.spec.name, "balanced_accuracy", gold, chosen)["balanced_accuracy"]
        score_invalid = sum(match_label(c, task.spec.labels) is None for c in chosen) / len(examples)
        print(f"{task.spec.name:14}{len(examples):>4}  {len(examples) / generate_s:>14.2f}{gen_invalid:>9.1%}"
              f"{gen_acc:>9.3f}  {len(examples) / score_s:>11.2f}{score_invalid:>9.1%}{score_acc:>9.3f}"
              f"{generate_s / score_s:>9.1f}x")
        seconds["generate"] += generate_s
        seconds["score"] += score_s
        n += len(examples)
    print(f"\nall tasks: generation {n / seconds['generate']:.2f} ex/s, label scoring {n / seconds['score']:.2f} ex/s "
          f"({seconds['generate'] / seconds['score']:.1f}x)")


if __name__ == "__main__":
    main()
