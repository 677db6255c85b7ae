"""The encoder method without a validation split to choose a checkpoint on: ``data.cv_folds=K`` (fold
models scored out of fold, whose scores tune the final model's thresholds) or a task that has none
(LegalBench's). Models train for ``trainer.max_epochs`` and the last one is kept."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from omegaconf import DictConfig

from legalft.data.example import Example, Task, TaskSpec
from legalft.errors import UserError
from legalft.methods.encoder_model import (build_datamodule, build_module, load_trained_module, predict,
                                           subset_field, test_and_write)
from legalft.run_context import RunContext

log = logging.getLogger(__name__)


def on_one_device(trainer_cfg: DictConfig) -> None:
    """What a run without a validation split needs of the trainer config: a number of epochs (nothing to
    stop early on) and one device."""
    if trainer_cfg.get("max_epochs") == -1:
        raise UserError("trainer.max_epochs=-1 trains until early stopping, which needs a validation split, and this "
                        "run has none (data.cv_folds, or a task without one): set a number of epochs, e.g. "
                        "trainer.max_epochs=10.")
    devices, strategy = str(trainer_cfg.get("devices", 1)), str(trainer_cfg.get("strategy", "auto"))
    if (devices.isdigit() and int(devices) > 1) or int(trainer_cfg.get("num_nodes", 1)) > 1 or "ddp" in strategy \
            or "deepspeed" in strategy.lower():
        raise UserError(f"a run without a validation split (data.cv_folds, or a task that has none) trains its models "
                        f"one after another on one device (trainer.devices={devices}, strategy {strategy}): use "
                        "trainer=default or trainer=cpu, and run seeds or tasks in parallel as separate jobs.")


def fixed_epoch_trainer(ctx: RunContext, last_checkpoint: Path, with_loggers: bool):
    """A trainer for ``trainer.max_epochs`` without validation: what a cross-validated run trains its folds
    and its final model with (there is no validation split to choose a checkpoint or stop early on). It
    keeps the preemption callback, pointed at ``last_checkpoint``, so a stopped fold resumes exactly."""
    import lightning as L

    from legalft.preemption import PreemptionCheckpoint

    callbacks = []
    for callback in ctx.callbacks():
        if isinstance(callback, (L.pytorch.callbacks.ModelCheckpoint, L.pytorch.callbacks.EarlyStopping)):
            continue  # they watch validation scores
        if isinstance(callback, PreemptionCheckpoint):
            callback.checkpoint_path = last_checkpoint
        callbacks.append(callback)
    return ctx.trainer(callbacks, with_loggers, enable_checkpointing=False, limit_val_batches=0)


def fit_fixed_epochs(ctx: RunContext, module, datamodule, last_checkpoint: Path, with_loggers: bool):
    from legalft.methods.trained import TrainedMethod

    trainer = fixed_epoch_trainer(ctx, last_checkpoint, with_loggers)
    return TrainedMethod.fit(trainer, module, datamodule, last_checkpoint).trainer


def new_encoder(ctx: RunContext, optimiser: dict, task: TaskSpec, tokenizer):
    """``new_model`` for the encoder: (a fresh encoder module for the documents it fits on, the tokenizer)."""
    return lambda fitted: (build_module(ctx.model, optimiser, task, fitted), tokenizer)


def out_of_fold_scores(ctx: RunContext, optimiser: dict, task: TaskSpec, pool: list[Example], folds, tokenizer):
    """Every document's probabilities from the encoder fold model that did not train on it (``out_of_fold``)."""
    return out_of_fold(ctx, task, pool, folds, new_encoder(ctx, optimiser, task, tokenizer))


