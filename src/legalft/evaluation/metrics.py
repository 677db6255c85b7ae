"""The project's one metrics module: pure functions over label strings, used by every runner (built
from per-example counts in ``counts.py`` where a report resamples them; generated explanations are
scored in ``explanations.py``).

PROSLEX (multi-label statute prediction) is scored as its paper does: accuracy as exact match of
the predicted set, micro- and macro-averaged F1, and precision/recall/F1/support per statute.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from legalft.evaluation.counts import ItemCounts, class_recall_counts, f1_of_counts, hit_counts, label_counts

log = logging.getLogger(__name__)


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
    unsupported = [label for label, n in zip(labels, support) if n == 0]
    if unsupported and len(y_true):
        log.warning("%s: no scored document has %s: macro-F1 averages all %d labels and counts %s F1 as 0 "
                    "(scikit-learn's zero_division=0); per_label holds each label's support",
                    ", ".join(unsupported), "this label" if len(unsupported) == 1 else "these labels", len(labels),
                    "its" if len(unsupported) == 1 else "their")
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
    from sklearn.metrics import accuracy_score, f1_score

    return {
        "n": len(gold),
        "accuracy": float(accuracy_score(gold, predicted)),
        # scikit-learn's balanced_accuracy_score, without its warning for predictions outside the gold classes
        "balanced_accuracy": class_recall_counts(list(gold), list(predicted)).value(),
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


# --- LegalBench --------------------------------------------------------------------------------
# Each task is scored by the metric its catalog entry names. ``mode="paper"`` is the metric the
# paper describes; ``mode="official"`` reproduces LegalBench's public evaluation code exactly,
# including two defects, for comparison with numbers published with that code:
#   - successor_liability is listed among the exact-match tasks, so it gets balanced accuracy and
#     never reaches its F1 branch;
#   - the ssla_* F1 adds the unmatched generations to the false positives once per gold answer, so
#     identical two-item lists score 0.8.
METRIC_MODES = ("paper", "official")
SUCCESSOR_LIABILITY_CLASSES = ("express agreement", "fraudulent conveyance", "de facto merger", "mere continuation")


def balanced_accuracy(gold: Sequence[str], generations: Sequence[str]) -> float:
    """scikit-learn's balanced_accuracy_score of the normalised answers (the mean recall of the gold
    classes), from counts: a generation that names no class is wrong, without the warning
    scikit-learn gives for it on every call."""
    from legalft.evaluation.normalize import normalize

    return class_recall_counts([normalize(g) for g in gold], [normalize(g) for g in generations]).value()


def successor_liability_counts(gold: Sequence[str], generations: Sequence[str]) -> np.ndarray:
    """Per example (true positives, false positives, false negatives) of the exceptions named in the
    generation against the comma-separated gold ones.

    Names are matched after normalisation (case, punctuation), on purpose: LegalBench's own F1
    function for this task (never reached by its code, which scores the task by balanced accuracy)
    matches them case-sensitively, so "De facto merger" would name no exception there. See
    docs/results.md, ``metric_mode``."""
    from legalft.evaluation.normalize import normalize

    counts = []
    for answer, generation in zip(gold, generations):
        predicted = {c for c in SUCCESSOR_LIABILITY_CLASSES if c in normalize(generation)}
        expected = {normalize(a) for a in answer.split(",") if a.strip()}
        counts.append((len(predicted & expected), len(predicted - expected), len(expected - predicted)))
    return np.array(counts, dtype=np.int64).reshape(-1, 3)


def ssla_counts(gold: Sequence[str], generations: Sequence[str], official: bool = False) -> np.ndarray:
    """Per example (tp, fp, fn) of the named defendants/plaintiffs: a gold name counts when a
    generated item contains it."""
    from legalft.evaluation.normalize import normalize

    counts = []
    for answer, generation in zip(gold, generations):
        tp = fp = fn = 0
        remaining = [normalize(g) for g in str(generation).split(",")]
        for name in (normalize(a) for a in answer.split(",")):
            match = next((j for j, item in enumerate(remaining) if name in item), None)
            if match is None:
                fn += 1
            else:
                tp += 1
                del remaining[match]
            if official:  # the public code's placement: inside the loop over gold answers
                fp += len(remaining)
        if not official:
            fp += len(remaining)
        counts.append((tp, fp, fn))
    return np.array(counts, dtype=np.int64).reshape(-1, 3)


def official_ssla_counts(gold: Sequence[str], generations: Sequence[str]) -> np.ndarray:
    return ssla_counts(gold, generations, official=True)


def within_10pct_hits(gold: Sequence[str], generations: Sequence[str]) -> np.ndarray:
    """sara_numeric, per example: the first number in the generation within 10% of the gold dollar amount."""
    import re

    hits = []
    for answer, generation in zip(gold, generations):
        number = re.search(r"\d+", str(generation).replace(",", "").replace(".", ""))
        predicted = int(number.group()) if number else 0
        expected = int(answer.replace("$", "").replace(",", ""))
        hits.append(abs(predicted / (expected + 0.1) - 1.0) < 0.1)
    return np.array(hits, dtype=np.int64)


def stemmed_match_hits(gold: Sequence[str], generations: Sequence[str]) -> np.ndarray:
    """definition_extraction, per example: a comma-separated generated term equals a permissible term, stemmed."""
    from legalft.evaluation.normalize import normalize

    hits = []
    for answer, generation in zip(gold, generations):
        permissible = {normalize(a, stem=True) for a in answer.split(",")}
        hits.append(any(normalize(g, stem=True) in permissible for g in str(generation).split(",")))
    return np.array(hits, dtype=np.int64)


def contains_hits(gold: Sequence[str], generations: Sequence[str]) -> np.ndarray:
    """citation_prediction_open, per example: the gold case name appears in the generation (after normalisation)."""
    from legalft.evaluation.normalize import normalize

    return np.array([normalize(a) in normalize(g) for a, g in zip(gold, generations)], dtype=np.int64)


def successor_liability_f1(gold: Sequence[str], generations: Sequence[str]) -> float:
    return float(f1_of_counts(successor_liability_counts(gold, generations).sum(0)))


def ssla_f1(gold: Sequence[str], generations: Sequence[str], official: bool = False) -> float:
    return float(f1_of_counts(ssla_counts(gold, generations, official).sum(0)))


def official_ssla_f1(gold: Sequence[str], generations: Sequence[str]) -> float:
    return ssla_f1(gold, generations, official=True)


def within_10pct(gold: Sequence[str], generations: Sequence[str]) -> float:
    return float(np.mean(within_10pct_hits(gold, generations)))


def stemmed_match(gold: Sequence[str], generations: Sequence[str]) -> float:
    return int(stemmed_match_hits(gold, generations).sum()) / len(gold)


def contains(gold: Sequence[str], generations: Sequence[str]) -> float:
    return int(contains_hits(gold, generations).sum()) / len(gold)


# A task's catalog metric names its scorer in each mode: (the name scores are reported under, function).
LEGALBENCH_METRICS = {
    "balanced_accuracy": {mode: ("balanced_accuracy", balanced_accuracy) for mode in METRIC_MODES},
    "within_10pct": {mode: ("within_10pct", within_10pct) for mode in METRIC_MODES},
    "stemmed_match": {mode: ("stemmed_match", stemmed_match) for mode in METRIC_MODES},
    "contains": {mode: ("contains", contains) for mode in METRIC_MODES},
    "f1": {"paper": ("f1", ssla_f1), "official": ("f1", official_ssla_f1)},
}
# Tasks scored otherwise than their catalog metric says (see the defects above).
TASK_METRICS = {
    "successor_liability": {"paper": ("f1", successor_liability_f1),
                            "official": ("balanced_accuracy", balanced_accuracy)},
}


def legalbench_scores(task: str, metric: str, gold: Sequence[str], generations: Sequence[str], mode: str = "paper") -> dict:
    """The task's score under its own metric; tasks graded by hand are flagged, not scored."""
    if mode not in METRIC_MODES:
        raise ValueError(f"metric_mode {mode!r}: choose one of {METRIC_MODES}")
    if len(gold) != len(generations):
        raise ValueError(f"{task}: {len(gold)} gold answers but {len(generations)} generations")
    if metric == "manual":
        return {"n": len(gold), "metric": "manual", "manual_grading": True}
    name, score = TASK_METRICS.get(task, LEGALBENCH_METRICS[metric])[mode]
    return {"n": len(gold), "metric": name, name: score(gold, generations)}


