"""LegalEvalHub (github.com/y-fn/LegalEvalHub) records, read and written: its ``tasks/<task_id>.json``,
``eval_runs/<task_id>/<submission_id>.json`` and ``web/task_presets.json``. Read, each published model
is a row per task beside the user's runs and a leaderboard per preset ranks both on the tasks they
share; written, each run x task is an evaluation run in LegalEvalHub's format, ready for a pull
request. Records are data: parsed as JSON, checked field by field, never executed."""

from __future__ import annotations

import json
import logging
import math
import secrets
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from legalft.errors import UserError

log = logging.getLogger(__name__)

# This project's metric names -> LegalEvalHub's (the same quantity under another name)
METRIC_NAMES = {"balanced_accuracy": "balanced_accuracy", "f1": "f1", "macro_f1": "f1_macro", "micro_f1": "f1_micro",
                "accuracy": "accuracy", "within_10pct": "accuracy_within_10_percent"}
COUNT_FIELDS = ("n_samples",)


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
        for preset_id, preset in (record.get("presets") or {}).items():
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


def leaderboard(preset_tasks: list[str], measured: dict[str, dict[str, float]], published: list[dict],
                rows: dict[str, tuple[str, str]]) -> tuple[list[dict], dict]:
    """The user's methods ranked among published models on the preset's tasks that every one of the user's
    methods scored. Published models that lack some of those tasks are listed with what they cover, not
    ranked. ``measured``: method -> {task: score}. Returns (rows, facts about the task sets)."""
    in_preset = [t for t in preset_tasks if t in rows]
    shared = [t for t in in_preset if all(t in scores for scores in measured.values())]
    by_model: dict[str, dict[str, dict]] = defaultdict(dict)
    for row in published:
        by_model[row["model"]][row["task"]] = row
    entries = []
    for method, scores in measured.items():
        entries.append({"name": method, "kind": "yours", "tasks": len(shared), "of": len(shared),
                        "mean": sum(scores[t] for t in shared) / len(shared) if shared else float("nan"),
                        "valid_predictions_ratio": None})
    for model, tasks in by_model.items():
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
    by_model: dict[str, dict[str, float]] = defaultdict(dict)
    for row in published:
        by_model[row["model"]][row["task"]] = row["value"]
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
                                   "mean": sum(values[t] for t in covered) / len(covered)})
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


# --- Written: the user's runs as LegalEvalHub evaluation runs ----------------------------------------
def submission_id(now: datetime) -> str:
    """``run_YYYY_MM_DD_HHMMSS_RANDOM``, LegalEvalHub's format (RANDOM: six hex digits)."""
    return f"run_{now:%Y_%m_%d_%H%M%S}_{secrets.token_hex(3)}"


def classification_metrics(gold: list[str], predicted: list[str]) -> dict[str, float]:
    """LegalEvalHub's classification metrics over LegalBench-normalised answers: a prediction outside the
    gold label set is an invalid prediction (and wrong)."""
    from legalft.evaluation.metrics import single_label_scores
    from legalft.evaluation.normalize import normalize

    gold_n, predicted_n = [normalize(g) for g in gold], [normalize(p) for p in predicted]
    labels = sorted(set(gold_n))
    scores = single_label_scores(gold_n, predicted_n, labels)
    return {"accuracy": scores["accuracy"], "balanced_accuracy": scores["balanced_accuracy"],
            "f1_macro": scores["macro_f1"], "f1_micro": scores["micro_f1"],
            "valid_predictions_ratio": sum(p in set(labels) for p in predicted_n) / len(predicted_n)}


def evaluation_run(task: str, scores: dict, records: list[dict], model: str, prompt_id: str, submitter: str,
                   required: tuple[str, ...] | None, now: datetime) -> tuple[dict, list[dict]] | str:
    """(the evaluation run, its predictions) of one run's task, or why it cannot be written."""
    gold = [r["gold"] for r in records]
    predicted = [r["prediction"] for r in records]
    if not records or not all(isinstance(x, str) for x in gold + predicted):
        return f"{task}: no single-answer predictions.jsonl records (multi-label tasks have no LegalEvalHub format)"
    metrics = {}
    if scores.get("metric") == "balanced_accuracy" or required and "balanced_accuracy" in required:
        metrics.update(classification_metrics(gold, predicted))
    for ours, theirs in METRIC_NAMES.items():
        if is_number(scores.get(ours)):
            metrics.setdefault(theirs, float(scores[ours]))
    wanted = required or tuple(metrics)
    missing = [m for m in wanted if m not in metrics]
    if missing:
        return f"{task}: the task file names {', '.join(missing)}, which this run's scoring does not give"
    sid = submission_id(now)
    record = {"submission_id": sid, "task_id": task, "model_name": model, "prompt_id": prompt_id,
              "submitter": submitter, "submission_time": now.isoformat().replace("+00:00", "Z"),
              "metrics": {**{m: metrics[m] for m in wanted}, "n_samples": len(records)},
              "predictions_url": f"results/{task}/{model}/{prompt_id}/{sid}_predictions.json"}
    record["metrics"].setdefault("valid_predictions_ratio", metrics.get("valid_predictions_ratio", 1.0))
    predictions = [{"id": r["id"], "gold": r["gold"], "prediction": r["prediction"]} for r in records]
    return record, predictions


