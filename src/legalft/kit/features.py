"""What a classifier of a task's texts reads and gives, for the methods that fit scikit-learn-like models
(``method=classical``, ``method=setfit``, the classical side of a fusion): each example's input as its
prompt shows it, and the model's scores in the task's label order."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from legalft.data.example import Example, Task


def features_of(task: Task, examples: list[Example]) -> list[str]:
    """What the classifier reads: the input columns the task's prompt shows (the text, mostly)."""
    from legalft.llm.prompts import input_block

    return [input_block(task, example) for example in examples]


def align(raw: np.ndarray, model, spec) -> np.ndarray:
    """Columns in the task's label order: a single-label classifier orders them by the classes it saw."""
    if spec.multi_label:
        return raw
    seen = list(model.classes_)
    aligned = np.zeros((len(raw), len(spec.labels)))
    for j, label in enumerate(spec.labels):
        if j in seen:
            aligned[:, j] = raw[:, seen.index(j)]
    return aligned


class FittedScorer:
    """``model`` fitted on a task's texts, called on examples: scores per label in the task's label order."""

    def __init__(self, model, task: Task, texts: Callable[[Task, list[Example]], list[str]]) -> None:
        self.model, self.task, self.texts = model, task, texts

    def __call__(self, examples: list[Example]) -> np.ndarray:
        return align(self.model.predict_proba(self.texts(self.task, examples)), self.model, self.task.spec)


def fitted_scorer(model, task: Task, texts: Callable[[Task, list[Example]], list[str]] = features_of,
                  seed: int = 0) -> FittedScorer:
    """``model`` (anything with scikit-learn's ``fit``, ``predict_proba`` and ``classes_``, fitted on texts) fitted
    on ``task.train``."""
    from legalft.evaluation.predictions import targets_of

    spec = task.spec
    model.fit(texts(task, task.train), targets_of(task.train, spec), spec.multi_label, seed)
    return FittedScorer(model, task, texts)