def out_of_fold(ctx: RunContext, task: TaskSpec, pool: list[Example], folds, new_model) -> np.ndarray:
    """Every document's probabilities from the fold model that did not train on it: ``new_model(fitted)``
    gives (a fresh Lightning module, its tokenizer), trained on the fold's documents for
    ``trainer.max_epochs``. A finished fold's scores are kept in ``checkpoints/cv/fold_<k>.json``, so a rerun
    into the run folder (a requeued job) goes on from the first unfinished fold. Every method that
    cross-validates a trained model uses it."""
    import json

    from legalft.checkpoint_io import remove_if_saved_here
    from legalft.io import atomic_write_json

    scores = np.zeros((len(pool), len(task.labels)))
    for k, (fit, held) in enumerate(folds):
        saved = ctx.folder.checkpoints / "cv" / f"fold_{k}.json"
        held_ids = [pool[i].id for i in held]
        if saved.exists():
            record = json.loads(saved.read_text())
            if record.get("ids") != held_ids:
                raise UserError(f"{saved}: this fold held out other documents than the run's data now gives it; the "
                                "data changed since the run started. Start a new run folder (leave hydra.run.dir unset).")
            scores[held] = np.array(record["probs"])
            log.info("fold %d of %d: scores read from %s", k + 1, len(folds), saved)
            continue
        log.info("fold %d of %d: training on %d documents, scoring %d", k + 1, len(folds), len(fit), len(held))
        # at the precision the fold file keeps, so a run that reads it back goes on exactly as one that did not
        fold_checkpoint = saved.with_suffix(".last.ckpt")
        scores[held] = fold_scores(ctx, task, [pool[i] for i in fit], [pool[i] for i in held], new_model,
                                   fold_checkpoint).round(6)
        free_finished_models()
        atomic_write_json(saved, {"ids": held_ids, "probs": scores[held].tolist()})
        remove_if_saved_here(fold_checkpoint)  # the fold's scores are kept; its model is needed no more
    return scores


def train_new_model(ctx: RunContext, task: TaskSpec, fitted: list[Example], scored: list[Example], new_model,
                    last_checkpoint: Path, with_loggers: bool):
    """A fresh model trained on ``fitted`` for ``trainer.max_epochs``, with the datamodule that predicts
    ``scored`` and the trainer that trained it: a fold's, or the final model's (``scored`` empty)."""
    import lightning as L

    L.seed_everything(ctx.seed, workers=True)
    module, tokenizer = new_model(fitted)
    datamodule = build_datamodule(ctx.build(ctx.datamodule, "datamodule"), module, tokenizer, task, fitted, [], scored)
    trainer = fit_fixed_epochs(ctx, module, datamodule, last_checkpoint, with_loggers)
    return module, datamodule, trainer


def fold_scores(ctx: RunContext, task: TaskSpec, fitted: list[Example], scored: list[Example], new_model,
                last_checkpoint: Path) -> np.ndarray:
    """One fold: a model trained on ``fitted``, its probabilities for ``scored``. Only the scores leave."""
    module, datamodule, _ = train_new_model(ctx, task, fitted, scored, new_model, last_checkpoint, with_loggers=False)
    return predict(module, datamodule, "test")


def train_final_model(ctx: RunContext, optimiser: dict, task: TaskSpec, pool: list[Example], tokenizer) -> None:
    """The final model, saved as the run's best checkpoint; nothing outside keeps it once saved."""
    run = ctx.folder
    _, _, trainer = train_new_model(ctx, task, pool, [], new_encoder(ctx, optimiser, task, tokenizer), run.last_checkpoint,
                                    with_loggers=True)
    trainer.save_checkpoint(run.best_checkpoint, weights_only=True)  # atomically (legalft.checkpoint_io)


