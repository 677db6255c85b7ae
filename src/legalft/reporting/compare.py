"""``python report.py runs='checkpoints/**' out=reports/<name>`` (``report=compare``): fine-tuned, LoRA
and in-context runs side by side, task by task, with published numbers beside them, paired
significance, plots and data-efficiency curves. Written whole into ``out`` or not at all."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from legalft.foundation.errors import UserError
from legalft.reporting import latex, plots
from legalft.reporting.appendix import confidence_pairs, write_appendix
from legalft.reporting.baselines import read_baselines
from legalft.reporting.latex import SIGNIFICANT
from legalft.reporting.legalevalhub import Hub, read_hub, write_hub_report
from legalft.reporting.marks import (ALPHA, CORRECTION_TEXT, compact_caption, interval_disagreements, mark_significant,
                                     resolution_note, table_caption)
from legalft.reporting.prompt_spread import prompt_families, spread_rows
from legalft.reporting.paired import CATEGORY_TEST_COLUMNS, paired_tests, task_test_columns
from legalft.reporting.report_folder import check_out, claimed, discard, publish, staging_folder
from legalft.reporting.runs import (Run, find_runs, group_by_method, is_per_label, lowest_seed, read_runs, unfinished,
                                    without_duplicates)
from legalft.reporting.significance import CORRECTIONS
from legalft.reporting.floors import no_better_than_floor, row_interval, task_floors
from legalft.reporting.tables import (AT_FLOOR, FLOOR_COLUMNS, build_tables, comparison_pairs, measured_cells, metric_means,
                                      method_order, ordered_rows)

log = logging.getLogger(__name__)


def cost_of(runs: list[Run]) -> str:
    """`` (mean 12.3 s to results, peak memory 1,024 MB, cpu (2 cores))`` over the runs that recorded it."""
    costs = [r.info["cost"] for r in runs if isinstance(r.info.get("cost"), dict)]
    if not costs:
        return ""
    wall = sum(float(c.get("wall_seconds", 0)) for c in costs) / len(costs)
    memory = max(float(c.get("peak_memory_mb", 0)) for c in costs)
    gpu = [float(c["peak_gpu_memory_mb"]) for c in costs if "peak_gpu_memory_mb" in c]
    devices = ", ".join(sorted({str(c.get("device", "?")) for c in costs}))
    return (f" (mean {wall:,.1f} s to results, peak memory {memory:,.0f} MB"
            + (f", GPU {max(gpu):,.0f} MB" if gpu else "") + f", {devices})")


@dataclass
class Comparison:
    """What a comparison report shows, computed from the runs before anything is written."""

    runs: list[Run]
    methods: dict[str, list[Run]]
    cells: dict
    rows: dict
    display: object  # the table as shown (pandas DataFrame)
    long: object  # one row per task, method and kind (pandas DataFrame)
    per_task: list[dict]
    per_category: list[dict]
    notes: list[str]
    gaps: list[tuple[str, str]]
    metric_mode: str
    resamples: int
    correction: str
    floor: str | None = None  # why no test can reach significance at this number of resamples
    hub: Hub | None = None
    left_out: list[Path] = field(default_factory=list)  # matched folders without results
    excluded: list[tuple[Path, str]] = field(default_factory=list)  # folders whose results this report does not use
    at_floor: list[dict] = field(default_factory=list)  # cells no better than the majority class or chance
    short_names: dict[str, str] | None = None


def write_report(out: Path, c: Comparison) -> None:
    """The report's tables, figures, appendix and ``report.md`` in ``out``."""
    import pandas as pd

    write_tables(out, c)
    ordered = method_order(c.methods)
    figures = plots.write_all(out, c.cells, c.rows, ordered, comparison_pairs(ordered), c.per_task, c.correction,
                              plots.chance_levels(c.runs, c.rows),
                              {m: confidence_pairs(lowest_seed(members)) for m, members in c.methods.items()})
    appendix = write_appendix(out, c.methods, c.rows, [t for t in ordered_rows(c.rows) if not is_per_label(c.rows[t][0])])
    spread = spread_rows(prompt_families(c.methods), c.cells, c.rows, ordered)
    if spread:
        pd.DataFrame(spread).to_csv(out / "prompt_sensitivity.csv", index=False)
    lines = (introduction(c) + hub_section(out, c) + spread_section(spread) + floor_section(c.at_floor)
             + gaps_section(c.gaps) + tests_section(c) + runs_section(c))
    if appendix is not None:
        lines.append("\nConfusion matrices and per-label precision and recall, task by task: [appendix.md](appendix.md)\n")
    lines += ["\n## Figures\n"] + [f"- ![{f.stem}]({f.name})" for f in figures]
    (out / "report.md").write_text("\n".join(lines) + "\n")


