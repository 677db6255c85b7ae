"""Paired tests between methods over the examples both scored: per task a permutation test and a
bootstrap interval of the difference, per category a paired t-test over the tasks (the statistics are
in ``significance.py``)."""

from __future__ import annotations

import itertools

import numpy as np

from legalft.evaluation.metrics import item_counts
from legalft.reporting.runs import Run, is_per_label, lowest_seed
from legalft.reporting.significance import (
    adjust_p_values,
    paired_bootstrap_interval,
    paired_permutation_test,
    paired_t_test_over_tasks,
)


def paired_tests(methods: dict[str, list[Run]], pairs, rows, resamples: int, seed: int, metric_mode: str,
                 correction: str = "holm"):
    """Per task: permutation p-value (adjusted over the tasks of each method pair by ``correction``)
    and bootstrap interval of the difference, on the examples both methods scored (each method's run
    with the lowest seed). Per category: paired t-test over tasks."""
    first_run = {m: lowest_seed(runs) for m, runs in methods.items()}
    from legalft.foundation.loop_progress import Progress

    per_task, notes = [], []
    tasks = [t for t in rows if not is_per_label(rows[t][0])]
    progress = Progress(len(pairs) * len(tasks), f"paired tests ({resamples} resamples)", unit="task pairs")
    for a, b in pairs:
        pair_tests = []
        for task in tasks:
            test = paired_test(task, rows[task], (a, first_run[a]), (b, first_run[b]), resamples, seed, metric_mode,
                               notes)
            if test is not None:
                pair_tests.append(test)
            progress.update(1)  # after the work: the rate counts tasks tested
        for test, adjusted in zip(pair_tests, adjust_p_values([t["p_permutation"] for t in pair_tests], correction)):
            test[f"p_{correction}"] = float(adjusted)
        per_task += pair_tests
    per_category = []
    for (a, b), tests in itertools.groupby(sorted(per_task, key=lambda t: (t["method_a"], t["method_b"], t["category"])),
                                           key=lambda t: (t["method_a"], t["method_b"])):
        for category, in_category in itertools.groupby(tests, key=lambda t: t["category"]):
            in_category = list(in_category)
            first = [methods_mean(methods[a], t["task"], t["metric"]) for t in in_category]
            second = [methods_mean(methods[b], t["task"], t["metric"]) for t in in_category]
            mean_difference, p_value = paired_t_test_over_tasks(first, second)
            per_category.append({"category": category, "method_a": a, "method_b": b, "tasks": len(in_category),
                                 "mean_difference": mean_difference, "p_t_test": p_value})
    progress.close()
    return per_task, per_category, notes


def paired_test(task: str, row: tuple[str, str], first: tuple[str, Run], second: tuple[str, Run], resamples: int,
                seed: int, metric_mode: str, notes: list[str]) -> dict | None:
    """One task's permutation test and bootstrap interval of first - second; None (with a note where the
    reason is worth telling) when the two runs cannot be paired on it."""
    (a, run_a), (b, run_b) = first, second
    if task not in run_a.tasks or task not in run_b.tasks:
        return None
    records_a, records_b = run_a.predictions.get(task), run_b.predictions.get(task)
    if not records_a or not records_b:
        notes.append(f"{task}: no predictions.jsonl records for {a if not records_a else b}; not tested")
        return None
    shared_a, shared_b = shared_examples(records_a, records_b)
    if len(shared_a) < MIN_SHARED:
        notes.append(f"{task}: {a} and {b} share {len(shared_a)} scored examples ({len(records_a)} and "
                     f"{len(records_b)} scored), too few to test (under {MIN_SHARED}); not tested")
        return None
    if len(shared_a) < max(len(records_a), len(records_b)):
        notes.append(f"{task}: {a} and {b} tested on the {len(shared_a)} examples both scored (of {len(records_a)} "
                     f"and {len(records_b)})")
    gold = [r["gold"] for r in shared_a]
    pred_a = [r["prediction"] for r in shared_a]
    pred_b = [r["prediction"] for r in shared_b]
    # scored as the row is: by the run that names the row's metric (LegalBench's own), if either does
    scores = next((r.tasks[task] for r in (run_a, run_b) if r.tasks[task].get("metric") == row[1]), run_a.tasks[task])
    counts_a = item_counts(task, scores, gold, pred_a, metric_mode)
    counts_b = item_counts(task, scores, gold, pred_b, metric_mode)
    difference, p_value = paired_permutation_test(counts_a, counts_b, resamples, seed)
    low, high, interval = paired_bootstrap_interval(counts_a, counts_b, resamples, seed)
    return {"category": row[0], "task": task, "metric": row[1], "method_a": a, "method_b": b, "n": len(gold),
            "n_a": len(records_a), "n_b": len(records_b), "difference": difference, "p_permutation": p_value, "ci_low": low, "ci_high": high, "interval": interval}


CATEGORY_TEST_COLUMNS = ["category", "method_a", "method_b", "tasks", "mean_difference", "p_t_test"]
MIN_SHARED = 10  # fewer shared examples than this decide nothing: the test is not run, and the report says so


def task_test_columns(correction: str) -> list[str]:
    """The columns of significance_tasks.csv: after ``p_permutation``, the p-values adjusted by ``correction``."""
    return ["category", "task", "metric", "method_a", "method_b", "n", "n_a", "n_b", "difference", "p_permutation",
            f"p_{correction}", "ci_low", "ci_high", "interval"]


def shared_examples(records_a: list[dict], records_b: list[dict]) -> tuple[list[dict], list[dict]]:
    """The records of the examples both runs scored, in the first run's order: the same id with the same
    gold answer (a run scored on ``protocol.limit`` rows, or on another subset, shares only those)."""
    from json import dumps

    def key(record):
        return record["id"], dumps(record["gold"], sort_keys=True)

    by_key = {key(r): r for r in records_b}
    shared = [(r, by_key[key(r)]) for r in records_a if key(r) in by_key]
    return [a for a, _ in shared], [b for _, b in shared]


def methods_mean(runs: list[Run], task: str, metric: str) -> float:
    values = [r.tasks[task][metric] for r in runs if task in r.tasks and metric in r.tasks[task]]
    return float(np.mean(values))
