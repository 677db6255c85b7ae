"""``python evaluate.py report=compare runs='checkpoints/**' out=reports/<name>``: fine-tuned, LoRA
and in-context runs side by side, task by task, with published numbers beside them, paired
significance, plots and data-efficiency curves. Written whole into ``out`` or not at all."""

from __future__ import annotations

import itertools
import logging
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from legalft.errors import UserError
from legalft.evaluation.metrics import primary_metric
from legalft.reporting import latex, plots
from legalft.reporting.appendix import confidence_pairs, lowest_seed, write_appendix
from legalft.reporting.baselines import Reported, read_baselines
from legalft.reporting.paired import paired_tests
from legalft.reporting.report_folder import check_out, discard, publish, staging_folder
from legalft.reporting.latex import SIGNIFICANT
from legalft.reporting.legalevalhub import Hub, read_hub, write_hub_report
from legalft.reporting.runs import (NOT_COMPARABLE, Run, find_runs, group_by_method, is_per_label, per_label_category, read_runs,
                                    trained, unfinished, without_duplicates)
from legalft.reporting.significance import CORRECTIONS

log = logging.getLogger(__name__)

ALPHA = 0.05  # the level a significance mark stands for
CATEGORY_ORDER = ["issue", "rule", "conclusion", "interpretation", "rhetoric", "PROSLEX"]


@dataclass(frozen=True)
class Cell:
    """One method on one task: the mean over its runs (seeds) and their spread."""

    mean: float
    std: float
    runs: int
    by_seed: tuple[tuple[int | None, float], ...] = ()  # (seed, score) of each run

    @property
    def interval(self) -> tuple[float, float]:
        """95% t-interval of the mean over runs (seeds); the mean itself for a single run."""
        if self.runs < 2:
            return self.mean, self.mean
        from scipy.stats import t

        half = float(t.ppf(0.975, self.runs - 1)) * self.std / math.sqrt(self.runs)
        return self.mean - half, self.mean + half


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
    cells = {}
    for key, seeded in values.items():
        v = [value for _, value in seeded]
        cells[key] = Cell(float(np.mean(v)), float(np.std(v, ddof=1)) if len(v) > 1 else 0.0, len(v), tuple(seeded))
    return cells, rows


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


def fmt(value: float | None, interval: tuple[float, float] | None = None, runs: int = 1) -> str:
    """A cell: the mean, and over several runs its 95% interval and how many runs."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}] ({runs})" if runs > 1 else f"{value:.3f}"


def build_tables(cells, rows, methods: list[str], reported: list[Reported]):
    """(display table, long table, gaps). Display: one row per task grouped by category, then each
    category's average; reported numbers in their own columns, never averaged with measured ones."""
    import pandas as pd

    reported_columns = sorted({r.column for r in reported})
    reported_at = {(r.task, r.column): r for r in reported}
    display, long, gaps = [], [], []
    order = ordered_rows(rows)
    for category, tasks in itertools.groupby(order, key=lambda t: rows[t][0]):
        tasks = list(tasks)
        for task in tasks:
            line = {"category": category, "task": task, "metric": rows[task][1]}
            for method in methods:
                cell = cells.get((task, method))
                line[method] = fmt(cell.mean, cell.interval, cell.runs) if cell else "—"
                if cell is None:
                    gaps.append((task, method))
                else:
                    long.append({"category": category, "task": task, "metric": rows[task][1], "method": method,
                                 "kind": "measured", "mean": cell.mean, "std": cell.std, "runs": cell.runs,
                                 "ci95_low": cell.interval[0], "ci95_high": cell.interval[1], "source": ""})
            other_metrics: dict[str, dict] = {}  # published numbers in another metric: a row of their own
            for column in reported_columns:
                r = reported_at.get((task, column))
                line[column] = f"{r.value:.3f}" if r is not None and r.metric == rows[task][1] else ""
                if r is not None and r.metric != rows[task][1]:
                    other = other_metrics.setdefault(r.metric, {"category": category, "task": task, "metric": r.metric,
                                                                 **{m: "" for m in methods},
                                                                 **{c: "" for c in reported_columns}})
                    other[column] = f"{r.value:.3f}"
                if r is not None:
                    long.append({"category": category, "task": task, "metric": r.metric, "method": column,
                                 "kind": "reported", "mean": r.value, "std": 0.0, "runs": 0, "source": r.source})
            display.append(line)
            display += list(other_metrics.values())
        if is_per_label(category):
            continue
        average = {"category": category, "task": f"average ({len(tasks)} tasks)", "metric": "mean"}
        for method in methods:
            present = [cells[(t, method)].mean for t in tasks if (t, method) in cells]
            average[method] = "—" if not present else (
                f"{np.mean(present):.3f}" + ("" if len(present) == len(tasks) else f" ({len(present)} of {len(tasks)})"))
        for column in reported_columns:
            average[column] = ""
        display.append(average)
    return pd.DataFrame(display), pd.DataFrame(long), gaps