# --- One number per task, as reports compare runs ---------------------------------------------
def primary_metric(task_scores: dict) -> str | None:
    """The metric a task is compared on: LegalBench's own per task; macro-F1 for statute prediction
    (what PROSLEX reports across methods). None for tasks graded by hand."""
    if task_scores.get("manual_grading"):
        return None
    return task_scores.get("metric") or "macro_f1"


def legalbench_item_counts(name: str, task: str, gold: Sequence[str], generations: Sequence[str],
                           mode: str) -> ItemCounts:
    """LegalBench's metric ``name`` (as legalbench_scores reports it for the task) per example."""
    from legalft.evaluation.normalize import normalize

    if name == "balanced_accuracy":
        return class_recall_counts([normalize(g) for g in gold], [normalize(g) for g in generations])
    if name == "f1":
        counter = successor_liability_counts if task in TASK_METRICS else (
            official_ssla_counts if mode == "official" else ssla_counts)
        return ItemCounts(counter(gold, generations), f1_of_counts)
    hits = {"within_10pct": within_10pct_hits, "stemmed_match": stemmed_match_hits, "contains": contains_hits}
    return hit_counts(hits[name](gold, generations))


def item_counts(task: str, task_scores: dict, gold: Sequence, predicted: Sequence, mode: str = "paper") -> ItemCounts:
    """A task's primary metric (``primary_metric``) as per-example counts, for resampling in paired tests."""
    name = primary_metric(task_scores)
    if "metric" in task_scores:  # LegalBench
        return legalbench_item_counts(name, task, gold, predicted, mode)
    if "per_label" in task_scores:
        from sklearn.preprocessing import MultiLabelBinarizer

        binarizer = MultiLabelBinarizer(classes=list(task_scores["per_label"]))
        return label_counts(binarizer.fit_transform(gold), binarizer.transform(predicted), name)
    if name == "balanced_accuracy":
        return class_recall_counts(list(gold), list(predicted))
    labels = sorted(set(gold) | set(predicted))
    index = {label: i for i, label in enumerate(labels)}
    y_true, y_pred = (np.eye(len(labels), dtype=bool)[[index[x] for x in values]] for values in (gold, predicted))
    return label_counts(y_true, y_pred, name)
