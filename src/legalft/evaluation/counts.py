"""Metrics as counts per example (``ItemCounts``): a task's score is the score of its examples'
summed counts, so a resample's score (paired tests in reports) is the score of its examples' counts
and thousands of resamples are a few matrix products. ``metrics.py`` builds them for each task."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


def f1_of_counts(summed: np.ndarray, empty: float = 1.0) -> np.ndarray:
    """F1 of (tp, fp, fn) in the last axis, over any leading axes; ``empty`` where nothing was expected
    or named (1.0: LegalBench's F1 tasks; 0.0: scikit-learn's ``zero_division=0``)."""
    tp, fp, fn = summed[..., 0], summed[..., 1], summed[..., 2]
    denominator = 2 * tp + fp + fn
    return np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1), empty)


@dataclass(frozen=True)
class ItemCounts:
    """A task's metric as counts per example and the score of summed counts: a resample's score is the
    score of its examples' counts, so thousands of resamples are a few matrix products. A metric that a
    resample leaves undefined takes the value the full-sample metric gives that case: balanced accuracy
    averages the recall of the classes the resample holds (as scikit-learn drops classes absent from
    the gold answers), F1 over nothing expected or named is 1.0 for LegalBench's F1 tasks and 0 for
    statute F1 (scikit-learn's ``zero_division=0``)."""

    counts: np.ndarray  # (examples, k)
    score: Callable[[np.ndarray], np.ndarray]  # summed counts (..., k) -> scores (...)

    def value(self) -> float:
        return float(self.score(self.counts.sum(0)))


def share(summed: np.ndarray) -> np.ndarray:
    return summed[..., 0] / np.maximum(summed[..., 1], 1)


def hit_counts(hits: np.ndarray) -> ItemCounts:
    """Accuracy-like metrics: the share of examples counted as hits."""
    return ItemCounts(np.stack([hits, np.ones_like(hits)], axis=1), share)


def class_recall_counts(gold: Sequence[str], predicted: Sequence[str]) -> ItemCounts:
    """Balanced accuracy: per example a one-hot of its gold class and the same one-hot if predicted right."""
    classes = {c: i for i, c in enumerate(sorted(set(gold)))}
    k = len(classes)
    one_hot = np.zeros((len(gold), k), dtype=np.int64)
    one_hot[np.arange(len(gold)), [classes[g] for g in gold]] = 1
    right = np.array([g == p for g, p in zip(gold, predicted)], dtype=np.int64)[:, None]

    def mean_recall(summed):
        totals, hits = summed[..., :k], summed[..., k:]
        present = totals > 0
        return (hits / np.maximum(totals, 1)).sum(-1) / present.sum(-1)

    return ItemCounts(np.concatenate([one_hot, one_hot * right], axis=1), mean_recall)


def label_counts(y_true: np.ndarray, y_pred: np.ndarray, metric: str) -> ItemCounts:
    """Multi-hot gold and predicted rows (one-hot for single-label): per label tp, fp, fn, plus an exact
    match and a one per example; macro_f1, micro_f1 or accuracy, with scikit-learn's zero_division=0."""
    y_true, y_pred = y_true.astype(bool), y_pred.astype(bool)
    labels = y_true.shape[1]
    per_label = np.stack([y_true & y_pred, ~y_true & y_pred, y_true & ~y_pred], axis=2).reshape(len(y_true), -1)
    exact = (y_true == y_pred).all(axis=1)[:, None]
    counts = np.concatenate([per_label, exact, np.ones_like(exact)], axis=1).astype(np.int64)

    def score(summed):
        tp_fp_fn = summed[..., :3 * labels].reshape(*summed.shape[:-1], labels, 3)
        if metric == "macro_f1":
            return f1_of_counts(tp_fp_fn, empty=0.0).mean(-1)
        if metric == "micro_f1":
            return f1_of_counts(tp_fp_fn.sum(-2), empty=0.0)
        if metric == "accuracy":
            return share(summed[..., -2:])
        raise ValueError(f"no per-example counts for {metric!r}")

    return ItemCounts(counts, score)
