"""The project's one metrics module: pure functions over label strings, used by every runner.

PROSLEX (multi-label statute prediction) is scored as its paper does: accuracy as exact match of
the predicted set, micro- and macro-averaged F1, and precision/recall/F1/support per statute.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def multilabel_scores(
    gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], labels: Sequence[str]
) -> dict:
    """Scores of predicted label sets against gold label sets over the label space ``labels``."""
    from sklearn.preprocessing import MultiLabelBinarizer

    binarizer = MultiLabelBinarizer(classes=list(labels))
    y_true = binarizer.fit_transform(gold)
    y_pred = binarizer.transform(predicted)
    return multilabel_scores_from_matrices(y_true, y_pred, labels)


def multilabel_scores_from_matrices(y_true: np.ndarray, y_pred: np.ndarray, labels: Sequence[str]) -> dict:
    from sklearn.metrics import accuracy_score, f1_score, precision_recall_fscore_support

    precision, recall, f1, support = precision_recall_fscore_support(y_true, y_pred, average=None, zero_division=0)
    return {
        "n": int(len(y_true)),
        "accuracy": float(accuracy_score(y_true, y_pred)),  # exact match of the whole label set
        "micro_f1": float(f1_score(y_true, y_pred, average="micro", zero_division=0)),
        "macro_f1": float(f1_score(y_true, y_pred, average="macro", zero_division=0)),
        "per_label": {
            label: {
                "precision": float(precision[i]),
                "recall": float(recall[i]),
                "f1": float(f1[i]),
                "support": int(support[i]),
            }
            for i, label in enumerate(labels)
        },
    }


def single_label_scores(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> dict:
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

    return {
        "n": len(gold),
        "accuracy": float(accuracy_score(gold, predicted)),
        "balanced_accuracy": float(balanced_accuracy_score(gold, predicted)),
        "micro_f1": float(f1_score(gold, predicted, labels=list(labels), average="micro", zero_division=0)),
        "macro_f1": float(f1_score(gold, predicted, labels=list(labels), average="macro", zero_division=0)),
    }


def decide(probs: np.ndarray, multi_label: bool, thresholds: np.ndarray | float = 0.5) -> np.ndarray:
    """Multi-hot decisions (multi-label, per-label thresholds) or class indices (single-label)."""
    if multi_label:
        return (probs >= thresholds).astype(int)
    return probs.argmax(axis=-1)


def score_probabilities(
    probs: np.ndarray,
    targets: np.ndarray,
    labels: Sequence[str],
    multi_label: bool,
    thresholds: np.ndarray | float = 0.5,
) -> dict:
    """Scores straight from model outputs: multi-hot targets, or class indices when single-label."""
    decisions = decide(probs, multi_label, thresholds)
    if multi_label:
        return multilabel_scores_from_matrices(targets.astype(int), decisions, labels)
    return single_label_scores([labels[i] for i in targets], [labels[i] for i in decisions], labels)


def tune_thresholds(probs: np.ndarray, targets: np.ndarray, grid: Sequence[float] | None = None) -> np.ndarray:
    """Per-label decision thresholds that maximise each label's F1 on held-out data.

    Ties go to the threshold nearest 0.5; a label without positives keeps 0.5.
    """
    from sklearn.metrics import f1_score

    grid = np.asarray(grid if grid is not None else np.round(np.arange(0.05, 0.951, 0.05), 2))
    by_closeness = grid[np.argsort(np.abs(grid - 0.5), kind="stable")]
    thresholds = np.full(probs.shape[1], 0.5)
    for j in range(probs.shape[1]):
        if targets[:, j].sum() == 0:
            continue
        f1s = [f1_score(targets[:, j], probs[:, j] >= t, zero_division=0) for t in by_closeness]
        thresholds[j] = by_closeness[int(np.argmax(f1s))]
    return thresholds
