"""A run's results in its loggers (W&B, CSV), under the same keys for every method: the run's
record as hyperparameters, ``test/<task>/<metric>`` per task, ``test/category/<category>`` (the
mean of the tasks' primary metrics), and the predictions as a table where the logger keeps tables."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np


def result_metrics(scores: dict[str, dict], split: str = "test") -> dict[str, float]:
    from legalft.evaluation.metrics import primary_metric

    metrics, by_category = {}, defaultdict(list)
    for task, task_scores in scores.items():
        for key, value in task_scores.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                metrics[f"{split}/{task}/{key}"] = float(value)
        for label, label_scores in (task_scores.get("per_label") or {}).items():  # statutes: each one's F1
            metrics.update({f"{split}/{task}/per_label/{label}/{key}": float(value)
                            for key, value in label_scores.items() if isinstance(value, (int, float))})
        metric = primary_metric(task_scores)
        if metric and isinstance(task_scores.get(metric), (int, float)):
            by_category[task_scores.get("category") or "other"].append(float(task_scores[metric]))
    metrics.update({f"{split}/category/{category}": float(np.mean(v)) for category, v in by_category.items()})
    return metrics


def log_folder_as_model(loggers, folder, metadata: dict) -> None:
    """``logger.wandb.log_model=true``: ``folder`` (a LoRA run's adapters) uploaded as a W&B model artifact
    named as Lightning names checkpoint artifacts (``adapters-<W&B run id>``)."""
    for logger in loggers:
        if getattr(logger, "_log_model", False) and type(logger).__name__ == "WandbLogger" and folder.is_dir():
            import wandb

            artifact = wandb.Artifact(f"adapters-{logger.experiment.id}", type="model", metadata=metadata)
            artifact.add_dir(str(folder))
            logger.experiment.log_artifact(artifact, aliases=["latest"])


def log_progress(loggers, tasks_done: int, tasks: int, rows_done: int) -> None:
    """A long scoring run's progress, while it runs: tasks and rows done."""
    for logger in loggers:
        logger.log_metrics({"progress/tasks_done": tasks_done, "progress/tasks": tasks, "progress/rows_done": rows_done})


def log_results(loggers: list, info: dict, scores: dict[str, dict], records: list[dict]) -> None:
    hyperparameters = {key: value for key, value in info.items() if key != "versions"}
    metrics = result_metrics(scores, info.get("scored_on", "test"))  # train: prompt settings tuned on it
    for logger in loggers:
        logger.log_hyperparams(hyperparameters)
        logger.log_metrics(metrics)
        if hasattr(logger, "log_table"):  # W&B: gold, prediction and per-label scores, row by row
            logger.log_table("predictions", columns=["task", "id", "gold", "prediction", "scores", "raw"], data=[
                [r["task"], r["id"], json.dumps(r["gold"]), json.dumps(r["prediction"]),
                 json.dumps(r.get("scores", {})), r.get("raw", "")] for r in records])
        logger.finalize("success")
