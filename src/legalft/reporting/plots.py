"""The report's figures, each as PDF, SVG and a 300-dpi PNG, in the Okabe-Ito colour-blind-safe
palette: per-category bars (value labels, 95% intervals, chance levels), a per-task paired plot of
each fine-tuned method against each in-context one (the difference with its bootstrap interval,
sorted within category: readable at 162 tasks), data-efficiency curves, and a reliability diagram
of the methods that score labels."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from legalft.foundation.path_names import component
from legalft.reporting.runs import Run, is_per_label, trained
from legalft.reporting.significance import t_interval

SUBSET = re.compile(r" n=(\d+)")  # a run trained on a subset: one point of a data-efficiency curve
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]


def colours(methods: list[str]) -> dict[str, str]:
    """One colour per method, the same in every figure of a report (by the report's method order; past eight
    methods the palette repeats)."""
    return {method: OKABE_ITO[i % len(OKABE_ITO)] for i, method in enumerate(methods)}
FORMATS = ("png", "pdf", "svg")


def pyplot():
    import logging

    import matplotlib

    logging.getLogger("fontTools").setLevel(logging.WARNING)  # its font subsetting logs each table it drops
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"  # SVG text stays text
    plt.rcParams["pdf.fonttype"] = 42  # TrueType in PDFs, as journals ask
    return plt


def slug(text: str) -> str:
    """A method or task name in a figure's file name: letters, digits and ``_`` alone."""
    return component(re.sub(r"[^A-Za-z0-9]+", "_", str(text)).strip("_") or "_", "figure name")


def save(fig, out: Path, stem: str) -> Path:
    """The figure as PNG (300 dpi), PDF and SVG; returns the PNG (what report.md shows)."""
    plt = pyplot()
    fig.tight_layout()
    for extension in FORMATS:
        fig.savefig(out / f"{stem}.{extension}", dpi=300 if extension == "png" else None)
    plt.close(fig)
    return out / f"{stem}.png"


def category_summary(cells, tasks: list[str], method: str) -> tuple[float, tuple[float, float] | None, str]:
    """(mean over the category's tasks, its 95% interval, over what): over seeds where the method has
    several seeds on every task of the category (the category mean per seed), over tasks otherwise."""
    present = [t for t in tasks if (t, method) in cells]
    if not present:
        return float("nan"), None, ""
    mean = float(np.mean([cells[(t, method)].mean for t in present]))
    seed_sets = [{seed for seed, _ in cells[(t, method)].by_seed} for t in present]
    seeds = sorted(set.intersection(*seed_sets), key=lambda s: (s is None, s or 0)) if seed_sets else []
    if len(seeds) >= 2:
        per_seed = [float(np.mean([dict(cells[(t, method)].by_seed)[seed] for t in present])) for seed in seeds]
        return mean, t_interval(per_seed), f"{len(seeds)} seeds"
    return mean, t_interval([cells[(t, method)].mean for t in present]), f"{len(present)} tasks"


