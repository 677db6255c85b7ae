"""``protocol.cv_folds=K`` for generative LoRA: one adapter per fold, trained on the other folds and scored on its
own by the prompts and metrics a test split is scored by; ``cv.json`` holds each fold's scores, their mean and
spread, as every cross-validating method's does. Generated answers are label sets, so nothing is tuned out of
fold. A finished fold's scores are kept in ``checkpoints/cv/fold_<k>.json``: a requeued job goes on from the
first unfinished fold. The run's own adapter then trains on every labelled document (train and validation); the fold loop is
``legalft.kit.folds``'s, shared by every method that cross-validates."""

from __future__ import annotations

import logging
from dataclasses import replace

from legalft.data.example import Task
from legalft.foundation.errors import UserError
from legalft.runs.context import RunContext

log = logging.getLogger(__name__)


def task_to_fold(tasks: list[Task], regime: str) -> Task:
    """The one task a cross-validated LoRA run folds (its adapter trains on that task alone)."""
    if regime not in ("pooled", "per_task") or len(tasks) != 1:
        raise UserError(f"protocol.cv_folds: a cross-validated LoRA run trains one adapter on one task (method.regime="
                        f"{regime}, {len(tasks)} task(s) loaded); set data.tasks to one task and method.regime=pooled, "
                        "or run one job per task.")
    return tasks[0]


def cross_validate(ctx: RunContext, optimiser: dict, task: Task) -> tuple[dict, dict]:
    """(the run's ``cv/`` metrics, the results fields) of K fold adapters; ``cv.json`` written."""
    from legalft.evaluation.cross_validation import summary
    from legalft.kit.folds import fold_records, write_cv

    pool = task.train + task.val
    folds = ctx.folds(pool)

    def run_fold(k, fit, held, last_checkpoint):
        fold = replace(task, train=[pool[i] for i in fit], val=[], test=[pool[i] for i in held])
        return {"scores": fold_scores(ctx, optimiser, fold, last_checkpoint)}

    per_fold = [record["scores"] for record in fold_records(ctx.folder.folds(), pool, folds, run_fold)]
    cv = {"folds": len(folds), "per_fold": per_fold, **summary(per_fold)}
    return write_cv(ctx.folder, {task.spec.name: cv}), {"cv_folds": len(folds)}


def fold_scores(ctx: RunContext, optimiser: dict, fold: Task, last_checkpoint) -> dict:
    """One fold: an adapter trained on its train split (resumable from ``last_checkpoint``), its scores on
    its test split. Only the scores leave."""
    import lightning as L

    from legalft.methods.lora.fitting import train_adapter
    from legalft.methods.lora.scoring import local_engine, scored

    L.seed_everything(ctx.seed, workers=True)
    _, model, tokenizer, _ = train_adapter(ctx, optimiser, [fold], last_checkpoint)
    task_scores, _ = scored(ctx, local_engine(model, tokenizer), [fold])
    return task_scores[fold.spec.name]