def write_tables(out: Path, c: Comparison) -> None:
    """The table as CSV, Markdown and LaTeX (whole and compact), and the paired tests as CSV."""
    import pandas as pd

    c.long.to_csv(out / "table.csv", index=False)
    c.display.to_csv(out / "table_display.csv", index=False)
    (out / "table.md").write_text(c.display.to_markdown(index=False) + "\n")
    numeric = [col for col in c.display.columns if col not in ("category", "task", "metric", *FLOOR_COLUMNS)]
    (out / "table.tex").write_text(latex.to_latex(c.display, numeric, table_caption(c.metric_mode, c.correction)))
    ordered = method_order(c.methods)
    (out / "table_compact.tex").write_text(latex.to_compact_latex(
        c.display, ordered, compact_caption(c.metric_mode, c.correction), latex.short_labels(ordered, c.short_names)))
    # with the header even when no pair could be tested (the report says why)
    pd.DataFrame(c.per_task, columns=task_test_columns(c.correction)).to_csv(out / "significance_tasks.csv", index=False)
    pd.DataFrame(c.per_category, columns=CATEGORY_TEST_COLUMNS).to_csv(out / "significance_categories.csv", index=False)


def introduction(c: Comparison) -> list[str]:
    lines = [
        f"# Comparison of {len(c.runs)} runs ({len(c.methods)} methods)\n",
        f"Each task is scored with its own metric; LegalBench metric mode: {c.metric_mode}. Cells: mean over runs "
        "[95% t-interval of the mean, number of runs] when a method has several seeds; a single run's score [its 95% "
        "interval over the test rows: Wilson's for accuracy, else the percentile bootstrap]. `n`: the task's test "
        "rows; `majority`: the score of answering every row with the most frequent gold answer; `chance`: the expected "
        "score of a uniformly random label; `detectable`: the smallest difference between two methods a paired test "
        f"of n rows finds with 80% power at 0.05 (two proportions at 0.5). {AT_FLOOR} (after a number): no better "
        "than the majority class or chance. Columns marked † are runs that "
        "cannot stand beside published numbers (trained on test data, a subset of a test split, or another metric "
        "mode). `reported:` columns are numbers from the papers (data/published_baselines.csv and any "
        f"report.baselines), shown as reported, never averaged with measured ones. {SIGNIFICANT} (after a number): "
        "the row's best method is better than every method it was paired with on the task (paired permutation test, "
        f"adjusted p < {ALPHA}; the tests are below).\n",
        c.display.to_markdown(index=False) + "\n",
    ]
    published = [r for r in c.long.to_dict("records") if r["kind"] == "reported"]
    if published:
        matched = sum(r["metric"] == c.rows[r["task"]][1] for r in published)
        lines.append(f"{matched} of {len(published)} published numbers for these tasks are in the metric the tasks "
                     f"are measured in; the other {len(published) - matched} are in rows of their own metric, "
                     "with no measured number beside them.\n")
    return lines


def hub_section(out: Path, c: Comparison) -> list[str]:
    if c.hub is None:
        return []
    measured = defaultdict(dict)
    for (task, method), cell in c.cells.items():
        if not is_per_label(c.rows[task][0]):
            measured[method][task] = cell.mean
    return write_hub_report(out, c.hub, dict(measured), c.rows)


def spread_section(spread: list[dict]) -> list[str]:
    import pandas as pd

    if not spread:
        return []
    return ["## Prompt sensitivity\n\nFor each model and answer mode prompted several ways, per task the "
            "lowest and highest score over its prompts and their spread, and each fine-tuned method's margin "
            "over the best prompt (`prompt_sensitivity.csv`): a gain smaller than the spread is within what "
            "choosing another prompt gives.\n",
            pd.DataFrame(spread).to_markdown(index=False, floatfmt=".3f") + "\n"]


def floor_section(at_floor: list[dict]) -> list[str]:
    if not at_floor:
        return []
    return ([f"## No better than the majority class or chance\n\nThese cells ({AT_FLOOR}) score no more than a "
             "predictor that ignores its input; a run that gave every row one answer has collapsed (check its "
             "prompt, answer reading or training):\n"]
            + [f"- {f['task']}, {f['method']}: {f['mean']:.3f} ("
               + ", ".join(f"{name} {f[name]:.3f}" for name in ("majority", "chance") if f[name] is not None) + ")"
               + ("; one answer for every row" if f["collapsed"] else "") for f in at_floor] + [""])


