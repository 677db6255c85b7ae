"""A classifier's probabilities as the shared run format: targets, decisions, per-example prediction
records and the task's scores. Every method that outputs probabilities (encoder, classical, SetFit,
their cross-validation) scores through here."""

from __future__ import annotations

import numpy as np

from legalft.data.example import Example, TaskSpec
from legalft.evaluation.metrics import decide, multilabel_scores, single_label_scores


def targets_of(examples: list[Example], task: TaskSpec) -> np.ndarray:
    if task.multi_label:
        return np.array([[label in e.labels for label in task.labels] for e in examples], dtype=int)
    return np.array([task.labels.index(e.labels[0]) for e in examples])


def score_predictions(
    examples: list[Example], probs: np.ndarray, task: TaskSpec, thresholds: np.ndarray
) -> tuple[dict, list[dict]]:
    """The task's scores and one prediction record per example, in the shared run format."""
    decisions = decide(probs, task.multi_label, thresholds)
    records = []
    for example, p, decision in zip(examples, probs, decisions):
        record = {"task": task.name, "id": example.id}
        if task.multi_label:
            record["gold"] = list(example.labels)
            record["prediction"] = [label for label, on in zip(task.labels, decision) if on]
        else:
            record["gold"] = example.labels[0]
            record["prediction"] = task.labels[decision]
        record["scores"] = {label: round(float(s), 6) for label, s in zip(task.labels, p)}
        records.append(record)
    gold = [r["gold"] for r in records]
    predicted = [r["prediction"] for r in records]
    if task.multi_label:
        scores = multilabel_scores(gold, predicted, task.labels)
    else:
        scores = single_label_scores(gold, predicted, task.labels)
        if task.metric == "balanced_accuracy":  # compared on the metric prompted runs of the task report
            scores["metric"] = task.metric
    if task.category:
        scores["category"] = task.category
    return scores, records


def unlabelled_records(examples: list[Example], probs: np.ndarray, task: TaskSpec, thresholds: np.ndarray,
                       codes: dict[str, str] | None = None) -> list[dict]:
    """One record per unlabelled example (``predict.py``): its prediction, each predicted label's code and
    description where the task has them (statute sections), every label's score and the threshold it was decided
    by (multi-label; a single-label task takes the top label)."""
    decisions = decide(probs, task.multi_label, thresholds)
    records = []
    for example, p, decision in zip(examples, probs, decisions):
        predicted = [label for label, on in zip(task.labels, decision) if on] if task.multi_label else [
            task.labels[decision]]
        record = {"id": example.id, "prediction": predicted if task.multi_label else predicted[0]}
        named = named_labels(predicted, task, codes)
        if named:
            record["labels"] = named
        record["scores"] = {label: round(float(s), 6) for label, s in zip(task.labels, p)}
        if task.multi_label:
            record["thresholds"] = {label: round(float(t), 6) for label, t in zip(task.labels, thresholds)}
        records.append(record)
    return records


def named_labels(predicted: list[str], task: TaskSpec, codes: dict[str, str] | None = None) -> list[dict]:
    """Each predicted label with its code and description, where the task has them (statute sections); else []."""
    if not (task.label_descriptions or codes):
        return []
    return [{"label": label, **({"code": codes[label]} if codes and label in codes else {}),
             **({"description": task.label_descriptions[label]} if label in task.label_descriptions else {})}
            for label in predicted]