def category_bars(out: Path, cells, rows, methods: list[str], chance: dict[str, float],
                  colour_of: dict[str, str] | None = None) -> Path | None:
    categories = sorted({c for c, _ in rows.values() if not is_per_label(c)})
    if not categories:
        return None
    import textwrap

    plt = pyplot()
    tasks_of = {c: [t for t, (cat, _) in rows.items() if cat == c] for c in categories}
    width = 0.8 / max(1, len(methods))
    any_interval = False
    colour_of = colour_of or colours(methods)
    fig, ax = plt.subplots(figsize=(max(6.5, 0.5 * len(categories) * max(2, len(methods)) + 2), 6))
    for i, method in enumerate(methods):
        summaries = [category_summary(cells, tasks_of[c], method) for c in categories]
        means = np.array([s[0] for s in summaries])
        # a score lies in [0, 1]: an interval's ends are shown within it
        low = np.array([s[0] - max(0.0, s[1][0]) if s[1] else 0.0 for s in summaries])
        high = np.array([min(1.0, s[1][1]) - s[0] if s[1] else 0.0 for s in summaries])
        over = sorted({s[2].split()[1] for s in summaries if s[1]})
        x = np.arange(len(categories)) + i * width
        label = f"{method} (interval over {' or '.join(over)})" if over else method
        ax.bar(x, np.nan_to_num(means), width, label=label, color=colour_of[method],
               edgecolor="black", linewidth=0.6)  # the edge keeps a zero bar visible, as a line at 0
        has = np.array([s[1] is not None for s in summaries])
        if has.any():
            ax.errorbar(x[has], means[has], yerr=[low[has], high[has]], fmt="none", ecolor="black", elinewidth=0.8,
                         capsize=2)
            any_interval = True
        counts = [len([t for t in tasks_of[c] if (t, method) in cells]) for c in categories]
        for xi, mean, top, count in zip(x, means, np.nan_to_num(means) + high, counts):
            # above the bar and its interval, so neither hides it; with how many tasks the bar averages
            ax.text(xi, top + 0.02, "n/a" if np.isnan(mean) else f"{mean:.2f} (n={count})", rotation=90,
                    ha="center", va="bottom", fontsize=6.5)
    chance_drawn = False
    for j, category in enumerate(categories):  # the chance level of the category's tasks (balanced accuracy: 1/k)
        levels = [chance[t] for t in tasks_of[category] if t in chance]
        if levels:
            left, right = j - width / 2, j + width * (len(methods) - 0.5)
            ax.hlines(np.mean(levels), left, right, colors="black", linestyles=":", linewidth=1.2,
                      label=None if chance_drawn else "chance: mean of 1/k (k classes) over the category's tasks")
            chance_drawn = True
    ax.set_xticks(np.arange(len(categories)) + width * (len(methods) - 1) / 2, categories, rotation=20, ha="right")
    ax.set_ylabel("mean over tasks (each task in its own metric)")
    ax.set_ylim(-0.02, 1.3)  # room above 1 for the value labels
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.axhline(0, color="black", linewidth=0.6)
    ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=1, frameon=False)
    tasks = len([t for t in rows if not is_per_label(rows[t][0])])
    title = (f"{' vs '.join(methods) if len(methods) <= 3 else f'{len(methods)} methods'}: mean per category over "
             f"{tasks} task{'s' if tasks != 1 else ''}" + (", with 95% intervals" if any_interval else ""))
    ax.set_title("\n".join(textwrap.wrap(title, 80)), fontsize="small")
    return save(fig, out, "category_bars")


def paired_differences(out: Path, per_task: list[dict], tuned: str, prompted: str, correction: str,
                       colour_of: dict[str, str] | None = None) -> Path | None:
    """Per task, the difference tuned - prompted with its bootstrap 95% interval, sorted within each
    category; filled where the adjusted p-value is below 0.05."""
    tests = [t for t in per_task if t["method_a"] == tuned and t["method_b"] == prompted]
    if not tests:
        return None
    plt = pyplot()
    by_category = defaultdict(list)
    for test in tests:
        by_category[test["category"]].append(test)
    order, boundaries = [], []
    for category in sorted(by_category):
        boundaries.append((len(order), category))
        order += sorted(by_category[category], key=lambda t: t["difference"])
    import textwrap

    y = np.arange(len(order))[::-1]
    fig, ax = plt.subplots(figsize=(8.5, 1.8 + 0.16 * len(order)))
    differences = np.array([t["difference"] for t in order])
    lows = differences - np.array([t["ci_low"] for t in order])
    highs = np.array([t["ci_high"] for t in order]) - differences
    significant = np.array([t.get(f"p_{correction}", 1.0) < 0.05 for t in order])
    ax.errorbar(differences, y, xerr=[lows, highs], fmt="none", ecolor="grey", elinewidth=0.8)
    colour = (colour_of or {}).get(tuned, OKABE_ITO[0])  # the first method's colour, as in the other figures
    ax.scatter(differences[significant], y[significant], color=colour, s=14, zorder=3)
    ax.scatter(differences[~significant], y[~significant], facecolors="white", edgecolors=colour, s=14, zorder=3)
    ax.axvline(0, color="black", linewidth=0.8)
    names = [t["task"] if len(t["task"]) <= 48 else t["task"][:45] + "..." for t in order]  # full names: the CSV
    ax.set_yticks(y, names, fontsize=6 if len(order) > 40 else 8)
    ax.set_ylim(-1, len(order))
    for start, category in boundaries:
        if start:
            ax.axhline(len(order) - start - 0.5, color="grey", linewidth=0.5)
        ax.text(0.99, len(order) - start - 0.8, category, transform=ax.get_yaxis_transform(), fontsize=8, va="top",
                ha="right", weight="bold")
    label = (f"difference: {tuned} minus {prompted}, with its 95% bootstrap interval; filled: adjusted p < 0.05 "
             f"({correction}), open: not significant")
    ax.set_xlabel("\n".join(textwrap.wrap(label, 90)), fontsize="small")
    title = f"{tuned} vs {prompted} on {len(order)} tasks (right of 0: the first is better)"
    ax.set_title("\n".join(textwrap.wrap(title, 75)), fontsize="small")
    return save(fig, out, f"paired_{slug(tuned)}__vs__{slug(prompted)}")


