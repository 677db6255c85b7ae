"""A report's paired tests over 2 runs x every LegalBench task: ``report=compare`` as it runs
(per-example counts, SciPy's permutation test and BCa bootstrap, vectorised over resamples) against
the same report with a per-resample loop that calls the task's metric on every resample (the way
lm-evaluation-harness's bootstrap and most hand-written paired tests do), with 1,000 resamples each.

The runs are written here from a seeded fake predictor (no model): each task gets a seeded number of
test examples (log-uniform in [--min-examples, --max-examples]) with gold answers in the task's own
form (k classes, dollar amounts, company names, ...), and two methods right on 80% and 65% of them
(a third of their wrong class answers name no class, as generations often do).
Prints the median and spread of --repeats interleaved repeats of each side, and how many warnings
each emitted.

    .venv/bin/python bench/report_significance.py                # every side 5 times
    .venv/bin/python bench/report_significance.py --loop-tasks 20 # the loop on 20 tasks, projected
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from common import write_runs

def loop_paired_test(task, row, first, second, resamples, seed, metric_mode, notes):
    """The per-resample loop: the task's metric called on each permuted and each bootstrapped sample
    (scikit-learn's balanced_accuracy_score for the balanced-accuracy tasks, LegalBench's scorer for the
    others)."""
    from sklearn.metrics import balanced_accuracy_score

    from legalft.evaluation.metrics import legalbench_scores
    from legalft.evaluation.normalize import normalize

    (a, run_a), (b, run_b) = first, second
    if task not in run_a.tasks or task not in run_b.tasks:
        return None
    records_a, records_b = run_a.predictions[task], run_b.predictions[task]
    by_id = {r["id"]: r for r in records_b}
    gold = [r["gold"] for r in records_a]
    pred_a = [r["prediction"] for r in records_a]
    pred_b = [by_id[r["id"]]["prediction"] for r in records_a]
    metric = run_a.tasks[task]["metric"]

    def score(g, p):
        if metric == "balanced_accuracy":
            return balanced_accuracy_score([normalize(x) for x in g], [normalize(x) for x in p])
        return legalbench_scores(task, metric, g, p, metric_mode)[metric]

    observed = score(gold, pred_a) - score(gold, pred_b)
    rng = np.random.default_rng(seed)
    extreme, differences = 0, []
    for _ in range(resamples):
        swap = rng.random(len(gold)) < 0.5
        swapped_a = [y if s else x for x, y, s in zip(pred_a, pred_b, swap)]
        swapped_b = [x if s else y for x, y, s in zip(pred_a, pred_b, swap)]
        extreme += abs(score(gold, swapped_a) - score(gold, swapped_b)) >= abs(observed) - 1e-12
    for _ in range(resamples):
        index = rng.integers(0, len(gold), len(gold))
        g = [gold[i] for i in index]
        differences.append(score(g, [pred_a[i] for i in index]) - score(g, [pred_b[i] for i in index]))
    low, high = np.percentile(differences, [2.5, 97.5])
    return {"category": row[0], "task": task, "metric": row[1], "method_a": a, "method_b": b, "n": len(gold),
            "difference": observed, "p_permutation": (extreme + 1) / (resamples + 1), "ci_low": low, "ci_high": high,
            "interval": "percentile"}


def timed_report(folders: list[Path], out: Path, resamples: int, loop: bool) -> tuple[float, int]:
    """(seconds, warnings emitted) of one report=compare over ``folders``."""
    from legalft.reporting import paired
    from legalft.reporting.compare import compare

    original = paired.paired_test
    if loop:
        paired.paired_test = loop_paired_test
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            compare([str(f) for f in folders], str(out), resamples=resamples)
            seconds = time.perf_counter() - start
    finally:
        paired.paired_test = original
    return seconds, len(caught)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--min-examples", type=int, default=50)
    parser.add_argument("--max-examples", type=int, default=2000)
    parser.add_argument("--loop-tasks", type=int, default=0,
                        help="time the per-resample loop on this many tasks and project it to all by examples "
                             "(0: on all tasks)")
    args = parser.parse_args()
    import logging

    logging.disable(logging.INFO)  # the report's progress lines; warnings still count
    from legalft.reporting.runs import read_run

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folders = write_runs(root / "runs", args.min_examples, args.max_examples)
        tasks = read_run(folders[0]).tasks
        examples = {t: s["n"] for t, s in tasks.items()}
        loop_folders, share = folders, 1.0
        if args.loop_tasks:
            keep = sorted(examples)[:: max(1, len(examples) // args.loop_tasks)][: args.loop_tasks]
            loop_folders = []
            for folder in folders:
                subset = root / "subset" / folder.name
                subset.mkdir(parents=True)
                metrics = json.loads((folder / "metrics.json").read_text())
                metrics["tasks"] = {t: metrics["tasks"][t] for t in keep}
                (subset / "metrics.json").write_text(json.dumps(metrics))
                lines = [line for line in (folder / "predictions.jsonl").read_text().splitlines()
                         if json.loads(line)["task"] in keep]
                (subset / "predictions.jsonl").write_text("\n".join(lines) + "\n")
                loop_folders.append(subset)
            share = sum(examples[t] for t in keep) / sum(examples.values())
        timings = {"legalft": [], "per-resample loop": []}
        caught = {"legalft": 0, "per-resample loop": 0}
        for repeat in range(args.repeats):  # interleaved, so drifts in machine speed hit both sides
            for side, (source, loop) in {"legalft": (folders, False), "per-resample loop": (loop_folders, True)}.items():
                seconds, count = timed_report(source, root / f"out_{side.split()[0]}_{repeat}", args.resamples, loop)
                timings[side].append(seconds / share if loop else seconds)
                caught[side] += count
    print(f"report=compare, 2 runs x {len(examples)} LegalBench tasks, {sum(examples.values()):,} test examples, "
          f"{args.resamples} resamples, {args.repeats} interleaved repeats")
    print(f"{'':28}{'legalft':>14}{'per-resample loop':>22}")
    cells = {side: f"{statistics.median(t):.1f} s ± {(max(t) - min(t)) / 2:.1f}" for side, t in timings.items()}
    print(f"{'median seconds (± half range)':28}{cells['legalft']:>14}{cells['per-resample loop']:>22}")
    print(f"{'warnings emitted (all runs)':28}{caught['legalft']:>14}{caught['per-resample loop']:>22}")
    if args.loop_tasks:
        print(f"the loop ran on {args.loop_tasks} tasks ({share:.1%} of the examples) and is projected to all tasks "
              "by examples")
    ratio = statistics.median(timings["per-resample loop"]) / statistics.median(timings["legalft"])
    print(f"legalft is {ratio:.0f}x faster; target: under 30 s with zero warnings")


if __name__ == "__main__":
    main()
