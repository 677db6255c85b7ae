"""The report's tables: one cell per method and task (the mean over its seeds, with a 95% interval),
rows grouped by category with each category's average, and published numbers in columns of their own."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from legalft.evaluation.metrics import primary_metric
from legalft.reporting.baselines import Reported
from legalft.reporting.runs import Run, is_per_label, per_label_category, trained
from legalft.reporting.significance import t_interval

CATEGORY_ORDER = ["issue", "rule", "conclusion", "interpretation", "rhetoric", "PROSLEX"]


@dataclass(frozen=True)
class Cell:
    """One method on one task: the score of each of its runs (seeds); their mean, spread and interval."""

    by_seed: tuple[tuple[int | None, float], ...]  # (seed, score) of each run

    @cached_property
    def values(self) -> list[float]:
        return [value for _, value in self.by_seed]

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def std(self) -> float:
        return float(np.std(self.values, ddof=1)) if len(self.values) > 1 else 0.0

    @property
    def runs(self) -> int:
        return len(self.values)

    @property
    def interval(self) -> tuple[float, float]:
        """95% t-interval of the mean over runs (seeds); the mean itself for a single run."""
        return t_interval(self.values) or (self.mean, self.mean)


def category_of(task: str, scores: dict) -> str:
    return scores.get("category") or ("PROSLEX" if "per_label" in scores else "other")


def row_metrics(runs: list[Run]) -> dict[str, str | None]:
    """Each task's row metric, the same whatever order the runs come in: the metric the runs name for the
    task (LegalBench's own), the most often named where they disagree; else the primary metric."""
    named: dict[str, list[str]] = defaultdict(list)
    fallback: dict[str, str | None] = {}
    for run in runs:
        for task, scores in run.tasks.items():
            if isinstance(scores.get("metric"), str) and not scores.get("manual_grading"):
                named[task].append(scores["metric"])
            fallback.setdefault(task, primary_metric(scores))
    return {task: max(sorted(set(named[task])), key=named[task].count) if named[task] else metric
            for task, metric in fallback.items()}


def measured_cells(methods: dict[str, list[Run]]) -> tuple[dict, dict[str, tuple[str, str]]]:
    """{(task, method): Cell} over primary metrics, plus per-statute F1 rows; and each row's
    (category, metric)."""
    values: dict[tuple[str, str], list[tuple[int | None, float]]] = defaultdict(list)
    rows: dict[str, tuple[str, str]] = {}
    metrics = row_metrics([run for runs in methods.values() for run in runs])
    for method, runs in methods.items():
        for run in runs:
            for task, scores in run.tasks.items():
                metric = metrics.get(task)
                if metric is None or not isinstance(scores.get(metric), (int, float)):
                    continue
                rows[task] = (category_of(task, scores), metric)
                values[(task, method)].append((run.seed, float(scores[metric])))
                for label, label_scores in (scores.get("per_label") or {}).items():
                    row = f"{task}: {label}"
                    rows[row] = (per_label_category(task), "f1")
                    values[(row, method)].append((run.seed, float(label_scores["f1"])))
    return {key: Cell(tuple(seeded)) for key, seeded in values.items()}, rows


def ordered_rows(rows: dict[str, tuple[str, str]]) -> list[str]:
    def key(task):
        category = rows[task][0]
        return (CATEGORY_ORDER.index(category) if category in CATEGORY_ORDER else len(CATEGORY_ORDER), category, task)

    return sorted(rows, key=key)


def method_order(methods) -> list[str]:
    """Trained methods, then in-context ones, then any this installation does not know; by name within."""
    rank = {True: 0, False: 1, None: 2}
    return sorted(methods, key=lambda m: (rank[trained(m)], m))


def comparison_pairs(methods: list[str]) -> list[tuple[str, str]]:
    """Each fine-tuned method against each in-context one (the report's question); all pairs when a
    report has only one kind."""
    tuned = [m for m in methods if trained(m)]
    prompted = [m for m in methods if trained(m) is False]
    if tuned and prompted:
        return [(t, p) for t in tuned for p in prompted]
    return list(itertools.combinations(methods, 2))


# The columns each task row gets beside the methods': its test rows, what a predictor that ignores its input
# scores, and the smallest difference a paired test of that size finds (legalft.reporting.floors).
FLOOR_COLUMNS = ("n", "majority", "chance", "detectable")
AT_FLOOR = "°"  # after a number: no better than the majority class or chance


def fmt(value: float | None, interval: tuple[float, float] | None = None, runs: int = 1) -> str:
    """A cell: the mean, and its 95% interval: over several runs with how many runs, or over one run's test
    rows (``interval`` given, ``runs`` 1)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if interval is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]" + (f" ({runs})" if runs > 1 else "")


def number(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def metric_means(methods: dict[str, list[Run]]) -> dict[tuple[str, str], dict[str, float]]:
    """(task, method) -> each number its runs report for the task, averaged over them: the measured side of a
    published number in another metric than the task's (the PROSLEX paper's explanation metrics)."""
    values: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for method, runs in methods.items():
        for run in runs:
            for task, scores in run.tasks.items():
                for metric, value in scores.items():
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        values[(task, method)][metric].append(float(value))
    return {key: {metric: float(np.mean(v)) for metric, v in by_metric.items()} for key, by_metric in values.items()}


def build_tables(cells, rows, methods: list[str], reported: list[Reported], floors: dict | None = None,
                 row_intervals: dict | None = None, means: dict | None = None):
    """(display table, long table, gaps). Display: one row per task grouped by category, then each
    category's average; each task's test size, majority-class and chance scores and detectable difference
    (``floors``); a single-run cell with its interval over test rows (``row_intervals``), a cell no better
    than the majority class or chance marked; reported numbers in their own columns, never averaged with
    measured ones; a reported number in another metric in a row of that metric, beside each method's mean of
    it (``means``: ``metric_means``)."""
    import pandas as pd

    floors, row_intervals, means = floors or {}, row_intervals or {}, means or {}
    reported_columns = sorted({r.column for r in reported})
    reported_at = defaultdict(list)  # a paper may report several metrics of one model on a task
    for r in reported:
        reported_at[(r.task, r.column)].append(r)
    display, long, gaps = [], [], []
    for category, tasks in itertools.groupby(ordered_rows(rows), key=lambda t: rows[t][0]):
        tasks = list(tasks)
        for task in tasks:
            floor = floors.get(task)
            line = {"category": category, "task": task, "metric": rows[task][1], "n": str(floor.n) if floor else "",
                    "majority": number(floor and floor.majority), "chance": number(floor and floor.chance),
                    "detectable": number(floor and floor.detectable)}
            measured_line(line, long, gaps, cells, methods, floor, row_intervals)
            long += baseline_rows(line, floor)
            other_metrics = reported_line(line, long, reported_columns, reported_at, methods, means)
            display += [line, *other_metrics]
        if not is_per_label(category):
            display.append(category_average(category, tasks, cells, methods, reported_columns))
    return pd.DataFrame(display), pd.DataFrame(long), gaps


def measured_line(line: dict, long: list, gaps: list, cells, methods: list[str], floor, row_intervals: dict) -> None:
    """Each method's cell of a task's row (its mean, interval and runs, marked at the floor) and its long rows."""
    task = line["task"]
    for method in methods:
        cell = cells.get((task, method))
        if cell is None:
            line[method] = "—"
            gaps.append((task, method))
            continue
        over_rows = row_intervals.get((task, method)) if cell.runs == 1 else None
        interval = cell.interval if cell.runs > 1 else (over_rows[:2] if over_rows else None)
        at_floor = floor is not None and floor.bar is not None and cell.mean <= floor.bar + 1e-9
        line[method] = fmt(cell.mean, interval, cell.runs) + (AT_FLOOR if at_floor else "")
        long.append({"category": line["category"], "task": task, "metric": line["metric"], "method": method,
                     "kind": "measured", "mean": cell.mean, "std": cell.std, "runs": cell.runs,
                     "ci95_low": (interval or (cell.mean,))[0], "ci95_high": (interval or (None, cell.mean))[1],
                     "interval": "seeds" if cell.runs > 1 else (over_rows[2] if over_rows else ""),
                     "n": floor.n if floor else None, "at_floor": at_floor, "source": ""})


def baseline_rows(line: dict, floor) -> list[dict]:
    """The long table's majority-class and chance rows of a task."""
    if floor is None:
        return []
    return [{"category": line["category"], "task": line["task"], "metric": line["metric"], "method": name,
             "kind": "baseline", "mean": value, "std": 0.0, "runs": 0, "n": floor.n, "source": "the task's test rows"}
            for name, value in (("majority class", floor.majority), ("chance", floor.chance)) if value is not None]


