"""``report.py report=legalevalhub``: each run x LegalBench task written as a LegalEvalHub evaluation run
(``eval_runs/<task_id>/<submission_id>.json``, LegalEvalHub's fields) with its predictions file, ready
for a pull request to github.com/y-fn/LegalEvalHub; ``legalevalhub.py`` reads them back."""

from __future__ import annotations

import json
import logging
import secrets
from datetime import datetime, timezone
from pathlib import Path

from legalft.foundation.errors import UserError
from legalft.foundation.path_names import component
from legalft.reporting.legalevalhub import METRIC_NAMES, is_number, read_hub

log = logging.getLogger(__name__)


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
              # LegalEvalHub's layout, each name one folder ("meta-llama/Llama-3-8B" -> "meta-llama_Llama-3-8B")
              "predictions_url": "/".join(["results", component(task, "task"), component(model, "model"),
                                           component(prompt_id, "prompt_id"), f"{sid}_predictions.json"])}
    record["metrics"].setdefault("valid_predictions_ratio", metrics.get("valid_predictions_ratio", 1.0))
    predictions = [{"id": r["id"], "gold": r["gold"], "prediction": r["prediction"]} for r in records]
    return record, predictions


def prompt_id_of(info: dict) -> str:
    """LegalEvalHub's prompt_id: what the run's method says of it (``base`` for LegalBench's base prompts)."""
    from legalft.runs.migrations import method_named

    cls = method_named(str(info.get("method")))
    return cls.hub_prompt_id(info) if cls is not None else str(info.get("method", "unknown"))


def export_from_config(cfg) -> Path:
    from omegaconf import OmegaConf

    if not cfg.runs:
        raise UserError("report=legalevalhub needs runs=<glob of run folders>, e.g. runs='checkpoints/**'.")
    runs = OmegaConf.to_container(cfg.runs) if OmegaConf.is_list(cfg.runs) else cfg.runs
    return export(runs, cfg.out, **OmegaConf.to_container(cfg.report, resolve=True))


def export(runs_pattern, out: str, legalevalhub: str | None = None, submitter: str = "Unknown",
           overwrite: bool = False) -> Path:
    """``report.py report=legalevalhub``: every run x LegalBench task as ``eval_runs/<task>/<id>.json`` and
    ``results/<task>/<model>/<prompt_id>/<id>_predictions.json`` under ``out``, written whole or not at all."""
    from legalft.reporting.report_folder import check_out, claimed, discard, publish, staging_folder
    from legalft.reporting.runs import find_runs, read_runs

    out_path = Path(out)
    hub = read_hub(legalevalhub) if legalevalhub else None
    folders, matched = find_runs(runs_pattern)
    with claimed(out_path):  # a second export into the same out refuses at once
        check_out(out_path, runs_pattern, matched, overwrite)
        runs, damaged = read_runs(folders)
        now = datetime.now(timezone.utc)
        written, notes, warned = [], [reason for _, reason in damaged], []
        staging = staging_folder(out_path)
        try:
            for run in runs:
                model = str(run.info.get("model", "unknown"))
                if run.info.get("comparable") is False:  # exported, and said: the reader decides
                    warned.append(f"{run.path}: marked not comparable with published numbers (trained on test data, "
                                 "scored on part of a test split, or another metric mode); exported all the same")
                    log.warning("%s is marked not comparable with published numbers; exported all the same", run.path)
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
                    record_path = staging / "eval_runs" / component(task, "task") / f"{record['submission_id']}.json"
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
            if warned:
                lines += ["\n## Written, not comparable with published numbers\n"] + [f"- {w}" for w in warned]
            (staging / "README.md").write_text("\n".join(lines) + "\n")
            publish(staging, out_path, overwrite)
        except BaseException:
            discard(staging)
            raise
    log.info("wrote %d LegalEvalHub evaluation run(s) to %s%s", len(written), out_path,
             f" ({len(notes)} not written: {out_path / 'README.md'})" if notes else "")
    return out_path
