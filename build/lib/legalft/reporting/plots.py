"""The report's figures, as PNG: per-category bars, per-task scatter of a fine-tuned method against an
in-context one, and data-efficiency curves (score against the number of training examples)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from legalft.reporting.runs import is_per_label, trained

SUBSET = re.compile(r" n=(\d+)")  # a run trained on a subset: one point of a data-efficiency curve


def pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


def category_bars(out: Path, cells, rows, methods: list[str]) -> Path | None:
    categories = sorted({c for c, _ in rows.values() if not is_per_label(c)})
    means = {m: [np.mean([cells[(t, m)].mean for t, (c, _) in rows.items() if c == cat and (t, m) in cells] or [np.nan])
                 for cat in categories] for m in methods}
    if not categories:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(categories) * max(1, len(methods)) / 2), 4.5))
    width = 0.8 / max(1, len(methods))
    for i, method in enumerate(methods):
        ax.bar(np.arange(len(categories)) + i * width, means[method], width, label=method)
    ax.set_xticks(np.arange(len(categories)) + width * (len(methods) - 1) / 2, categories)
    ax.set_ylabel("mean of the tasks' metrics")
    ax.set_ylim(0, 1)
    ax.legend(fontsize="small")
    ax.set_title("Per-category averages")
    path = out / "category_bars.png"
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def pair_scatter(out: Path, cells, rows, tuned: str, prompted: str) -> Path | None:
    tasks = [t for t in rows if not is_per_label(rows[t][0]) and (t, tuned) in cells and (t, prompted) in cells]
    if not tasks:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 5))
    x = [cells[(t, prompted)].mean for t in tasks]
    y = [cells[(t, tuned)].mean for t in tasks]
    ax.scatter(x, y)
    for task, xi, yi in zip(tasks, x, y):
        ax.annotate(task, (xi, yi), fontsize=6, alpha=0.7)
    ax.plot([0, 1], [0, 1], color="grey", linewidth=0.8)  # above the line: fine-tuning wins
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel(prompted)
    ax.set_ylabel(tuned)
    ax.set_title("Per task (above the diagonal: the y-axis method is better)", fontsize="small")
    path = out / f"scatter_{slug(tuned)}__vs__{slug(prompted)}.png"
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def data_efficiency(out: Path, cells, rows, methods: list[str]) -> list[Path]:
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
        for (curve_task, method), points in sorted(curves.items()):
            if curve_task != task:
                continue
            points.sort()
            n, mean, std = zip(*points)
            ax.errorbar(n, mean, yerr=std, marker="o", capsize=3, label=method)
            table += [{"task": task, "method": method, "n": k, "mean": m, "std": s} for k, m, s in points]
        for method in methods:
            if trained(method) is False and (task, method) in cells:
                ax.axhline(cells[(task, method)].mean, linestyle="--", linewidth=1, label=method)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("training examples (n)")
        ax.set_ylabel(rows[task][1])
        ax.set_title(f"{task}: how many labelled examples fine-tuning needs", fontsize="small")
        ax.legend(fontsize="x-small")
        path = out / f"data_efficiency_{slug(task)}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        paths.append(path)
    if table:
        import pandas as pd

        pd.DataFrame(table).to_csv(out / "data_efficiency.csv", index=False)
    return paths


def write_all(out: Path, cells, rows, methods: list[str], pairs) -> list[Path]:
    figures = [category_bars(out, cells, rows, methods)]
    figures += [pair_scatter(out, cells, rows, a, b) for a, b in pairs if trained(b) is False]
    figures += data_efficiency(out, cells, rows, methods)
    return [f for f in figures if f is not None]
