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
        metric = primary_metric(task_scores)
        if metric and isinstance(task_scores.get(metric), (int, float)):
            by_category[task_scores.get("category") or "other"].append(float(task_scores[metric]))
    metrics.update({f"{split}/category/{category}": float(np.mean(v)) for category, v in by_category.items()})
    return metrics


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
