"""``data.cv_folds=K`` for generative LoRA: one adapter per fold, trained on the other folds and scored on its
own by the prompts and metrics a test split is scored by; ``cv.json`` holds each fold's scores, their mean and
spread, as every cross-validating method's does. Generated answers are label sets, so nothing is tuned out of
fold. A finished fold's scores are kept in ``checkpoints/cv/fold_<k>.json``: a requeued job goes on from the
first unfinished fold. The run's own adapter then trains on every labelled document (train and validation)."""

from __future__ import annotations

import json
import logging
from dataclasses import replace

from legalft.data.example import Task
from legalft.errors import UserError
from legalft.run_context import RunContext

log = logging.getLogger(__name__)


def task_to_fold(tasks: list[Task], regime: str) -> Task:
    """The one task a cross-validated LoRA run folds (its adapter trains on that task alone)."""
    if regime not in ("pooled", "per_task") or len(tasks) != 1:
        raise UserError(f"data.cv_folds: a cross-validated LoRA run trains one adapter on one task (method.regime="
                        f"{regime}, {len(tasks)} task(s) loaded); set data.tasks to one task and method.regime=pooled, "
                        "or run one job per task.")
    return tasks[0]


def cross_validate(ctx: RunContext, optimiser: dict, task: Task) -> tuple[dict, dict]:
    """(the run's ``cv/`` metrics, the results fields) of K fold adapters; ``cv.json`` written."""
    from legalft.evaluation.cross_validation import stratified_folds, summary
    from legalft.io import atomic_write_json

    pool = task.train + task.val
    folds = stratified_folds(pool, ctx.cv_folds, ctx.seed)
    per_fold = []
    for k, (fit, held) in enumerate(folds):
        saved = ctx.folder.checkpoints / "cv" / f"fold_{k}.json"
        held_ids = [pool[i].id for i in held]
        if saved.exists():
            record = json.loads(saved.read_text())
            if record.get("ids") != held_ids:
                raise UserError(f"{saved}: this fold held out other documents than the run's data now gives it; the "
                                "data changed since the run started. Start a new run folder (leave hydra.run.dir unset).")
            per_fold.append(record["scores"])
            log.info("fold %d of %d: scores read from %s", k + 1, len(folds), saved)
            continue
        log.info("fold %d of %d: training on %d documents, scoring %d", k + 1, len(folds), len(fit), len(held))
        fold = replace(task, train=[pool[i] for i in fit], val=[], test=[pool[i] for i in held])
        scores = fold_scores(ctx, optimiser, fold, saved.parent / f"fold_{k}")
        atomic_write_json(saved, {"ids": held_ids, "scores": scores})
        per_fold.append(scores)
    cv = {"folds": len(folds), "per_fold": per_fold, **summary(per_fold)}
    atomic_write_json(ctx.folder.cv_results, {task.spec.name: cv})
    print(f"cross-validation: {ctx.folder.cv_results}")
    log.info("%d-fold cross-validation: %s", len(folds), {k: round(v, 3) for k, v in cv["mean"].items()})
    return {f"cv/{k}": v for k, v in cv["mean"].items()}, {"cv_folds": len(folds)}


def fold_scores(ctx: RunContext, optimiser: dict, fold: Task, checkpoints) -> dict:
    """One fold: an adapter trained on its train split (its checkpoint in ``checkpoints``, a folder of its
    own), its scores on its test split. Only the scores leave: once they are kept, the checkpoint goes, and
    the folder with it where this command made it."""
    import lightning as L

    from legalft.checkpoint_io import remove_if_saved_here
    from legalft.io import created_paths, make_folders
    from legalft.methods.encoder_fixed_epochs import free_finished_models
    from legalft.methods.lora.fitting import train_adapter
    from legalft.methods.lora.scoring import local_engine, scored

    L.seed_everything(ctx.seed, workers=True)
    make_folders(checkpoints)
    _, model, tokenizer, _ = train_adapter(ctx, optimiser, [fold], checkpoints / "last.ckpt")
    task_scores, _ = scored(ctx, local_engine(model, tokenizer), [fold])
    del model
    free_finished_models()
    remove_if_saved_here(checkpoints / "last.ckpt")
    if checkpoints.absolute() in created_paths() and not any(checkpoints.iterdir()):
        checkpoints.rmdir()
    return task_scores[fold.spec.name]
