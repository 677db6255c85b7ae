"""Run folders written by hand in the results format, for the report's tests; the pdflatex they compile tables with;
damaged results."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


# --- Run folders written by hand, in the DESIGN.md format ---------------------------------------
HEARSAY_GOLD = ["Yes", "No"] * 10
ABERCROMBIE_GOLD = ["generic", "descriptive", "suggestive", "arbitrary", "fanciful"] * 4


def write_run(folder: Path, method: str, model: str, seed: int, predictions: dict[str, list], *,
              categories=None, comparable=True, extra=None, gold=None) -> Path:
    from legalft.evaluation.metrics import legalbench_scores, multilabel_scores

    folder.mkdir(parents=True)
    gold = gold or {"hearsay": HEARSAY_GOLD, "abercrombie": ABERCROMBIE_GOLD, "proslex": None}
    tasks, records = {}, []
    for task, predicted in predictions.items():
        if task == "proslex":
            task_gold = [["IPC 302"], ["IPC 302", "IPC 201"], ["IPC 420"], ["IPC 201"]] * 3
            tasks[task] = multilabel_scores(task_gold, predicted, ["IPC 201", "IPC 302", "IPC 420"])
        else:
            task_gold = gold[task]
            tasks[task] = legalbench_scores(task, "balanced_accuracy", task_gold, predicted)
            tasks[task]["category"] = (categories or {"hearsay": "issue", "abercrombie": "interpretation"})[task]
        records += [{"task": task, "id": str(i), "gold": g, "prediction": p}
                    for i, (g, p) in enumerate(zip(task_gold, predicted))]
    run = {"method": method, "model": model, "seed": seed, "metric_mode": "paper", "comparable": comparable,
           **(extra or {})}
    (folder / "metrics.json").write_text(json.dumps({"run": run, "tasks": tasks}))
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def noisy(gold: list, wrong: set[int], labels: list) -> list:
    return [labels[(labels.index(g) + 1) % len(labels)] if i in wrong else g for i, g in enumerate(gold)]


YES_NO = ["Yes", "No"]
MARKS = ["generic", "descriptive", "suggestive", "arbitrary", "fanciful"]


@pytest.fixture
def runs_root(tmp_path) -> Path:
    root = tmp_path / "runs"
    for seed, wrong in ((0, {1, 2}), (1, {3, 4, 5, 6})):
        write_run(root / f"ft{seed}", "encoder", "minilm", seed, {
            "hearsay": noisy(HEARSAY_GOLD, wrong, YES_NO), "abercrombie": noisy(ABERCROMBIE_GOLD, wrong, MARKS)},
            extra={"cost": {"wall_seconds": 10.0 + seed, "device": "cpu (2 cores)", "peak_memory_mb": 1000.0 + 500 * seed}})
    write_run(root / "icl", "incontext", "smollm2", 0, {
        "hearsay": noisy(HEARSAY_GOLD, set(range(0, 20, 2)), YES_NO)}, extra={"prompt": "base_prompt", "k": 4,
                                                                               "answer": "score"})
    return root


def measured_rows(out: Path) -> dict[str, dict]:
    """Each task's row in the task's own metric (it comes before rows of published numbers in other metrics)."""
    rows: dict[str, dict] = {}
    for row in read_display(out):
        rows.setdefault(row["task"], row)
    return rows


def read_display(out: Path) -> list[dict]:
    import csv

    with open(out / "table_display.csv") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="session")
def pdflatex() -> str:
    """pdflatex with booktabs, installed from Debian (texlive-latex-base, -recommended) when missing,
    as the SLURM tests install SLURM."""
    import shutil
    import subprocess

    def ready():
        return shutil.which("pdflatex") and subprocess.run(["kpsewhich", "booktabs.sty"], capture_output=True,
                                                             text=True).stdout.strip()

    if not ready():
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            pytest.skip("pdflatex with booktabs is missing: apt-get install texlive-latex-base texlive-latex-recommended")
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "texlive-latex-base",
                        "texlive-latex-recommended"], check=True, capture_output=True,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    assert ready(), "pdflatex or booktabs.sty still missing after installing texlive"
    return shutil.which("pdflatex")


def damage_metrics(folder: Path, change) -> None:
    metrics = json.loads((folder / "metrics.json").read_text())
    change(metrics)
    (folder / "metrics.json").write_text(json.dumps(metrics))


DAMAGES = {
    "truncated_metrics": (lambda f: (f / "metrics.json").write_text((f / "metrics.json").read_text()[:100]),
                          "metrics.json is not valid JSON"),
    "list_metrics": (lambda f: (f / "metrics.json").write_text("[]"), "not a results file"),
    "truncated_predictions": (lambda f: (f / "predictions.jsonl").write_text((f / "predictions.jsonl").read_text()[:-30]),
                              r"predictions.jsonl: line 40 is not a prediction record \(not JSON"),
    "prediction_without_id": (lambda f: (f / "predictions.jsonl").write_text(
        "\n".join(json.dumps({k: v for k, v in json.loads(line).items() if k != "id"})
                  for line in (f / "predictions.jsonl").read_text().splitlines())), r"line 1 .*\(no id"),
    "huge_score": (lambda f: damage_metrics(f, lambda m: m["tasks"]["hearsay"].update(balanced_accuracy=1e308)),
                   r"tasks.hearsay.balanced_accuracy=1e\+308 is not a score in \[0, 1\]"),
    "nan_score": (lambda f: damage_metrics(f, lambda m: m["tasks"]["hearsay"].update(balanced_accuracy=float("nan"))),
                  r"tasks.hearsay.balanced_accuracy=nan is not a score"),
    "no_method": (lambda f: damage_metrics(f, lambda m: m["run"].pop("method")), "run.method is missing"),
    "list_seed": (lambda f: damage_metrics(f, lambda m: m["run"].update(seed=[0, 1])), r"run.seed is \[0, 1\]"),
    "string_task": (lambda f: damage_metrics(f, lambda m: m["tasks"].update(hearsay="0.9")),
                    "tasks.hearsay is str, not an object of scores"),
}
