"""LegalEvalHub (github.com/y-fn/LegalEvalHub) records, read: its ``tasks/<task_id>.json``,
``eval_runs/<task_id>/<submission_id>.json`` and ``web/task_presets.json``. Each published model is a
row per task beside the user's runs, and a leaderboard per preset ranks both on the tasks they share.
Records are data: parsed as JSON, checked field by field, never executed. Writing the user's runs in
LegalEvalHub's format is ``legalevalhub_export.py``."""

from __future__ import annotations

import json
import logging
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)

# This project's metric names -> LegalEvalHub's (the same quantity under another name)
METRIC_NAMES = {"balanced_accuracy": "balanced_accuracy", "f1": "f1", "macro_f1": "f1_macro", "micro_f1": "f1_micro",
                "accuracy": "accuracy", "within_10pct": "accuracy_within_10_percent"}


@dataclass(frozen=True)
class HubTask:
    task_id: str
    family: str
    metrics: tuple[str, ...]  # every metric an evaluation run of the task must report
    reasoning: str  # LegalEvalHub's legal_reasoning_type, as a string


@dataclass(frozen=True)
class PublishedRun:
    task: str
    model: str
    prompt_id: str
    metrics: dict[str, float]
    path: Path


@dataclass
class Hub:
    tasks: dict[str, HubTask]
    runs: list[PublishedRun]
    presets: dict[str, tuple[str, list[str]]]  # preset id -> (name, task ids)
    skipped: list[str] = field(default_factory=list)  # "<path>: <why>" for each record left out

    def published(self) -> dict[tuple[str, str], PublishedRun]:
        """(task, model) -> the model's latest base-prompt run of the task (its latest run where it has no
        base-prompt run): one number per model and task, as LegalEvalHub's leaderboard shows."""
        chosen: dict[tuple[str, str], PublishedRun] = {}
        for run in sorted(self.runs, key=lambda r: (r.prompt_id == "base", r.path.name)):
            chosen[(run.task, run.model)] = run
        return chosen


def read_json_record(path: Path, skipped: list[str]) -> dict | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"), parse_constant=lambda name: float("nan"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        skipped.append(f"{path}: not JSON ({str(err).splitlines()[0][:120]})")
        return None
    if not isinstance(record, dict):
        skipped.append(f"{path}: a JSON {type(record).__name__}, not an object")
        return None
    return record


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_hub(root: str | Path) -> Hub:
    """A LegalEvalHub clone's tasks, evaluation runs and presets. A record that is not JSON, lacks a field,
    names an unknown task or holds a metric that is not a finite number is skipped and named."""
    root = Path(root)
    if not (root / "tasks").is_dir() or not (root / "eval_runs").is_dir():
        raise UserError(f"report.baselines.legalevalhub={root}: not a LegalEvalHub clone (no tasks/ and eval_runs/ "
                        "folders); git clone https://github.com/y-fn/LegalEvalHub and give its path.")
    skipped: list[str] = []
    tasks = {}
    for path in sorted((root / "tasks").glob("*.json")):
        record = read_json_record(path, skipped)
        if record is None:
            continue
        metrics = record.get("metrics")
        if not isinstance(record.get("task_id"), str) or not isinstance(metrics, list) or not all(
                isinstance(m, dict) and isinstance(m.get("name"), str) for m in metrics):
            skipped.append(f"{path}: a task needs task_id (a string) and metrics (a list of {{name, direction}})")
            continue
        reasoning = record.get("legal_reasoning_type") or ""
        tasks[record["task_id"]] = HubTask(record["task_id"], str(record.get("family", "")),
                                           tuple(m["name"] for m in metrics),
                                           ", ".join(reasoning) if isinstance(reasoning, list) else str(reasoning))
    runs = []
    for path in sorted((root / "eval_runs").glob("*/*.json")):
        record = read_json_record(path, skipped)
        if record is None:
            continue
        problem = run_problem(record, tasks)
        if problem:
            skipped.append(f"{path}: {problem}")
            continue
        runs.append(PublishedRun(record["task_id"], record["model_name"], str(record.get("prompt_id", "")),
                                 {k: float(v) for k, v in record["metrics"].items()}, path))
    presets = {}
    presets_path = root / "web" / "task_presets.json"
    if presets_path.exists():
        record = read_json_record(presets_path, skipped) or {}
        listed = record.get("presets") or {}
        if not isinstance(listed, dict):
            skipped.append(f"{presets_path}: presets is a JSON {type(listed).__name__}, not an object of presets")
            listed = {}
        for preset_id, preset in listed.items():
            if isinstance(preset, dict) and isinstance(preset.get("tasks"), list):
                presets[preset_id] = (str(preset.get("name", preset_id)), [str(t) for t in preset["tasks"]])
            else:
                skipped.append(f"{presets_path}: preset {preset_id!r} has no list of tasks")
    if skipped:
        log.warning("LegalEvalHub: skipped %d record(s) of %s (listed in the report): %s", len(skipped), root,
                    "; ".join(skipped[:3]) + (" ..." if len(skipped) > 3 else ""))
    return Hub(tasks, runs, presets, skipped)


