"""What a task's test set lets a comparison say, beside the methods' scores: the majority-class and chance
baselines (what a predictor that ignores its input scores), the test set's size and the smallest difference
a paired test of that size finds with 80% power, a 95% interval over the test rows for a method with a
single run (seeds give the others theirs), and the runs no better than the majority class (a collapsed run
predicts one label for every row)."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from legalft.evaluation.metrics import item_counts
from legalft.reporting.runs import Run, is_per_label, lowest_seed

# z(0.975) + z(0.8): a two-sided test at 0.05 with 80% power
POWER_Z = 1.959964 + 0.841621


@dataclass(frozen=True)
class Floor:
    n: int  # test rows
    majority: float | None  # the metric when every row gets the most frequent gold answer
    chance: float | None  # the expected metric of a uniformly random label (single-label tasks)
    detectable: float  # the smallest difference of two proportions a paired test finds with 80% power at n

    @property
    def bar(self) -> float | None:
        """What a run must beat to have learnt anything from its input."""
        present = [v for v in (self.majority, self.chance) if v is not None]
        return max(present) if present else None


def key_of(answer) -> str:
    return json.dumps(answer, sort_keys=True)


def gold_rows(runs: list[Run], task: str) -> tuple[list, dict] | None:
    """The gold answers of the run that scored the most rows of ``task``, and its scores of the task."""
    scored = [r for r in runs if r.predictions.get(task) and task in r.tasks]
    if not scored:
        return None
    run = max(scored, key=lambda r: len(r.predictions[task]))
    return [record["gold"] for record in run.predictions[task]], run.tasks[task]


def chance_of(task: str, scores: dict, gold: list, metric_mode: str, seed: int) -> float | None:
    """1/k for accuracy and balanced accuracy (k: the gold classes); the mean over 20 uniformly random
    predictions for other single-label metrics; None for label sets."""
    if not all(isinstance(g, str) for g in gold):
        return None
    classes = sorted(set(gold))
    if scores.get("metric") in ("accuracy", "balanced_accuracy") or "metric" not in scores:
        return 1 / len(classes)
    rng = np.random.default_rng(seed)
    draws = [item_counts(task, scores, gold, list(rng.choice(classes, len(gold))), metric_mode).value()
             for _ in range(20)]
    return float(np.mean(draws))


def task_floors(runs: list[Run], rows: dict[str, tuple[str, str]], metric_mode: str, seed: int = 0) -> dict[str, Floor]:
    floors = {}
    for task in rows:
        found = None if is_per_label(rows[task][0]) else gold_rows(runs, task)
        if found is None:
            continue
        gold, scores = found
        most = Counter(key_of(g) for g in gold).most_common(1)[0][0]
        majority_answer = next(g for g in gold if key_of(g) == most)
        try:
            majority = item_counts(task, scores, gold, [majority_answer] * len(gold), metric_mode).value()
        except (KeyError, ValueError):  # a metric without per-example counts (manual grading)
            majority = None
        floors[task] = Floor(len(gold), majority, chance_of(task, scores, gold, metric_mode, seed),
                             POWER_Z * math.sqrt(2 * 0.25 / len(gold)))
    return floors


def wilson(hits: int, n: int, level: float) -> tuple[float, float]:
    from scipy.stats import binomtest

    interval = binomtest(hits, n).proportion_ci(confidence_level=level, method="wilson")
    return float(interval.low), float(interval.high)


def row_interval(run: Run, task: str, metric_mode: str, resamples: int = 1000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float, str] | None:
    """A single run's 95% interval over its test rows: Wilson's for accuracy (a binomial share); for balanced
    accuracy the mean of each class's Wilson bounds on its recall (a perfect or constant classifier still
    gets an interval as wide as its classes' sizes allow); else the percentile bootstrap of the task's metric
    over rows resampled with replacement."""
    from legalft.evaluation.metrics import primary_metric
    from legalft.evaluation.normalize import normalize

    records = run.predictions.get(task)
    if not records or task not in run.tasks:
        return None
    gold, predicted = [r["gold"] for r in records], [r["prediction"] for r in records]
    try:
        counts = item_counts(task, run.tasks[task], gold, predicted, metric_mode)
    except (KeyError, ValueError):
        return None
    metric = primary_metric(run.tasks[task])
    if counts.counts.shape[1] == 2 and metric == "accuracy":
        return (*wilson(int(counts.counts[:, 0].sum()), len(records), level), "wilson")
    if metric == "balanced_accuracy" and all(isinstance(g, str) for g in gold):
        classes = sorted({normalize(g) for g in gold})
        bounds = [wilson(sum(normalize(p) == c for g, p in zip(gold, predicted) if normalize(g) == c),
                         sum(normalize(g) == c for g in gold), level) for c in classes]
        return float(np.mean([b[0] for b in bounds])), float(np.mean([b[1] for b in bounds])), "wilson per class"
    rng = np.random.default_rng(seed)
    n = len(records)
    drawn = rng.integers(0, n, size=(resamples, n))
    summed = np.stack([counts.counts[rows].sum(0) for rows in drawn])
    values = counts.score(summed)
    low, high = np.quantile(values, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(low), float(high), "bootstrap"


def collapsed(run: Run, task: str) -> bool:
    """Whether the run gave every row of the task one and the same answer."""
    records = run.predictions.get(task) or []
    return len(records) > 1 and len({key_of(r["prediction"]) for r in records}) == 1


def no_better_than_floor(methods: dict[str, list[Run]], cells, floors: dict[str, Floor]) -> list[dict]:
    """Each (task, method) whose mean is no better than the majority class or chance, and whether its
    lowest-seed run collapsed to one answer."""
    flagged = []
    for (task, method), cell in sorted(cells.items()):
        floor = floors.get(task)
        if floor is None or floor.bar is None or cell.mean > floor.bar + 1e-9:
            continue
        run = lowest_seed(methods[method])
        flagged.append({"task": task, "method": method, "mean": cell.mean, "majority": floor.majority,
                        "chance": floor.chance, "collapsed": collapsed(run, task)})
    return flagged
