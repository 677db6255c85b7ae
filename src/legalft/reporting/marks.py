"""What the report says about significance: the marks in its tables (the best method of a row that
beat every method it was paired with), the caption that explains them, how the p-values were adjusted,
and when too few resamples leave no task able to reach the level."""

from __future__ import annotations

import math
from collections import defaultdict

from legalft.reporting import latex
from legalft.reporting.latex import SIGNIFICANT
from legalft.reporting.runs import NOT_COMPARABLE

ALPHA = 0.05  # the level a significance mark stands for


def table_caption(metric_mode: str, correction: str) -> str:
    adjusted = {"holm": "after Holm's correction over tasks", "bh": "after Benjamini-Hochberg correction over tasks",
                "none": "not corrected for testing many tasks"}[correction]
    return ("Each task in its own metric (LegalBench metric mode: " + metric_mode + "); a method's cell is the mean "
            "over its runs, with the 95% t-interval of the mean and the number of runs when there are several. Bold: "
            f"the best number of the row. {SIGNIFICANT}: the row's best method is better than every method it was "
            f"paired with on the task (paired permutation test, p < {ALPHA} {adjusted}). {NOT_COMPARABLE}: runs "
            "that cannot stand beside published numbers. reported: published numbers, as reported. —: no score.")


def compact_caption(metric_mode: str, correction: str) -> str:
    adjusted = {"holm": "Holm-adjusted", "bh": "Benjamini-Hochberg-adjusted", "none": "unadjusted"}[correction]
    return (f"Mean over runs (LegalBench metric mode {metric_mode}). Bold: the best of the row. {SIGNIFICANT}: better "
            f"than every method it was paired with on the task ({adjusted} p < {ALPHA}). °: no better than the "
            f"majority class or chance. {NOT_COMPARABLE}: not comparable with published numbers.")


def mark_significant(display, per_task: list[dict], correction: str, methods: list[str]) -> None:
    """Marks, in place, the best measured cell of each task row whose method beat every method it was
    paired with on that task (the difference in its favour, adjusted p below ALPHA)."""
    tests = defaultdict(list)
    for test in per_task:  # keyed by the metric tested too: a task's rows of other metrics were not tested
        tests[(test["task"], test["metric"], test["method_a"])].append((test["difference"], test[f"p_{correction}"]))
        tests[(test["task"], test["metric"], test["method_b"])].append((-test["difference"], test[f"p_{correction}"]))
    for index, row in display.iterrows():
        best = latex.best_columns(row, methods)
        if len(best) != 1:
            continue
        (method,) = best
        paired = tests.get((row["task"], row["metric"], method))
        if paired and all(difference > 0 and p < ALPHA for difference, p in paired):
            display.at[index, method] = f"{row[method]}{SIGNIFICANT}"


CORRECTION_TEXT = {
    "holm": "p_holm: the permutation p-values adjusted with Holm's step-down method over the tasks of each method "
            "pair (family-wise error).",
    "bh": "p_bh: the permutation p-values adjusted with the Benjamini-Hochberg procedure over the tasks of each "
          "method pair (false discovery rate).",
    "none": "p_none: the permutation p-values, not adjusted for testing many tasks.",
}


def resolution_note(per_task: list[dict], resamples: int, correction: str) -> str | None:
    """What to say when no task can reach adjusted p < ALPHA: a randomised permutation test's smallest
    two-sided p is 2 / (resamples + 1), and Holm multiplies the smallest p by the number of tests."""
    if correction != "holm" or not per_task:
        return None
    tests = max(sum(1 for t in per_task if (t["method_a"], t["method_b"]) == pair)
                for pair in {(t["method_a"], t["method_b"]) for t in per_task})
    floor = tests * 2 / (resamples + 1)
    if floor < ALPHA:
        return None
    needed = math.floor(2 * tests / ALPHA + 1e-9)  # the least R with 2 * tests / (R + 1) < ALPHA
    return (f"With {resamples} resamples and {tests} tasks per pair, Holm-adjusted p cannot fall below {floor:.3f} "
            f"(the smallest permutation p is 2/{resamples + 1}): no task can be marked significant. Set "
            f"report.resamples to at least {needed} (or report.correction=bh).")


def interval_disagreements(per_task: list[dict], correction: str) -> list[str]:
    """One sentence for each paired test whose bootstrap interval excludes 0 while its adjusted p is not below
    ALPHA, so a reader of both columns knows which one the marks follow and why they differ."""
    adjusted = {"holm": "Holm-adjusted", "bh": "Benjamini-Hochberg-adjusted", "none": "unadjusted"}[correction]
    why = ("the interval is this task's alone, not widened for the other tasks tested on the pair, which the "
           "adjusted p accounts for" if correction != "none" else
           "a permutation test and a bootstrap interval answer slightly different questions and part near the edge")
    notes = []
    for test in per_task:
        low, high, p = test.get("ci_low"), test.get("ci_high"), test.get(f"p_{correction}")
        if low is None or high is None or p is None or not (low > 0 or high < 0) or p < ALPHA:
            continue
        notes.append(f"{test['task']} ({test['method_a']} - {test['method_b']}, {test['metric']}): the 95% bootstrap "
                     f"interval [{low:.3f}, {high:.3f}] excludes 0 but the {adjusted} permutation p is {p:.3f}, so "
                     f"it is not marked: {why}.")
    return notes