def reported_line(line: dict, long: list, reported_columns: list[str], reported_at: dict, methods: list[str],
                  means: dict) -> list[dict]:
    """The published numbers of a task's row in their columns; those in another metric than the row's go
    into rows of their own (returned), beside each method's mean in that metric."""
    task, category = line["task"], line["category"]
    other_metrics: dict[str, dict] = {}
    for column in reported_columns:
        line[column] = ""
        for r in reported_at.get((task, column), ()):
            if r.metric == line["metric"]:
                line[column] = f"{r.value:.3f}"
            else:
                other = other_metrics.setdefault(r.metric, {
                    "category": category, "task": task, "metric": r.metric, **{c: "" for c in FLOOR_COLUMNS},
                    **{m: number(means.get((task, m), {}).get(r.metric)) for m in methods},
                    **{c: "" for c in reported_columns}})
                other[column] = f"{r.value:.3f}"
            long.append({"category": category, "task": task, "metric": r.metric, "method": column,
                         "kind": "reported", "mean": r.value, "std": 0.0, "runs": 0, "source": r.source})
    return list(other_metrics.values())


def category_average(category: str, tasks: list[str], cells, methods: list[str], reported_columns: list[str]) -> dict:
    """A category's row of averages: each method's mean over the category's tasks it scored."""
    average = {"category": category, "task": f"average ({len(tasks)} tasks)", "metric": "mean",
               **{column: "" for column in FLOOR_COLUMNS}}
    for method in methods:
        present = [cells[(t, method)].mean for t in tasks if (t, method) in cells]
        average[method] = "—" if not present else (
            f"{np.mean(present):.3f}" + ("" if len(present) == len(tasks) else f" ({len(present)} of {len(tasks)})"))
    average.update({column: "" for column in reported_columns})
    return average
