"""k-fold cross-validation over a task's labelled documents (``protocol.cv_folds=K``): folds stratified
by label sets (iterative stratification, so rare labels of multi-label data land in every fold),
seeded; each fold's scores, their mean and standard deviation. Every method that cross-validates
(``method=classical``, ``method=encoder``) scores its folds here, by the same protocol."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from legalft.data.example import Example, TaskSpec
from legalft.foundation.errors import UserError

Folds = list[tuple[list[int], list[int]]]


def stratified_folds(examples: list[Example], folds: int, seed: int, stratify: bool = True) -> Folds:
    """(indices to fit on, indices held out) per fold; every example is held out exactly once. Stratified by
    label sets, or, ``stratify=False``, plain shuffled folds."""
    from iterstrat.ml_stratifiers import MultilabelStratifiedKFold
    from sklearn.model_selection import KFold

    if not 2 <= folds <= len(examples):
        raise UserError(f"protocol.cv_folds={folds}: choose between 2 and {len(examples)} (the documents to fold).")
    labels = sorted({label for e in examples for label in e.labels})
    targets = np.array([[label in e.labels for label in labels] for e in examples], dtype=int)
    splitter = (MultilabelStratifiedKFold if stratify else KFold)(n_splits=folds, shuffle=True, random_state=seed)
    return [(sorted(fit), sorted(held)) for fit, held in splitter.split(np.zeros(len(examples)), targets)]


def cross_validated(pool: list[Example], out_of_fold: np.ndarray | Callable[[Sequence[int]], np.ndarray],
                    folds: Folds, spec: TaskSpec, tuned: bool = True) -> tuple[np.ndarray, dict]:
    """(thresholds for the final model, the record written to ``cv.json``) from every document's
    out-of-fold scores, or from a function of the indices a fold fits on to the scores as that fold
    sees them (late fusion standardises on the fitted folds' scores alone).

    A multi-label fold is scored with thresholds tuned on the *other* folds' out-of-fold scores, so no
    fold is decided by thresholds fitted to its own labels; the final model's thresholds are tuned on
    all of them. Single-label tasks take the top label and need none, and ``tuned=False`` decides every
    label at 0.5."""
    from legalft.evaluation.metrics import tune_thresholds
    from legalft.evaluation.predictions import score_predictions, targets_of

    targets = targets_of(pool, spec)
    tuned = tuned and spec.multi_label
    per_fold = [score_predictions([pool[i] for i in held], scores[held], spec, thresholds)[0]
                for held, scores, thresholds in fold_thresholds(out_of_fold, folds, targets, tuned)]
    every = list(range(len(pool)))
    final = tune_thresholds(seen_by(out_of_fold)(every), targets) if tuned else np.full(len(spec.labels), 0.5)
    return final, {"folds": len(folds), "per_fold": per_fold, **summary(per_fold)}


def held_out_decisions(out_of_fold: np.ndarray | Callable[[Sequence[int]], np.ndarray], folds: Folds,
                       targets: np.ndarray, tuned: bool = True) -> np.ndarray:
    """Every document's decisions (documents x labels) as ``cross_validated`` makes them: by thresholds tuned on
    the other folds' scores (``tuned``), or at 0.5."""
    decisions = np.zeros(targets.shape, dtype=bool)
    for held, scores, thresholds in fold_thresholds(out_of_fold, folds, targets, tuned):
        decisions[held] = scores[held] >= thresholds
    return decisions


def fold_thresholds(out_of_fold, folds: Folds, targets: np.ndarray, tuned: bool):
    """For each fold: (its held-out indices, the scores as the fold sees them, the thresholds it is decided by:
    tuned on the other folds' scores, or every label at 0.5)."""
    from legalft.evaluation.metrics import tune_thresholds

    seen_from = seen_by(out_of_fold)
    for fit, held in folds:
        scores = seen_from(fit)
        yield held, scores, tune_thresholds(scores[fit], targets[fit]) if tuned else np.full(scores.shape[1], 0.5)


def seen_by(out_of_fold) -> Callable[[Sequence[int]], np.ndarray]:
    """Scores as the fold fitting on the given indices sees them (an array: the same for every fold)."""
    return out_of_fold if callable(out_of_fold) else (lambda fit: out_of_fold)


def summary(fold_scores: list[dict]) -> dict:
    """Mean and standard deviation (over folds) of every number the folds' scores share."""
    keys = [k for k, v in fold_scores[0].items() if isinstance(v, float)]
    values = {k: [s[k] for s in fold_scores] for k in keys}
    return {"mean": {k: float(np.mean(v)) for k, v in values.items()},
            "std": {k: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0 for k, v in values.items()}}