def run_problem(record: dict, tasks: dict[str, HubTask]) -> str | None:
    """Why an evaluation run cannot be read (None when it can)."""
    for key in ("task_id", "model_name"):
        if not isinstance(record.get(key), str) or not record[key]:
            return f"{key} missing or not a string"
    if record["task_id"] not in tasks:
        return f"task_id {record['task_id']!r} is not a task in tasks/"
    metrics = record.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        return "metrics missing or not an object"
    bad = [k for k, v in metrics.items() if not is_number(v)]
    if bad:
        return f"metric {bad[0]!r} is {metrics[bad[0]]!r}, not a finite number"
    out_of_range = [k for k, v in metrics.items() if k != "n_samples" and not 0 <= v <= 1]
    if out_of_range:  # every LegalEvalHub metric is a share (accuracy, F1, precision, valid predictions)
        return f"metric {out_of_range[0]!r} is {metrics[out_of_range[0]]!r}, outside 0 to 1"
    if "n_samples" in metrics and not (float(metrics["n_samples"]).is_integer() and metrics["n_samples"] >= 1):
        return f"n_samples is {metrics['n_samples']!r}, not a whole number of rows"
    return None  # a record without the metric a report compares in is listed there, not skipped


# --- Side by side: the user's runs among the published models ---------------------------------------
def published_rows(hub: Hub, rows: dict[str, tuple[str, str]]) -> tuple[list[dict], list[str]]:
    """One row per published model and task the report has, in the task's row metric, with the model's
    valid-prediction share; and the (task, model) pairs whose record lacks that metric."""
    table, unshared = [], []
    for (task, model), run in sorted(hub.published().items()):
        if task not in rows:
            continue
        category, metric = rows[task]
        name = METRIC_NAMES.get(metric)
        if name is None or name not in run.metrics:
            unshared.append(f"{task}: {model} reports {', '.join(sorted(run.metrics))}, not {metric}")
            continue
        table.append({"category": category, "task": task, "metric": metric, "model": model,
                      "value": run.metrics[name], "valid_predictions_ratio": run.metrics.get("valid_predictions_ratio"),
                      "n_samples": run.metrics.get("n_samples"), "record": str(run.path)})
    return table, unshared


def rows_by_model(published: list[dict]) -> dict[str, dict[str, dict]]:
    """model -> task -> its published row."""
    by_model: dict[str, dict[str, dict]] = defaultdict(dict)
    for row in published:
        by_model[row["model"]][row["task"]] = row
    return by_model


def leaderboard(preset_tasks: list[str], measured: dict[str, dict[str, float]], published: list[dict],
                rows: dict[str, tuple[str, str]]) -> tuple[list[dict], dict]:
    """The user's methods ranked among published models on the preset's tasks that every one of the user's
    methods scored. Published models that lack some of those tasks are listed with what they cover, not
    ranked. ``measured``: method -> {task: score}. Returns (rows, facts about the task sets)."""
    in_preset = [t for t in preset_tasks if t in rows]
    shared = [t for t in in_preset if all(t in scores for scores in measured.values())]
    entries = []
    for method, scores in measured.items():
        entries.append({"name": method, "kind": "yours", "tasks": len(shared), "of": len(shared),
                        "mean": sum(scores[t] for t in shared) / len(shared) if shared else float("nan"),
                        "valid_predictions_ratio": None})
    for model, tasks in rows_by_model(published).items():
        covered = [t for t in shared if t in tasks]
        if not covered:
            continue
        valid = [tasks[t]["valid_predictions_ratio"] for t in covered if tasks[t]["valid_predictions_ratio"] is not None]
        entries.append({"name": model, "kind": "LegalEvalHub", "tasks": len(covered), "of": len(shared),
                        "mean": sum(tasks[t]["value"] for t in covered) / len(covered),
                        "valid_predictions_ratio": sum(valid) / len(valid) if valid else None})
    complete = sorted((e for e in entries if e["tasks"] == e["of"]), key=lambda e: -e["mean"])
    for rank, entry in enumerate(complete, 1):
        entry["rank"] = rank
    partial = sorted((e for e in entries if e["tasks"] < e["of"]), key=lambda e: (-e["tasks"], -e["mean"]))
    for entry in partial:
        entry["rank"] = None
    facts = {"preset": len(preset_tasks), "in_report": len(in_preset), "shared": len(shared),
             "not_in_runs": [t for t in preset_tasks if t not in rows],
             "not_in_every_method": [t for t in in_preset if t not in shared]}
    return complete + partial, facts