def free_finished_models() -> None:
    """A Lightning module and its trainer refer to each other, so a finished fold's weights and optimiser
    state outlive it until Python's cycle collector runs; collect now, before the next model is built,
    and hand the freed GPU blocks back (one fold's model at a time, not two)."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def fixed_epoch_run(ctx: RunContext, method, data: Task, tokenizer, fusing: bool = False,
                    overlap: dict | None = None) -> dict:
    """Training without a validation split to choose a checkpoint on: ``trainer.max_epochs`` epochs, the
    last model kept (``checkpoints/best.ckpt``). With ``data.cv_folds=K``, first K fold models, each
    scored on the documents it did not see (``cv.json``), whose out-of-fold scores tune the final
    model's thresholds; without, a task that has no validation split (LegalBench's, say) trains on its
    train split with thresholds at 0.5. The test split, if any, is scored. ``fusing`` (cross-validated
    runs only): ``cv.json`` scores the fusion with ``method=classical``, each side's own scores under
    ``parts``, and the final model is fused with classical fitted on every document."""
    from legalft.evaluation.cross_validation import cross_validated, stratified_folds
    from legalft.io import atomic_write_json
    from legalft.methods import fusion

    run, task, pool, optimiser = ctx.folder, data.spec, data.train + data.val, method.optimiser
    thresholds, metrics, cv_fields, fuse, fusion_fields = np.full(len(task.labels), 0.5), {}, {}, None, {}
    if ctx.cv_folds:
        folds = stratified_folds(pool, ctx.cv_folds, ctx.seed)
        encoder = out_of_fold_scores(ctx, optimiser, task, pool, folds, tokenizer)
        if fusing:
            from legalft.methods.classical import ClassicalMethod

            classical = ClassicalMethod().out_of_fold(data, pool, folds, ctx.seed)
            options = {"fused": cross_validated(pool, fusion.fused_per_fold(encoder, classical), folds, task),
                       "encoder": cross_validated(pool, encoder, folds, task),
                       "classical": cross_validated(pool, classical, folds, task)}
            held_out = {option: cv["mean"][fusion.CHOSEN_BY] for option, (_, cv) in options.items()}
            use = fusion.choose(held_out)  # what the run predicts with: the best out of fold
            thresholds, cv = options[use]
            cv = {**cv, "use": use, "parts": {side: options[side][1] for side in fusion.SIDES},
                  "fused": options["fused"][1]}
            stats = fusion.Standardisation.fit(encoder, classical)
            fusion.write_record(run, stats, trained_on="train+val", seed=ctx.seed, use=use, held_out=held_out,
                                chosen_on="cross-validation")
            fusion_fields = fusion.results_fields(use, held_out, "cross-validation")
            log.info("out of fold, %s: %s; the run predicts with %s", fusion.CHOSEN_BY,
                     {option: round(value, 3) for option, value in held_out.items()}, use)
            if data.test:
                classical_test = fusion.classical_side(data, pool, ctx.seed)(data.test)
                combine = fusion.with_choice(use, stats)
                fuse = lambda probs: combine(probs, classical_test)  # noqa: E731
        else:
            thresholds, cv = cross_validated(pool, encoder, folds, task)
        atomic_write_json(run.cv_results, {task.name: cv})
        print(f"cross-validation: {run.path / 'cv.json'}")
        log.info("%d-fold cross-validation: %s", len(folds), {k: round(v, 3) for k, v in cv["mean"].items()})
        for side, part in cv.get("parts", {}).items():
            log.info("  %s alone: %s", side, {k: round(v, 3) for k, v in part["mean"].items()})
        metrics, cv_fields = {f"cv/{k}": v for k, v in cv["mean"].items()}, {"cv_folds": len(folds)}
        metrics.update({f"cv/{side}/{k}": v for side, part in cv.get("parts", {}).items() for k, v in part["mean"].items()})
    else:
        log.info("task %s has no validation split: training for trainer.max_epochs=%s epochs and keeping the last "
                 "model%s", task.name, ctx.trainer_config.max_epochs,
                 ", thresholds at 0.5 (data.cv_folds=K tunes them out of fold)" if task.multi_label else "")

    if not run.best_checkpoint.exists():
        log.info("final model: training on all %d documents", len(pool))
        train_final_model(ctx, optimiser, task, pool, tokenizer)
        free_finished_models()  # before the saved model is read back to score the test split
    if task.multi_label:
        run.write_thresholds(task.labels, thresholds)
    if data.test is None:
        log.info("no test split: %s", "the cross-validation in cv.json is the run's result" if cv_fields else
                 "`python evaluate.py run=%s data.test_path=...` scores it later" % run.path)
        return metrics
    best = load_trained_module(run)
    datamodule = build_datamodule(ctx.build(ctx.datamodule, "datamodule"), best, tokenizer, task, [], [], data.test)
    scores = test_and_write(
        method, ctx, best, datamodule, data.test, task, loggers=(), fuse=fuse, **cv_fields,
        model=fusion.model_label(ctx.model_choice, fusion_fields["fusion_choice"]["use"]) if fusion_fields
        else ctx.model_choice, pretrained=str(ctx.model.pretrained), **subset_field(ctx.data), **(overlap or {}),
        **fusion_fields,
    )
    metrics.update({f"test/{k}": v for k, v in scores.items() if isinstance(v, float)})
    method.finish(ctx)
    return metrics
