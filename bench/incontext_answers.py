"""Generation versus label scoring for the offline causal LM, side by side, on LegalBench tasks.

    LEGALFT_LEGALBENCH_DIR=/path/to/legalbench .venv/bin/python bench/incontext_answers.py \
        [--tasks hearsay overruling proa] [--limit 40] [--repeats 5]

Both read the same published base prompts (each task's base_prompt.txt) with SmolLM2-135M-Instruct
on the CPU: greedy generation stopped at a newline (up to --max-new-tokens), and the log-likelihood
of every label with the prompt computed once and its cache shared by the labels. Prints examples
per second, the share of outputs that name no label, and balanced accuracy. Each repeat runs both
sides on every task, the sides' order reversed every other repeat; speeds are medians (min-max).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from common import interleaved, legalbench_root, median_range, offline_smollm2  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["hearsay", "overruling", "proa"])
    parser.add_argument("--limit", type=int, default=40, help="test examples per task")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5, help="runs of each side, interleaved")
    args = parser.parse_args()

    from legalft.data.legalbench import LegalBenchSource
    from legalft.evaluation.metrics import legalbench_scores
    from legalft.llm.answers import generate, label_log_likelihoods
    from legalft.llm.prompts import PromptBuilder
    from legalft.llm.scoring import match_label

    model, tokenizer = offline_smollm2()  # the GPU when there is one (bench/gpu_check.sh)
    builder = PromptBuilder("base_prompt")
    tasks = LegalBenchSource(root=legalbench_root(), tasks=args.tasks).load()
    prompts = {task.spec.name: builder.build(task, task.test[: args.limit]) for task in tasks}

    def answer(side: str, task) -> list[str]:
        if side == "generate":
            return generate(model, tokenizer, prompts[task.spec.name], args.max_new_tokens, args.batch_size)
        labels = list(task.spec.labels)
        likelihoods = label_log_likelihoods(model, tokenizer, prompts[task.spec.name], labels,
                                            batch_size=args.batch_size)
        return [labels[int(i)] for i in likelihoods.argmax(1)]

    def run(side: str, _repeat: int) -> dict:
        """Each task's seconds and answers on one side."""
        out = {}
        for task in tasks:
            start = time.perf_counter()
            answers = answer(side, task)
            out[task.spec.name] = (time.perf_counter() - start, answers)
        return out

    results = interleaved(("generate", "score"), run, args.repeats)
    same = all(r[name][1] == runs[0][name][1] for runs in results.values() for r in runs for name in prompts)
    print(f"median (min-max) of {args.repeats} interleaved repeats; answers the same in every repeat: {same}")
    print(f"{'task':14}{'n':>4}  {'generate ex/s':>20}{'invalid':>9}{'bal.acc':>9}  {'score ex/s':>20}{'invalid':>9}"
          f"{'bal.acc':>9}")
    for task in tasks:
        name, n = task.spec.name, len(prompts[task.spec.name])
        gold = [e.labels[0] for e in task.test[: args.limit]]
        cells = []
        for side in ("generate", "score"):
            answers = results[side][0][name][1]
            invalid = sum(match_label(a, task.spec.labels) is None for a in answers) / n
            accuracy = legalbench_scores(name, "balanced_accuracy", gold, answers)["balanced_accuracy"]
            speed = median_range((n / r[name][0] for r in results[side]), "{:.2f}")
            cells.append(f"{speed:>20}{invalid:>9.1%}{accuracy:>9.3f}")
        print(f"{name:14}{n:>4}  " + "  ".join(cells))
    total = {side: [sum(seconds for seconds, _ in r.values()) for r in runs] for side, runs in results.items()}
    n = sum(len(p) for p in prompts.values())
    print(f"\nall tasks: generation {median_range((n / t for t in total['generate']), '{:.2f}')} ex/s, label scoring "
          f"{median_range((n / t for t in total['score']), '{:.2f}')} ex/s; label scoring / generation speed "
          f"{median_range(g / sc for g, sc in zip(total['generate'], total['score']))}x")


if __name__ == "__main__":
    main()