def prompt_id_of(info: dict) -> str:
    """LegalEvalHub's prompt_id: ``base`` for LegalBench's base prompts; else the method and its setting."""
    if info.get("prompt") == "base_prompt":
        return "base"
    if info.get("method") == "incontext":
        return f"{info.get('prompt', 'prompt')}-k{info.get('k', 0)}"
    return "-".join(str(p) for p in (info.get("method"), info.get("regime")) if p)


def export_from_config(cfg) -> Path:
    from omegaconf import OmegaConf

    if not cfg.runs:
        raise UserError("report=legalevalhub needs runs=<glob of run folders>, e.g. runs='checkpoints/**'.")
    runs = OmegaConf.to_container(cfg.runs) if OmegaConf.is_list(cfg.runs) else cfg.runs
    return export(runs, cfg.out, **OmegaConf.to_container(cfg.report, resolve=True))


def export(runs_pattern, out: str, legalevalhub: str | None = None, submitter: str = "Unknown",
           overwrite: bool = False) -> Path:
    """``evaluate.py report=legalevalhub``: every run x LegalBench task as ``eval_runs/<task>/<id>.json`` and
    ``results/<task>/<model>/<prompt_id>/<id>_predictions.json`` under ``out``, written whole or not at all."""
    from legalft.reporting.report_folder import check_out, discard, publish, staging_folder
    from legalft.reporting.runs import find_runs, read_runs

    out_path = Path(out)
    hub = read_hub(legalevalhub) if legalevalhub else None
    folders, matched = find_runs(runs_pattern)
    check_out(out_path, runs_pattern, matched, overwrite)
    runs, damaged = read_runs(folders)
    now = datetime.now(timezone.utc)
    written, notes = [], [reason for _, reason in damaged]
    staging, created = staging_folder(out_path)
    try:
        for run in runs:
            model = str(run.info.get("model", "unknown"))
            for task, scores in run.tasks.items():
                if hub is not None and task not in hub.tasks:
                    notes.append(f"{run.path}: {task} is not a LegalEvalHub task; not written")
                    continue
                required = hub.tasks[task].metrics if hub is not None else None
                result = evaluation_run(task, scores, run.predictions.get(task, []), model, prompt_id_of(run.info),
                                        submitter, required, now)
                if isinstance(result, str):
                    notes.append(f"{run.path}: {result}")
                    continue
                record, predictions = result
                record_path = staging / "eval_runs" / task / f"{record['submission_id']}.json"
                predictions_path = staging / record["predictions_url"]
                for path, content in ((record_path, record), (predictions_path, predictions)):
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(json.dumps(content, indent=2) + "\n")
                written.append(record_path.relative_to(staging))
        if not written:
            raise UserError(f"runs={runs_pattern!r}: no run task could be written as a LegalEvalHub evaluation run:\n  "
                            + "\n  ".join(notes[:10]))
        lines = [f"# {len(written)} LegalEvalHub evaluation runs\n",
                 "Copy `eval_runs/` into a clone of LegalEvalHub and open a pull request; upload `results/` where "
                 "`predictions_url` should point.\n"] + [f"- {p}" for p in written]
        if notes:
            lines += ["\n## Not written\n"] + [f"- {n}" for n in notes]
        (staging / "README.md").write_text("\n".join(lines) + "\n")
        publish(staging, out_path, overwrite)
    except BaseException:
        discard(staging, created)
        raise
    log.info("wrote %d LegalEvalHub evaluation run(s) to %s%s", len(written), out_path,
             f" ({len(notes)} not written: {out_path / 'README.md'})" if notes else "")
    return out_path
