"""What every trained document classifier shares (``method=encoder``, ``method=lora_classifier``, and any new
one): a Lightning module that scores a document's windows and pools them into per-label scores, trained on
one task; thresholds tuned on held-out scores; optionally fused with the classical side
(``legalft.methods.fusion``); cross-validated through the one fold loop (``legalft.methods.folds``); scored
into prediction records and the run record. A subclass supplies only what is its own: how its model is
built, saved and loaded (``new_model``, ``save_model``, ``saved_model``), and what its runs record.

Two schedules: a method whose ``best_on_validation`` is set (the encoder) keeps its best validation epoch where
the validation split has ``min_choice_docs`` documents; otherwise a model keeps its last epoch of
``trainer.max_epochs`` (``legalft.methods.document_choices``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

import numpy as np

from legalft.data.example import Example, Task, TaskSpec
from legalft.foundation.errors import UserError
from legalft.evaluation.choices import DEFAULT_MIN_DOCS, Choice, records
from legalft.evaluation.evidence import EvidenceSelector
from legalft.methods import fusion
from legalft.methods import document_choices as choosing
from legalft.methods.document_steps import (build_datamodule, evidence_namer, fixed_epoch_trainer, one_task, predict,
                                            subset_field)
from legalft.methods.folds import free_finished_models, on_one_device
from legalft.methods import document_finished as finished
from legalft.methods.base import Classified
from legalft.methods.trained import TrainedMethod
from legalft.foundation.ranks import secondary_rank
from legalft.runs.context import RunContext

log = logging.getLogger(__name__)


@dataclass
class Trained:
    """The model a run predicts with, and what its training left for the results."""

    module: object
    tokenizer: object
    metrics: dict[str, float] = field(default_factory=dict)
    resumed: dict = field(default_factory=dict)
    loggers: object = None  # the trainer's loggers (None: the run's)
    choices: dict = field(default_factory=dict)  # the schedule's choice (legalft.evaluation.choices)


class DocumentClassifierMethod(TrainedMethod):
    reads_windows = True
    model_kind: ClassVar[str] = ""  # legalft.models.kinds: the kind of model config it takes
    best_on_validation: ClassVar[bool] = False  # keep the best validation epoch where there is a validation split
    every_epoch: ClassVar[bool] = False  # the final model's last.ckpt saved at each epoch's end, not only on a signal
    fuse_classical = False  # auto, true or false (legalft.methods.fusion.fusion_applies)
    min_choice_docs = DEFAULT_MIN_DOCS  # the fewest held-out documents a choice is made on (legalft.evaluation.choices)
    evidence_from = "scorer"  # or "model": a model trained on single sentences names its own evidence

    # --- what a document classifier supplies ----------------------------------------------------------------
    def wrong_model(self, ctx: RunContext) -> str:
        """The message for a model config of another kind than ``model_kind``."""
        raise NotImplementedError

    def new_model(self, ctx: RunContext, task: TaskSpec, fitted: list[Example]):
        """(a fresh Lightning module for ``task``, whose loss may be weighted on ``fitted``, its tokenizer)."""
        raise NotImplementedError

    def save_model(self, ctx: RunContext, trainer, trained: Trained, task: TaskSpec) -> None:
        """Keep the final model in the run folder, as ``saved_model`` reads it back."""
        raise NotImplementedError

    def saved_model(self, ctx: RunContext, task: TaskSpec):
        """(module, tokenizer) of the model this run folder holds, or None where it holds none yet."""
        raise NotImplementedError

    def model_file(self, run) -> tuple[Path, str]:
        """(the file a run folder holds once its model is saved, what to call it in a message)."""
        raise NotImplementedError

    def write_model_files(self, ctx: RunContext, task: TaskSpec) -> None:
        """Files a new run's folder holds before training (rank 0): what ``saved_model`` needs besides."""

    def run_fields(self, ctx: RunContext) -> dict:
        """What the method records of its settings in the run record (besides model, data and scores)."""
        return {"pretrained": str(ctx.model.pretrained)}

    @classmethod
    def in_current_layout(cls, saved: dict) -> None:
        """Runs of earlier releases chose on any number of held-out documents: read with today's default."""
        if isinstance(saved.get("method"), dict):
            saved["method"].setdefault("min_choice_docs", DEFAULT_MIN_DOCS)

    # --- the skeleton -----------------------------------------------------------------------------------------
    def check_settings(self, ctx: RunContext, data: Task) -> None:
        from legalft.models.kinds import kind_of

        if kind_of(ctx.model) != self.model_kind:
            raise UserError(self.wrong_model(ctx))
        if ctx.windows is None:
            raise UserError(f"model={ctx.model_choice} has no windows config (conf/windows/{ctx.model_choice}.yaml): "
                            f"choose one, e.g. windows=bert for an encoder or windows=causal_lm, or add that file.")
        if ctx.cv_folds or (self.best_on_validation and not data.val):
            on_one_device(ctx.trainer_config)  # its models train one after another

    def run(self, ctx: RunContext) -> dict:
        """Fit (cross-validating first with ``protocol.cv_folds``), choose thresholds and fusion on held-out
        scores, score the test split when there is one, write the run."""
        import lightning as L

        source = ctx.source()
        data = one_task(ctx.tasks(source=source), self.name)  # every data error surfaces here, before anything is written
        self.check_settings(ctx, data)
        fusing = fusion.fusion_applies(self.fuse_classical, data, ctx.cv_folds)
        L.seed_everything(ctx.seed, workers=True)
        task, run = data.spec, ctx.folder
        ctx.write_config()
        overlap = {}
        if not secondary_rank():  # rank 0 owns the run folder; a DDP run's other ranks re-run this script
            run.write_task(task, codes=getattr(source, "label_of_code", None))
            run.write_training_data([(task, data.train + data.val)])  # scored examples among these are flagged
            run.write_evidence(EvidenceSelector.fit(data.train + data.val, task.labels))  # each section's sentences
            overlap = run.flag_overlap([(task, data.test or [])])  # e.g. a test file that repeats training documents
            self.write_model_files(ctx, task)
        metrics, fields, thresholds, fuse, choices = {}, {}, None, None, {}
        if ctx.cv_folds:
            metrics, fields, thresholds, fuse, choices = self.cross_validate(ctx, data, fusing)
            data = replace(data, train=data.train + data.val, val=[])  # the final model learns from every document
        trained = self.train(ctx, data)
        metrics.update(trained.metrics)
        choices.update(trained.choices)
        if trained.module is None:  # a DDP run's other ranks, or fast_dev_run: nothing to score
            return metrics
        datamodule = build_datamodule(ctx.build(ctx.datamodule, "datamodule"), trained.module, trained.tokenizer, task,
                                      [], data.val, data.test or [])
        if thresholds is None and task.multi_label and data.val:
            val_probs = predict(trained.module, datamodule, "val")
            if fusing:  # the classical side learns from what the model trained on; both standardised on validation
                val_probs, fields, fuse, choices["fusion"] = fusion.validation_fusion(run, data, val_probs, ctx.seed,
                                                                                     self.min_choice_docs)
            thresholds, choices["thresholds"] = choosing.thresholds_on_validation(self, ctx, task, val_probs,
                                                                                  data.val)
        elif task.multi_label:
            run.write_thresholds(task.labels, np.full(len(task.labels), 0.5) if thresholds is None else thresholds)
        said = choosing.what_predicted(ctx.model_choice, choices)
        if data.test is None:
            log.info("no test split: %s; %s", "the cross-validation in cv.json is the run's result" if ctx.cv_folds else
                     f"`python evaluate.py run={run.path} data.test_path=...` scores it later", said)
            return metrics
        scores = self.score(ctx, trained.module, datamodule, data.test, task, fuse, trained.loggers,
                            model=choosing.model_named(ctx.model_choice, fields), **self.run_fields(ctx),
                            **subset_field(ctx), **trained.resumed, **overlap, **fields,
                            **({"cv_folds": ctx.cv_folds} if ctx.cv_folds else {}),
                            predicted_with=said, **({"choices": records(choices)} if choices else {}))
        metrics.update({f"test/{k}": v for k, v in scores.items() if isinstance(v, float)})
        self.finish(ctx)
        return metrics

    def train(self, ctx: RunContext, data: Task) -> Trained:
        """The model the run predicts with: the one this run folder holds, or a new one trained on ``data.train``."""
        schedule = choosing.schedule_choice(self, ctx, data)
        if schedule and data.val and not ctx.cv_folds:
            return self.train_on_validation(ctx, data, schedule)
        trained = self.train_fixed_epochs(ctx, data)
        trained.choices.update({"epoch": schedule} if schedule else {})
        return trained

    def train_fixed_epochs(self, ctx: RunContext, data: Task) -> Trained:
        """The last of ``trainer.max_epochs`` epochs on ``data.train`` (or the model this run folder holds)."""
        saved = self.saved_model(ctx, data.spec)
        if saved is not None:
            log.info("%s holds the trained classifier: it is scored again, nothing is retrained", ctx.folder.path)
            return Trained(*saved)
        if not data.val and not ctx.cv_folds:
            log.info("task %s has no validation split: training for trainer.max_epochs=%s epochs and keeping the last "
                     "model%s", data.spec.name, ctx.trainer_config.max_epochs,
                     ", thresholds at 0.5 (protocol.cv_folds=K tunes them out of fold)" if data.spec.multi_label else "")
        else:
            log.info("final model: training on all %d documents", len(data.train))
        module, tokenizer, _, fitted = self.fit_new_model(ctx, data.spec, data.train, data.val, [],
                                                          ctx.folder.last_checkpoint, final=True)
        trainer = fitted.trainer
        trained = Trained(module, tokenizer, fitted.metrics, fitted.resumed, trainer.loggers)
        self.save_model(ctx, trainer, trained, data.spec)
        if not trainer.is_global_zero:
            return Trained(None, None, trained.metrics)
        module.trainer = None  # the optimiser's state goes with the trainer, before the test split is scored
        del trainer, fitted  # both hold the trainer
        free_finished_models()
        return trained

    def fit_new_model(self, ctx: RunContext, task: TaskSpec, fitted: list[Example], val: list[Example],
                      scored: list[Example], last_checkpoint: Path, final: bool = False):
        """A fresh model trained on ``fitted`` for ``trainer.max_epochs`` (validated on ``val`` where there is
        one), resumable from ``last_checkpoint``: a fold's, or (``final``) the run's own, which logs to the
        run's loggers and, where the method says, keeps ``last_checkpoint`` at each epoch's end. Returns
        (module, tokenizer, the datamodule that also scores ``scored``, what the fit left)."""
        import lightning as L

        L.seed_everything(ctx.seed, workers=True)
        module, tokenizer = self.new_model(ctx, task, fitted)
        datamodule = build_datamodule(ctx.build(ctx.datamodule, "datamodule"), module, tokenizer, task, fitted, val,
                                      scored)
        trainer = fixed_epoch_trainer(ctx, last_checkpoint, with_loggers=final, validate=bool(val),
                                      every_epoch=final and self.every_epoch)
        return module, tokenizer, datamodule, self.fit(trainer, module, datamodule, last_checkpoint)

    def train_on_validation(self, ctx: RunContext, data: Task, schedule: Choice) -> Trained:
        """The ``trainer`` and ``callbacks`` groups' schedule: validation each epoch, the best epoch kept
        (``best.ckpt``) and early stopping where the schedule was chosen on validation, else the last epoch kept
        there (``choosing.last_epoch_callbacks``); a finished run's best checkpoint is scored, not trained again."""
        run = ctx.folder
        module, tokenizer = self.new_model(ctx, data.spec, data.train)
        datamodule = build_datamodule(ctx.build(ctx.datamodule, "datamodule"), module, tokenizer, data.spec,
                                      data.train, data.val, [])
        callbacks = ctx.callbacks()
        if schedule.option == "last":
            log.info("keeping the last of trainer.max_epochs=%s epochs: %s", ctx.trainer_config.max_epochs,
                     schedule.reason)
            callbacks = choosing.last_epoch_callbacks(callbacks)
        trainer, resumed = ctx.trainer(callbacks), {}
        if run.finished():
            log.info("%s holds a finished run: its best checkpoint is scored again, nothing is retrained", run.path)
        else:
            resumed = self.fit(trainer, module, datamodule, run.last_checkpoint).resumed
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
        if trainer.fast_dev_run:  # Lightning saves no checkpoint then: there is nothing to score
            log.info("fast_dev_run: one batch trained and one validated; nothing is saved or scored")
            return Trained(None, None, metrics)
        if schedule.option == "best" and trainer.checkpoint_callback and \
                trainer.checkpoint_callback.best_model_score is not None:
            metrics["val/best_macro_f1"] = float(trainer.checkpoint_callback.best_model_score)
            schedule = replace(schedule, scores={"best": round(metrics["val/best_macro_f1"], 4)})
        if not trainer.is_global_zero:
            return Trained(None, None, metrics)
        if run.best_checkpoint.is_dir():
            from legalft.training.checkpoints import consolidate

            consolidate(run.best_checkpoint)
        run.require(run.best_checkpoint, "best checkpoint")
        best, tokenizer = self.saved_model(ctx, data.spec)
        return Trained(best, tokenizer, metrics, resumed, trainer.loggers, {"epoch": schedule})

    def cross_validate(self, ctx: RunContext, data: Task, fusing: bool):
        """``protocol.cv_folds=K``: a model per fold (``legalft.methods.folds``) for ``trainer.max_epochs``; ``cv.json``
        (fusing: the fusion and each side alone). Returns (``cv/`` metrics, the results' fields, the final model's
        thresholds, what turns its test scores into what the run predicts with, the choices made out of fold)."""
        from legalft.evaluation.cross_validation import cross_validated
        from legalft.evaluation.predictions import targets_of
        from legalft.methods.folds import out_of_fold, write_cv

        task, pool = data.spec, data.train + data.val
        folds = ctx.folds(pool)

        def fold_probabilities(fit, held, last_checkpoint):
            module, _, datamodule, _ = self.fit_new_model(ctx, task, [pool[i] for i in fit], [],
                                                          [pool[i] for i in held], last_checkpoint)
            return predict(module, datamodule, "test")

        scores = out_of_fold(ctx.folder.folds(), pool, folds, len(task.labels), fold_probabilities)
        fields, fuse, choices = {}, None, {}
        if fusing:
            thresholds, cv, fields, combine, choices = fusion.cross_validated_choice(
                ctx.folder, data, pool, folds, scores, ctx.seed, self.min_choice_docs)
            classical = fusion.classical_side(data, pool, ctx.seed)
            fuse = lambda examples, probs: combine(probs, classical(examples))  # noqa: E731
        else:
            if task.multi_label:
                choices["thresholds"] = choosing.thresholds_out_of_fold(scores, folds, targets_of(pool, task),
                                                                        self.min_choice_docs, ctx.seed)
            thresholds, cv = cross_validated(pool, scores, folds, task,
                                             "thresholds" not in choices or choices["thresholds"].option == "tuned")
        return write_cv(ctx.folder, {task.name: cv}), fields, thresholds, fuse, choices

    def score(self, ctx: RunContext, module, datamodule, test: list[Example], task: TaskSpec, fuse=None, loggers=None,
              **run_fields) -> dict:
        """Score ``test`` and publish the results; ``fuse`` turns the model's probabilities into what the run
        predicts with (``legalft.methods.fusion``)."""
        from legalft.evaluation.evidence import add_evidence
        from legalft.evaluation.predictions import score_predictions

        probs = predict(module, datamodule, "test")
        if fuse is not None:
            probs = fuse(test, probs)
        scores, records = score_predictions(test, probs, task, ctx.folder.read_thresholds(task.labels))
        evidence = evidence_namer(self.evidence_from, module, datamodule.tokenizer, task, ctx.folder)
        scores.update(add_evidence(records, test, evidence, ctx.explanations))
        return self.publish(ctx, {task.name: scores}, records, test, loggers, **run_fields)[task.name]

    def classify(self, ctx: RunContext, examples: list[Example], task: str | None = None) -> Classified:
        """The run's saved model (fused with the classical side where the run predicts so) on ``examples``."""
        return finished.classify(self, ctx, examples)

    def rescore(self, ctx: RunContext) -> dict:
        """Score the run's model on a test split (the run's own, or an override)."""
        return finished.rescore(self, ctx)