def data_efficiency(out: Path, cells, rows, methods: list[str], colour_of: dict[str, str] | None = None) -> list[Path]:
    """For each task with runs on several training-set sizes: score against n per method, with
    in-context methods on the same task as horizontal lines."""
    curves: dict[tuple[str, str], list[tuple[int, float, float]]] = defaultdict(list)
    for (task, method), cell in cells.items():
        found = SUBSET.search(method)
        if found and not is_per_label(rows[task][0]):
            curves[(task, SUBSET.sub("", method))].append((int(found.group(1)), cell.mean, cell.std))
    paths, table = [], []
    for task in sorted({t for t, _ in curves}):
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(6, 4.5))
        spare = iter(OKABE_ITO * 4)  # a curve's method is no report column of its own (its n varies)
        colour_of = colour_of or colours(methods)
        for (curve_task, method), points in sorted(curves.items()):
            if curve_task != task:
                continue
            points.sort()
            n, mean, std = zip(*points)
            ax.errorbar(n, mean, yerr=std, marker="o", capsize=3, label=method, color=next(spare))
            table += [{"task": task, "method": method, "n": k, "mean": m, "std": s} for k, m, s in points]
        for method in methods:
            if trained(method) is False and (task, method) in cells:
                ax.axhline(cells[(task, method)].mean, linestyle="--", linewidth=1, label=method, color=colour_of[method])
        ax.set_xscale("log", base=2)
        ax.set_xlabel("training examples (n)")
        ax.set_ylabel(rows[task][1])
        ax.set_title(f"{task}: {rows[task][1]} against training examples (error bars: sd over seeds)",
                     fontsize="small")
        ax.legend(fontsize="x-small")
        paths.append(save(fig, out, f"data_efficiency_{slug(task)}"))
    if table:
        import pandas as pd

        pd.DataFrame(table).to_csv(out / "data_efficiency.csv", index=False)
    return paths


def expected_calibration_error(confidence: np.ndarray, correct: np.ndarray, bins: int = 10) -> float:
    """The bin-weighted mean gap between confidence and accuracy over equal-width bins."""
    index = np.minimum((confidence * bins).astype(int), bins - 1)
    return float(sum(abs(correct[index == b].mean() - confidence[index == b].mean()) * (index == b).mean()
                     for b in range(bins) if (index == b).any()))


def calibration(out: Path, pairs: dict[str, tuple[np.ndarray, np.ndarray]],
                colour_of: dict[str, str] | None = None) -> Path | None:
    """Reliability diagram of each label-scoring method (``appendix.confidence_pairs``), with its
    expected calibration error and how many decisions it pools."""
    pairs = {m: p for m, p in pairs.items() if len(p[0]) >= 10}
    if not pairs:
        return None
    from sklearn.calibration import calibration_curve

    import textwrap

    plt = pyplot()
    colour_of = colour_of or colours(sorted(pairs))
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="perfectly calibrated")
    for method, (confidence, correct) in sorted(pairs.items()):
        observed, predicted = calibration_curve(correct, confidence, n_bins=10, strategy="uniform")
        ax.plot(predicted, observed, marker="o", markersize=3, color=colour_of[method],
                label=f"{method} (ECE {expected_calibration_error(confidence, correct):.3f}, {len(confidence)} decisions)")
        counts, _ = np.histogram(confidence, bins=np.linspace(0, 1, 11))
        for x, y, count in zip(predicted, observed, counts[counts > 0]):  # the decisions behind each point
            ax.annotate(str(count), (x, y), textcoords="offset points", xytext=(3, -9), fontsize=5.5,
                        color=colour_of[method])
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("\n".join(textwrap.wrap("confidence (label probability; softmax of label log-likelihoods in "
                                          "context); beside each point, the decisions in its bin", 60)),
                  fontsize="small")
    ax.set_ylabel("observed frequency correct")
    ax.set_title("Calibration of label scores over all tasks", fontsize="small")
    ax.legend(fontsize="xx-small", loc="upper left")
    return save(fig, out, "calibration")


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


def write_all(out: Path, cells, rows, methods: list[str], pairs, per_task: list[dict] = (), correction: str = "holm",
              chance: dict[str, float] | None = None,
              confidences: dict[str, tuple[np.ndarray, np.ndarray]] | None = None) -> list[Path]:
    colour_of = colours(methods)  # one colour per method in every figure
    figures = [category_bars(out, cells, rows, methods, chance or {}, colour_of),
               calibration(out, confidences or {}, colour_of)]
    figures += [paired_differences(out, list(per_task), a, b, correction, colour_of) for a, b in pairs
                if trained(b) is False]
    figures += data_efficiency(out, cells, rows, methods, colour_of)
    return [f for f in figures if f is not None]
