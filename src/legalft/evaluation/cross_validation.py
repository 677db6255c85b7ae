"""k-fold cross-validation over a task's labelled documents (``data.cv_folds=K``): folds stratified
by label sets (iterative stratification, so rare labels of multi-label data land in every fold),
seeded; each fold's scores, their mean and standard deviation."""

from __future__ import annotations

import numpy as np

from legalft.data.example import Example
from legalft.errors import UserError


def stratified_folds(examples: list[Example], folds: int, seed: int) -> list[tuple[list[int], list[int]]]:
    """(indices to fit on, indices held out) per fold; every example is held out exactly once."""
    from iterstrat.ml_stratifiers import MultilabelStratifiedKFold

    if not 2 <= folds <= len(examples):
        raise UserError(f"data.cv_folds={folds}: choose between 2 and {len(examples)} (the documents to fold).")
    labels = sorted({label for e in examples for label in e.labels})
    targets = np.array([[label in e.labels for label in labels] for e in examples], dtype=int)
    splitter = MultilabelStratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return [(sorted(fit), sorted(held)) for fit, held in splitter.split(np.zeros(len(examples)), targets)]


def summary(fold_scores: list[dict]) -> dict:
    """Mean and standard deviation (over folds) of every number the folds' scores share."""
    keys = [k for k, v in fold_scores[0].items() if isinstance(v, float)]
    values = {k: [s[k] for s in fold_scores] for k in keys}
    return {"mean": {k: float(np.mean(v)) for k, v in values.items()},
            "std": {k: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0 for k, v in values.items()}}
