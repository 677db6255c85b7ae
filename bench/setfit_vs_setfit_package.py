"""``method=setfit`` against the ``setfit`` package, side by side, on LegalBench tasks.

    LEGALFT_LEGALBENCH_DIR=/path/to/legalbench .venv/bin/python bench/setfit_vs_setfit_package.py \
        [--tasks hearsay abercrombie proa personal_jurisdiction] [--seeds 0 1 2 3 4]

Same offline encoder (all-MiniLM-L6-v2), same recipe on both sides: 20 iterations of one
same-label and one different-label pair per training row, cosine-similarity loss, 1 epoch, batch 16,
body learning rate 2e-5 with 10% warm-up, 256 tokens, then a logistic-regression head (C=1,
class_weight=balanced) on the normalised embeddings. Each side fits every task from the pretrained
encoder in its own process. Prints each task's balanced accuracy (LegalBench's metric for these
tasks) on its test split per side, averaged over seeds, and each side's wall time. Each seed is one
repeat: both sides run, in alternating order; times and their ratio are medians (min-max) over seeds.
Needs the bench extra: pip install -e ".[bench]".
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from common import in_child, interleaved, legalbench_root, median_range  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
RECIPE = {"iterations": 20, "epochs": 1, "batch_size": 16, "lr": 2e-5, "warmup_ratio": 0.1, "max_length": 256}


def load_tasks(names: list[str]):
    from legalft.data.legalbench import LegalBenchSource

    return LegalBenchSource(root=legalbench_root(), tasks=names).load()


def balanced_accuracy(task, predicted: list[str]) -> float:
    from legalft.evaluation.metrics import single_label_scores

    return single_label_scores([e.labels[0] for e in task.test], predicted, task.spec.labels)["balanced_accuracy"]


def run_legalft(names: list[str], seed: int, queue) -> None:
    import numpy as np

    from legalft.configuration.resolvers import offline_model
    from legalft.methods.setfit import SetFitMethod

    method = SetFitMethod(pretrained=offline_model("minilm"), head_class_weight="balanced", **RECIPE)
    scores, start = {}, time.perf_counter()
    for task in load_tasks(names):
        probs, _ = method.fit_predict(task, task.test, seed)
        scores[task.spec.name] = balanced_accuracy(task, [task.spec.labels[i] for i in np.argmax(probs, axis=1)])
    queue.put((scores, time.perf_counter() - start))


def run_package(names: list[str], seed: int, queue) -> None:
    from datasets import Dataset
    from setfit import SetFitModel, Trainer, TrainingArguments

    from legalft.configuration.resolvers import offline_model
    from legalft.kit.features import features_of

    args = TrainingArguments(batch_size=RECIPE["batch_size"], num_epochs=RECIPE["epochs"],
                             num_iterations=RECIPE["iterations"], body_learning_rate=RECIPE["lr"],
                             warmup_proportion=RECIPE["warmup_ratio"], max_length=RECIPE["max_length"], seed=seed,
                             report_to="none", show_progress_bar=False, save_strategy="no")
    scores, start = {}, time.perf_counter()
    for task in load_tasks(names):
        model = SetFitModel.from_pretrained(offline_model("minilm"),
                                            head_params={"class_weight": "balanced", "max_iter": 5000})
        train = Dataset.from_dict({"text": features_of(task, task.train), "label": [e.labels[0] for e in task.train]})
        Trainer(model=model, args=args, train_dataset=train).train()
        scores[task.spec.name] = balanced_accuracy(task, [str(p) for p in model.predict(features_of(task, task.test))])
    queue.put((scores, time.perf_counter() - start))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["hearsay", "abercrombie", "proa", "personal_jurisdiction"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    args = parser.parse_args()
    sides = {"legalft method=setfit": run_legalft, "setfit package": run_package}
    results = interleaved(sides, lambda side, repeat: in_child(sides[side], args.tasks, args.seeds[repeat]),
                          len(args.seeds))

    print(f"\nbalanced accuracy on each task's test split, mean (sd) over seeds {args.seeds}; this machine's CPU")
    print(f"{'task':28}" + "".join(f"{side:>26}" for side in sides))
    for task in args.tasks:
        cells = []
        for side in sides:
            values = [scores[task] for scores, _ in results[side]]
            spread = statistics.stdev(values) if len(values) > 1 else 0.0
            cells.append(f"{statistics.mean(values):>19.3f} ({spread:.3f})")
        print(f"{task:28}" + "".join(cells))
    means = {side: statistics.mean(statistics.mean(s.values()) for s, _ in runs) for side, runs in results.items()}
    print(f"{'mean over tasks':28}" + "".join(f"{means[side]:>26.3f}" for side in sides))
    print(f"{'seconds per seed':28}" + "".join(f"{median_range((t for _, t in results[side]), '{:.0f}'):>26}"
                                             for side in sides))
    first, second = sides
    ratios = [ours / theirs for (_, ours), (_, theirs) in zip(results[first], results[second], strict=True)]
    print(f"legalft / setfit package time: {median_range(ratios)}x, median (min-max) over {len(ratios)} "
          "interleaved seeds")


if __name__ == "__main__":
    main()