def write_report(out: Path, display, long, per_task, per_category, notes, gaps, runs: list[Run],
                 methods: dict[str, list[Run]], cells, rows, metric_mode: str, resamples: int, correction: str,
                 hub: Hub | None = None, left_out: list[Path] = (),
                 excluded: list[tuple[Path, str]] = ()) -> None:
    import pandas as pd

    long.to_csv(out / "table.csv", index=False)
    display.to_csv(out / "table_display.csv", index=False)
    (out / "table.md").write_text(display.to_markdown(index=False) + "\n")
    numeric = [c for c in display.columns if c not in ("category", "task", "metric")]
    (out / "table.tex").write_text(latex.to_latex(display, numeric, table_caption(metric_mode, correction)))
    pd.DataFrame(per_task).to_csv(out / "significance_tasks.csv", index=False)
    pd.DataFrame(per_category).to_csv(out / "significance_categories.csv", index=False)
    figures = plots.write_all(out, cells, rows, method_order(methods), comparison_pairs(method_order(methods)),
                              per_task, correction, chance_levels(runs, rows),
                              {m: confidence_pairs(lowest_seed(members)) for m, members in methods.items()})
    appendix = write_appendix(out, methods, rows, [t for t in ordered_rows(rows) if not is_per_label(rows[t][0])])
    lines = [
        f"# Comparison of {len(runs)} runs ({len(methods)} methods)\n",
        f"Each task is scored with its own metric; LegalBench metric mode: {metric_mode}. Cells: mean over runs "
        "[95% t-interval of the mean, number of runs] when a method has several seeds. Columns marked † are runs that "
        "cannot stand beside published numbers (trained on test data, a subset of a test split, or another metric "
        "mode). `reported:` columns are numbers from the papers (data/published_baselines.csv and any "
        f"report.baselines), shown as reported, never averaged with measured ones. {SIGNIFICANT} (after a number): "
        "the row's best method is better than every method it was paired with on the task (paired permutation test, "
        f"adjusted p < {ALPHA}; the tests are below).\n",
        display.to_markdown(index=False) + "\n",
    ]
    published = [r for r in long.to_dict("records") if r["kind"] == "reported"]
    if published:
        matched = sum(r["metric"] == rows[r["task"]][1] for r in published)
        lines.append(f"{matched} of {len(published)} published numbers for these tasks are in the metric the tasks "
                     f"are measured in; the other {len(published) - matched} are in rows of their own metric, "
                     "with no measured number beside them.\n")
    if hub is not None:
        measured = defaultdict(dict)
        for (task, method), cell in cells.items():
            if not is_per_label(rows[task][0]):
                measured[method][task] = cell.mean
        lines += write_hub_report(out, hub, dict(measured), rows)
    if gaps:
        lines.append("## Gaps\n\nMethods without a score on a task (shown as —, and left out of that category's "
                     "average, whose cell says how many tasks it covers):\n")
        lines += [f"- {method}: {task}" for task, method in gaps] + [""]
    if per_task:
        lines.append("## Paired tests per task\n\nDifference A - B in the row's metric, on the examples both scored. "
                     f"p_permutation: two-sided paired permutation test ({resamples} resamples swapping the two "
                     "methods' predictions per example; exact where there are fewer swaps). "
                     f"{CORRECTION_TEXT[correction]} ci_low, ci_high: 95% bootstrap interval of the difference "
                     f"({resamples} resamples of the examples; `interval` says BCa, or percentile where BCa is "
                     "undefined). A resample on which a class is missing is scored as the full test set would be: "
                     "balanced accuracy over the classes present, F1 of nothing named and nothing expected as "
                     "LegalBench and scikit-learn define it (docs/reports.md).\n")
        floor = resolution_note(per_task, resamples, correction)
        if floor:
            lines.append(f"**{floor}**\n")
        lines.append(pd.DataFrame(per_task).to_markdown(index=False, floatfmt=".3f") + "\n")
    if per_category:
        lines.append("## Paired t-tests over the tasks of each category\n")
        lines.append(pd.DataFrame(per_category).to_markdown(index=False, floatfmt=".3f") + "\n")
    if notes:
        lines.append("## Not tested\n")
        lines += [f"- {note}" for note in notes] + [""]
    lines.append("## Runs\n")
    lines += [f"- {method}: " + ", ".join(str(r.path) for r in members) for method, members in methods.items()]
    if left_out:
        lines.append("\n## Missing\n\nMatched, but without results (failed, still running, or never scored), and so "
                     "left out:\n")
        lines += [f"- {folder}" for folder in left_out]
    if excluded:
        lines.append("\n## Left out\n\nMatched, with results this report does not use:\n")
        lines += [f"- {reason}" for _, reason in excluded]
    if appendix is not None:
        lines.append("\nConfusion matrices and per-label precision and recall, task by task: [appendix.md](appendix.md)\n")
    lines.append("\n## Figures\n")
    lines += [f"- ![{f.stem}]({f.name})" for f in figures]
    (out / "report.md").write_text("\n".join(lines) + "\n")


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