def by_category(measured: dict[str, dict[str, float]], published: list[dict],
                rows: dict[str, tuple[str, str]]) -> list[dict]:
    """Per category, each of the user's methods and each published model: the mean over the category's
    tasks that the method scored and the model published, with how many those are."""
    by_model = rows_by_model(published)
    table = []
    categories = sorted({rows[t][0] for scores in measured.values() for t in scores if t in rows})
    for category in categories:
        for method, scores in measured.items():
            tasks = [t for t in scores if t in rows and rows[t][0] == category]
            if not tasks:  # the method has no task of this category
                continue
            ranked = [{"name": method, "kind": "yours", "mean": sum(scores[t] for t in tasks) / len(tasks)}]
            for model, values in by_model.items():
                covered = [t for t in tasks if t in values]
                if len(covered) == len(tasks):
                    ranked.append({"name": model, "kind": "LegalEvalHub",
                                   "mean": sum(values[t]["value"] for t in covered) / len(covered)})
            ranked.sort(key=lambda e: -e["mean"])
            position = next(i for i, e in enumerate(ranked, 1) if e["name"] == method and e["kind"] == "yours")
            best = next((e for e in ranked if e["kind"] == "LegalEvalHub"), None)
            table.append({"category": category, "method": method, "tasks": len(tasks), "mean": ranked[position - 1]["mean"],
                          "rank": f"{position} of {len(ranked)}", "best published": best["name"] if best else "",
                          "best published mean": best["mean"] if best else None})
    return table


def fmt(value) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def write_hub_report(out: Path, hub: Hub, measured: dict[str, dict[str, float]],
                     rows: dict[str, tuple[str, str]]) -> list[str]:
    """``legalevalhub_tasks.csv`` (every published number beside the report's tasks),
    ``legalevalhub_leaderboards.csv`` and ``legalevalhub_categories.csv``; returns report.md's section."""
    import pandas as pd

    published, unshared = published_rows(hub, rows)
    pd.DataFrame(published).to_csv(out / "legalevalhub_tasks.csv", index=False)
    lines = ["## Among LegalEvalHub's published runs\n",
             f"{len({r['model'] for r in published})} published models, {len(published)} numbers on this report's "
             "tasks, each in the task's row metric (`legalevalhub_tasks.csv`, with each model's valid-prediction "
             "share). Means are over the tasks a method and a model share; never over tasks one of them lacks.\n"]
    categories = by_category(measured, published, rows)
    if categories:
        pd.DataFrame(categories).to_csv(out / "legalevalhub_categories.csv", index=False)
        lines.append("### Per category (rank among the models that published every task of the category your run "
                     "scored)\n")
        lines.append(pd.DataFrame(categories).to_markdown(index=False, floatfmt=".3f") + "\n")
    boards = []
    for preset_id, (name, tasks) in hub.presets.items():
        entries, facts = leaderboard(tasks, measured, published, rows)
        if not facts["shared"]:
            continue
        lines.append(f"### {name}: {facts['shared']} of its {facts['preset']} tasks\n")
        lines.append(f"Ranked on the {facts['shared']} tasks every one of your methods scored; "
                     f"{len(facts['not_in_runs'])} of the preset's tasks are not in your runs"
                     + (f", {len(facts['not_in_every_method'])} are scored by only some of your methods"
                        if facts["not_in_every_method"] else "")
                     + ". Models without all of them are listed after the ranked ones, with what they cover.\n")
        table = [{"rank": e["rank"] or "", "model": e["name"], "source": e["kind"], "mean": fmt(e["mean"]),
                  "tasks": f"{e['tasks']} of {e['of']}", "valid predictions": fmt(e["valid_predictions_ratio"])}
                 for e in entries]
        lines.append(pd.DataFrame(table).to_markdown(index=False) + "\n")
        boards += [{"preset": name, **row} for row in table]
    if boards:
        pd.DataFrame(boards).to_csv(out / "legalevalhub_leaderboards.csv", index=False)
    if unshared:
        lines.append("### Published numbers in another metric (not compared)\n")
        lines += [f"- {u}" for u in unshared] + [""]
    if hub.skipped:
        lines.append(f"### {len(hub.skipped)} LegalEvalHub records skipped\n")
        lines += [f"- {s}" for s in hub.skipped] + [""]
    return lines