def gaps_section(gaps: list[tuple[str, str]]) -> list[str]:
    if not gaps:
        return []
    return (["## Gaps\n\nMethods without a score on a task (shown as —, and left out of that category's "
             "average, whose cell says how many tasks it covers):\n"]
            + [f"- {method}: {task}" for task, method in gaps] + [""])


def tests_section(c: Comparison) -> list[str]:
    import pandas as pd

    lines = []
    if c.per_task:
        lines.append("## Paired tests per task\n\nDifference A - B in the row's metric, on the examples both scored. "
                     f"p_permutation: two-sided paired permutation test ({c.resamples} resamples swapping the two "
                     "methods' predictions per example; exact where there are fewer swaps). "
                     f"{CORRECTION_TEXT[c.correction]} ci_low, ci_high: 95% bootstrap interval of the difference "
                     f"({c.resamples} resamples of the examples; `interval` says BCa, or percentile where BCa is "
                     "undefined). A resample on which a class is missing is scored as the full test set would be: "
                     "balanced accuracy over the classes present, F1 of nothing named and nothing expected as "
                     "LegalBench and scikit-learn define it (docs/reports.md).\n")
        if c.floor:
            lines.append(f"**{c.floor}**\n")
        lines.append(pd.DataFrame(c.per_task).to_markdown(index=False, floatfmt=".3f") + "\n")
        lines += [f"- {note}" for note in interval_disagreements(c.per_task, c.correction)] + [""]
    if c.per_category:
        lines.append("## Paired t-tests over the tasks of each category\n")
        lines.append(pd.DataFrame(c.per_category).to_markdown(index=False, floatfmt=".3f") + "\n")
    if c.notes:
        lines.append("## Pairing notes\n")
        lines += [f"- {note}" for note in c.notes] + [""]
    return lines


def runs_section(c: Comparison) -> list[str]:
    lines = ["## Runs\n\nEach method's run folders, and what its runs cost as they recorded it (wall time to "
             "their results, peak memory, device; runs of earlier releases recorded none):\n"]
    lines += [f"- {method}: " + ", ".join(str(r.path) for r in members) + cost_of(members)
              for method, members in c.methods.items()]
    if c.left_out:
        lines.append("\n## Missing\n\nMatched, but without results (failed, still running, or never scored), and so "
                     "left out:\n")
        lines += [f"- {folder}" for folder in c.left_out]
    if c.excluded:
        lines.append("\n## Left out\n\nMatched, with results this report does not use:\n")
        lines += [f"- {reason}" for _, reason in c.excluded]
    return lines


def compare_from_config(cfg) -> Path:
    """``report.py report=compare``: the runs glob, out, and the ``report`` group's settings."""
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
            legalevalhub: str | None = None, short_names: dict[str, str] | None = None) -> Path:
    out_path = Path(out)
    if correction not in CORRECTIONS:
        raise UserError(f"report.correction={correction!r}: choose one of {', '.join(CORRECTIONS)} (Holm's step-down, "
                        "Benjamini-Hochberg, or p-values as tested).")
    folders, matched = find_runs(runs_pattern)
    with claimed(out_path):  # a second report into the same out refuses at once
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
        floors = task_floors(runs, rows, metric_mode, seed)
        # the one run of the method that scored the task (a multirun over tasks: one run per task)
        single = {(task, method): row_interval(scored[0], task, metric_mode, resamples, seed)
                  for (task, method), cell in cells.items() if cell.runs == 1 and not is_per_label(rows[task][0])
                  for scored in [[r for r in methods[method] if task in r.tasks]] if scored}
        display, long, gaps = build_tables(cells, rows, ordered_methods, reported, floors, single,
                                           metric_means(methods))
        per_task, per_category, notes = paired_tests(methods, comparison_pairs(ordered_methods), rows, resamples, seed,
                                                     metric_mode, correction)
        mark_significant(display, per_task, correction, ordered_methods)
        floor = resolution_note(per_task, resamples, correction)
        if floor:
            log.warning(floor)
        staging = staging_folder(out_path)
        try:
            write_report(staging, Comparison(
                runs, methods, cells, rows, display, long, per_task, per_category, notes, gaps, metric_mode, resamples,
                correction, floor, hub, left_out=unfinished(matched, folders), excluded=damaged + duplicates,
                at_floor=no_better_than_floor(methods, cells, floors), short_names=short_names))
            publish(staging, out_path, overwrite)  # the report appears whole
        except BaseException:
            discard(staging)
            raise
    from legalft.reporting.wandb_report import log_to_active_wandb_run

    if log_to_active_wandb_run(long):
        log.info("comparison table logged to the active W&B run")
    return out_path