def chance_levels(runs: list[Run], rows: dict[str, tuple[str, str]]) -> dict[str, float]:
    """1/k for the tasks scored by balanced accuracy (k: the gold classes of the task's test examples),
    what a predictor that ignores its input scores."""
    from legalft.evaluation.normalize import normalize

    classes = defaultdict(set)
    for run in runs:
        for task, records in run.predictions.items():
            if task in rows and rows[task][1] == "balanced_accuracy":
                classes[task] |= {normalize(r["gold"]) for r in records if isinstance(r["gold"], str)}
    return {task: 1 / len(found) for task, found in classes.items() if found}


def table_caption(metric_mode: str, correction: str) -> str:
    adjusted = {"holm": "after Holm's correction over tasks", "bh": "after Benjamini-Hochberg correction over tasks",
                "none": "not corrected for testing many tasks"}[correction]
    return ("Each task in its own metric (LegalBench metric mode: " + metric_mode + "); a method's cell is the mean "
            "over its runs, with the 95% t-interval of the mean and the number of runs when there are several. Bold: "
            f"the best number of the row. {SIGNIFICANT}: the row's best method is better than every method it was "
            f"paired with on the task (paired permutation test, p < {ALPHA} {adjusted}). {NOT_COMPARABLE}: runs "
            "that cannot stand beside published numbers. reported: published numbers, as reported. —: no score.")


def mark_significant(display, per_task: list[dict], correction: str, methods: list[str]) -> None:
    """Marks, in place, the best measured cell of each task row whose method beat every method it was
    paired with on that task (the difference in its favour, adjusted p below ALPHA)."""
    tests = defaultdict(list)
    for test in per_task:
        tests[(test["task"], test["method_a"])].append((test["difference"], test[f"p_{correction}"]))
        tests[(test["task"], test["method_b"])].append((-test["difference"], test[f"p_{correction}"]))
    for index, row in display.iterrows():
        best = latex.best_columns(row, methods)
        if len(best) != 1:
            continue
        (method,) = best
        paired = tests.get((row["task"], method))
        if paired and all(difference > 0 and p < ALPHA for difference, p in paired):
            display.at[index, method] = f"{row[method]}{SIGNIFICANT}"


