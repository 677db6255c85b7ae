"""The choices a document classifier's run makes by itself (``legalft.evaluation.choices``): which epoch's model it
keeps, whether its thresholds are tuned or fixed, and the summary line that says what predicted. ``method`` is
the ``DocumentClassifierMethod`` whose settings (``best_on_validation``, ``min_choice_docs``) they follow."""

from __future__ import annotations

import numpy as np

from legalft.data.example import Example, Task, TaskSpec
from legalft.evaluation.choices import Choice, prior_only
from legalft.runs.context import RunContext


def schedule_choice(method, ctx: RunContext, data: Task) -> Choice | None:
    """Whether the model kept is the best validation epoch (a method that asks for it, on a validation split
    of at least ``min_choice_docs`` documents) or, the prior, the last of ``trainer.max_epochs``; None for a
    method that always trains a fixed schedule."""
    if not method.best_on_validation:
        return None
    n = len(data.val)
    if ctx.cv_folds:
        return prior_only("last", n, "cross-validated: every fold and the final model train trainer.max_epochs")
    if n < method.min_choice_docs:
        return prior_only("last", n, f"{n} validation documents, fewer than method.min_choice_docs="
                                     f"{method.min_choice_docs}" if n else "no validation split: "
                                     "trainer.max_epochs")
    return Choice("best", "validation", n, "last", {})


def last_epoch_callbacks(callbacks: list) -> list:
    """The ``callbacks`` group with its best-epoch checkpoint keeping the latest epoch instead (``best.ckpt``, the
    model the run predicts with, written as before) and without early stopping: nothing watches validation."""
    from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint

    kept = []
    for callback in callbacks:
        if isinstance(callback, EarlyStopping):
            continue
        if isinstance(callback, ModelCheckpoint) and callback.monitor is not None:  # the latest epoch is the highest
            callback = ModelCheckpoint(dirpath=callback.dirpath, filename=callback.filename, monitor="epoch",
                                       mode="max", save_top_k=1, save_weights_only=callback.save_weights_only,
                                       enable_version_counter=False)
        kept.append(callback)
    return kept


def thresholds_on_validation(method, ctx: RunContext, task: TaskSpec, val_probs: np.ndarray,
                             val: list[Example]) -> tuple[np.ndarray, Choice]:
    """Thresholds tuned on the validation scores or every label at 0.5, chosen on inner folds of the validation
    documents where there are ``min_choice_docs`` of them (else the prior, tuned); saved in the run folder."""
    from legalft.evaluation.choices import on_validation, thresholds_choice
    from legalft.evaluation.predictions import targets_of

    targets = targets_of(val, task)
    choice = thresholds_choice(lambda tuned: on_validation(val_probs, targets, ctx.seed, tuned), targets,
                               "validation", method.min_choice_docs, ctx.seed)
    if choice.option == "tuned":
        return method.tune_thresholds(ctx, task, val_probs, val), choice
    fixed = np.full(len(task.labels), 0.5)
    ctx.folder.write_thresholds(task.labels, fixed)
    return fixed, choice


def thresholds_out_of_fold(scores: np.ndarray, folds, targets: np.ndarray, min_docs: int, seed: int) -> Choice:
    """Tuned or fixed thresholds, chosen on a cross-validated run's out-of-fold decisions."""
    from legalft.evaluation.choices import thresholds_choice
    from legalft.evaluation.cross_validation import held_out_decisions

    return thresholds_choice(lambda tuned: held_out_decisions(scores, folds, targets, tuned), targets, "out_of_fold",
                             min_docs, seed)


def what_predicted(model: str, choices: dict[str, Choice]) -> str:
    """The run's summary line: the model that made the predictions, and every choice with its evidence."""
    from legalft.evaluation.choices import described
    from legalft.methods.fusion import predicted_by

    who = predicted_by(model, choices["fusion"].option) if "fusion" in choices else model
    return f"{who}; {described(choices)}" if choices else who


def model_named(model: str, fusion_fields: dict) -> str:
    """What the results name as the run's model: the option that made its predictions."""
    from legalft.methods.fusion import model_label

    return model_label(model, fusion_fields["fusion_choice"]["use"]) if fusion_fields else model