CORRECTION_TEXT = {
    "holm": "p_holm: the permutation p-values adjusted with Holm's step-down method over the tasks of each method "
            "pair (family-wise error).",
    "bh": "p_bh: the permutation p-values adjusted with the Benjamini-Hochberg procedure over the tasks of each "
          "method pair (false discovery rate).",
    "none": "p_none: the permutation p-values, not adjusted for testing many tasks.",
}


def compare_from_config(cfg) -> Path:
    """``evaluate.py report=compare``: the runs glob, out, and the ``report`` group's settings."""
    from omegaconf import OmegaConf

    if not cfg.runs:
        raise UserError("report=compare needs runs=<glob of run folders>, e.g. runs='checkpoints/**' "
                        "(or a list: runs=[DIR,DIR]).")
    runs = OmegaConf.to_container(cfg.runs) if OmegaConf.is_list(cfg.runs) else cfg.runs
    settings = OmegaConf.to_container(cfg.report, resolve=True)
    baselines = settings.pop("baselines")
    out = compare(runs, cfg.out, baselines=baselines.get("csv") or [], legalevalhub=baselines.get("legalevalhub"),
                  **settings)
    if "wandb" in (cfg.get("logger") or {}):
        from legalft.reporting.wandb_report import log_report_to_wandb

        log_report_to_wandb(cfg, out)
    return out


def compare(runs_pattern: str | list[str], out: str, metric_mode: str = "paper", baselines: list[str] = (),
            resamples: int = 1000, seed: int = 0, overwrite: bool = False, correction: str = "holm",
            legalevalhub: str | None = None) -> Path:
    out_path = Path(out)
    if correction not in CORRECTIONS:
        raise UserError(f"report.correction={correction!r}: choose one of {', '.join(CORRECTIONS)} (Holm's step-down, "
                        "Benjamini-Hochberg, or p-values as tested).")
    folders, matched = find_runs(runs_pattern)
    check_out(out_path, runs_pattern, matched, overwrite)
    runs, damaged = read_runs(folders)
    runs, duplicates = without_duplicates(runs, metric_mode)
    if not runs:
        raise UserError(f"runs={runs_pattern!r}: no run folder holds usable results:\n  " +
                        "\n  ".join(reason for _, reason in damaged))
    methods = group_by_method(runs, metric_mode)
    cells, rows = measured_cells(methods)
    if not rows:
        raise UserError(f"runs={runs_pattern!r}: the runs hold no scored tasks.")
    ordered_methods = method_order(methods)
    reported = read_baselines(list(baselines), set(rows))
    hub = read_hub(legalevalhub) if legalevalhub else None
    display, long, gaps = build_tables(cells, rows, ordered_methods, reported)
    per_task, per_category, notes = paired_tests(methods, comparison_pairs(ordered_methods), rows, resamples, seed,
                                                 metric_mode, correction)
    mark_significant(display, per_task, correction, ordered_methods)
    floor = resolution_note(per_task, resamples, correction)
    if floor:
        log.warning(floor)
    staging, created = staging_folder(out_path)
    try:
        write_report(staging, display, long, per_task, per_category, notes, gaps, runs, methods, cells, rows,
                     metric_mode, resamples, correction, hub, left_out=unfinished(matched, folders),
                     excluded=damaged + duplicates)
        publish(staging, out_path, overwrite)  # the report appears whole
    except BaseException:
        discard(staging, created)
        raise
    from legalft.reporting.wandb_report import log_to_active_wandb_run

    if log_to_active_wandb_run(long):
        log.info("comparison table logged to the active W&B run")
    return out_path
