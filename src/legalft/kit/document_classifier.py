"""What every trained document classifier shares (``method=encoder``, ``method=lora_classifier``, and any new
one): a Lightning module that scores a document's windows and pools them into per-label scores, trained on
one task; thresholds tuned on held-out scores; optionally fused with the classical side
(``legalft.kit.fusion``); cross-validated through the one fold loop (``legalft.kit.folds``); scored
into prediction records and the run record. A subclass supplies only what is its own: how its model is
built, saved and loaded (``new_model``, ``save_model``, ``saved_model``), and what its runs record.

The choices a run makes by itself (``legalft.evaluation.choices``): which epoch's model it keeps (a method whose
``best_on_validation`` is set, the encoder, keeps its best validation epoch where the validation split has
``min_choice_docs`` documents; otherwise the last of ``trainer.max_epochs``), whether its thresholds are tuned or
fixed, the fusion; and the line that says what predicted. A finished run's saved model rescores labelled documents
(``evaluate.py run=DIR``) and classifies unlabelled ones (``predict.py``) with the same windows, fusion and
thresholds; the run folder is read, and only rescoring writes (its results)."""

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
from legalft.foundation.ranks import secondary_rank
from legalft.kit import fusion
from legalft.kit.base import Classified, no_test_split
from legalft.kit.document_steps import (build_datamodule, evidence_namer, fixed_epoch_trainer, one_task, predict,
                                        subset_field)
from legalft.kit.folds import free_finished_models, on_one_device
from legalft.kit.refit import RefitPlan
from legalft.kit.trained import TrainedMethod
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
    epochs: int = 0  # what it trained for: the kept epoch's count (0: a model this folder held)
    world_size: int = 1  # the devices it trained on


@dataclass
class Chosen:
    """What a run chose on held-out documents and predicts with: thresholds, what turns the model's scores into the
    run's (the fusion), the results' fusion fields, every choice, and what the choosing logged."""

    thresholds: np.ndarray | None = None
    fuse: object = None
    fields: dict = field(default_factory=dict)
    choices: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)


class DocumentClassifierMethod(TrainedMethod):
    reads_windows = True
    model_kind: ClassVar[str] = ""  # legalft.models.kinds: the kind of model config it takes
    best_on_validation: ClassVar[bool] = False  # keep the best validation epoch where there is a validation split
    every_epoch: ClassVar[bool] = False  # the final model's last.ckpt saved at each epoch's end, not only on a signal
    fuse_classical = False  # auto, true or false (legalft.kit.fusion.fusion_applies)
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

    # --- the skeleton -----------------------------------------------------------------------------------------
    def check_settings(self, ctx: RunContext, data: Task) -> None:
        from legalft.models.kinds import kind_of

        if kind_of(ctx.model) != self.model_kind:
            raise UserError(self.wrong_model(ctx))
        if ctx.windows is None:
            raise UserError(f"model={ctx.model_choice} composes no windows config: name one in its defaults (as "
                            "conf/model/_encoder.yaml does: `- /windows@_global_.windows: bert`), or choose one for "
                            "the run, e.g. windows=bert for an encoder or windows=causal_lm.")
        if ctx.cv_folds or (self.best_on_validation and not data.val):
            on_one_device(ctx.trainer_config)  # its models train one after another

    def run(self, ctx: RunContext) -> dict:
        """Fit (cross-validating first with ``protocol.cv_folds``), choose the epoch, thresholds and fusion on held-out
        scores, train the final model again on every document where it chose on a share of them
        (``legalft.kit.refit``), score the test split when there is one, write the run."""
        import lightning as L

        source = ctx.source()
        data = one_task(ctx.tasks(source=source), self.name)  # every data error surfaces here, before anything is written
        self.check_settings(ctx, data)
        fusing = fusion.fusion_applies(self.fuse_classical, data, ctx.cv_folds)
        L.seed_everything(ctx.seed, workers=True)
        overlap, plan = self.start(ctx, data, source), None
        if ctx.cv_folds:
            chosen = self.cross_validate(ctx, data, fusing)
            data = replace(data, train=data.train + data.val, val=[])  # the final model learns from every document
            trained = self.train(ctx, data)
        else:
            refits = ctx.protocol.refits(data)
            plan = RefitPlan.read(ctx.folder.refit_plan) if refits else None  # a rerun after the choices were made
            loggers = None  # the run's (a rerun's own where the choices were made before)
            if plan is None:
                trained = self.train(ctx, data)
                chosen = self.choose_on_validation(ctx, data, trained, fusing)
                loggers = trained.loggers
                if refits and trained.epochs:
                    plan = self.plan_refit(ctx, data, trained, chosen)
            if plan is not None:
                trained, chosen = self.refit(ctx, data, plan)
                trained.loggers = loggers
                data = replace(data, train=data.train + data.val, val=[])
        chosen.metrics.update(trained.metrics)
        chosen.choices = {**chosen.choices, **trained.choices}
        if trained.module is None:  # a DDP run's other ranks, or fast_dev_run: nothing to score
            return chosen.metrics
        fields = dict(model=self.model_named(ctx.model_choice, chosen.fields), **self.run_fields(ctx),
                      **subset_field(ctx), **trained.resumed, **overlap, **chosen.fields,
                      **({"cv_folds": ctx.cv_folds} if ctx.cv_folds else {}), **({"refit": plan.record()} if plan else {}),
                      predicted_with=self.what_predicted(ctx.model_choice, chosen.choices) +
                      (f"; {plan.describe()}" if plan else ""),
                      **({"choices": records(chosen.choices)} if chosen.choices else {}))
        if data.test is None:
            log.info(no_test_split(ctx))
            self.publish(ctx, {}, [], [], trained.loggers, **fields)
        else:
            datamodule = build_datamodule(ctx.build(ctx.datamodule, "datamodule"), trained.module, trained.tokenizer,
                                          data.spec, [], [], data.test)
            scores = self.score(ctx, trained.module, datamodule, data.test, data.spec, chosen.fuse, trained.loggers,
                                **fields)
            chosen.metrics.update({f"test/{k}": v for k, v in scores.items() if isinstance(v, float)})
        self.finish(ctx)
        return chosen.metrics

    def start(self, ctx: RunContext, data: Task, source) -> dict:
        """The run folder's records before anything trains (rank 0 owns the folder; a DDP run's other ranks re-run
        this script): config, task, what it learns from, the evidence scorer, the model's files. Returns the results'
        overlap fields (e.g. a test file that repeats training documents)."""
        ctx.write_config()
        if secondary_rank():
            return {}
        run, task = ctx.folder, data.spec
        run.write_task(task, codes=getattr(source, "label_of_code", None))
        run.write_training_data([(task, data.train + data.val)])  # scored examples among these are flagged
        run.write_evidence(EvidenceSelector.fit(data.train + data.val, task.labels))  # each section's sentences
        overlap = run.flag_overlap([(task, data.test or [])])
        self.write_model_files(ctx, task)
        return overlap

    def choose_on_validation(self, ctx: RunContext, data: Task, trained: Trained, fusing: bool) -> Chosen:
        """The fusion and a multi-label task's thresholds, chosen on the trained model's validation scores (thresholds
        at 0.5 without a validation split)."""
        task, chosen = data.spec, Chosen()
        if trained.module is None or not task.multi_label:
            return chosen
        if not data.val:
            chosen.thresholds = np.full(len(task.labels), 0.5)
            ctx.folder.write_thresholds(task.labels, chosen.thresholds)
            return chosen
        datamodule = build_datamodule(ctx.build(ctx.datamodule, "datamodule"), trained.module, trained.tokenizer, task,
                                      [], data.val, [])
        val_probs = predict(trained.module, datamodule, "val")
        if fusing:  # the classical side learns from what the model trained on; both standardised on validation
            val_probs, chosen.fields, chosen.fuse, chosen.choices["fusion"] = fusion.validation_fusion(
                ctx.folder, data, val_probs, ctx.seed, self.min_choice_docs)
        chosen.thresholds, chosen.choices["thresholds"] = self.thresholds_on_validation(ctx, task, val_probs, data.val)
        return chosen

    def plan_refit(self, ctx: RunContext, data: Task, trained: Trained, chosen: Chosen) -> RefitPlan:
        """What the final model trains with once the choices are made (``refit.json``, rank 0): the chosen epoch count,
        on the training and validation documents; where the classical side alone predicts, only it is refit (one
        device: on several, every rank trains the refit and none of them knows the fusion's choice)."""
        choices = {**chosen.choices, **trained.choices}
        classical_alone = "fusion" in choices and fusion.classical_alone(choices["fusion"].option) and \
            trained.world_size == 1
        plan = RefitPlan(epochs=trained.epochs, chosen_on=len(data.val), documents=len(data.train) + len(data.val),
                         choices=records(choices), fields=chosen.fields, encoder_refit=not classical_alone)
        if not secondary_rank():
            plan.write(ctx.folder.refit_plan)
        return plan

    def refit(self, ctx: RunContext, data: Task, plan: RefitPlan) -> tuple[Trained, Chosen]:
        """The final model trained on every training and validation document for the chosen number of epochs (resuming
        from ``checkpoints/refit/last.ckpt``), saved as the run's best checkpoint; the fusion's classical side fitted
        on the same documents. The choices and thresholds stand as they were made on validation."""
        import time

        run, task = ctx.folder, data.spec
        whole = replace(data, train=data.train + data.val, val=[])
        started = time.monotonic()
        if plan.done or not plan.encoder_refit:
            trained = Trained(*self.saved_model(ctx, task))
        else:
            log.info("refit: training on all %d training and validation documents for %d epochs, as chosen on %d "
                     "validation documents", plan.documents, plan.epochs, plan.chosen_on)
            trained = self.train_final(ctx, whole, run.refit_checkpoint, max_epochs=plan.epochs, logged=False)
        chosen = Chosen(fields=plan.fields, choices=plan.chosen())
        if trained.module is None:
            return trained, chosen
        if task.multi_label:
            chosen.thresholds = run.read_thresholds(task.labels)
        if plan.fields:
            chosen.fuse = fusion.refit_classical_side(run, whole, ctx.seed)
        if not plan.done:
            plan.done, plan.seconds = True, round(time.monotonic() - started, 1)
            plan.write(run.refit_plan)
        return trained, chosen

    def train(self, ctx: RunContext, data: Task) -> Trained:
        """The model the run predicts with: the one this run folder holds, or a new one trained on ``data.train``."""
        schedule = self.schedule_choice(ctx, data)
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
        return self.train_final(ctx, data, ctx.folder.last_checkpoint)

    def train_final(self, ctx: RunContext, data: Task, last_checkpoint: Path, max_epochs: int | None = None,
                    logged: bool = True) -> Trained:
        """A new model trained on ``data.train`` (validated on ``data.val`` where there is one) for ``max_epochs``
        (default ``trainer.max_epochs``), resumable from ``last_checkpoint``, saved as the run's model; ``logged``: its
        training goes to the run's loggers (a refit's does not: they hold the run's curves on validation)."""
        module, tokenizer, _, fitted = self.fit_new_model(ctx, data.spec, data.train, data.val, [], last_checkpoint,
                                                          final=True, max_epochs=max_epochs, logged=logged)
        trainer = fitted.trainer
        trained = Trained(module, tokenizer, fitted.metrics, fitted.resumed, trainer.loggers,
                          epochs=max_epochs or ctx.trainer_config.max_epochs, world_size=trainer.world_size)
        self.save_model(ctx, trainer, trained, data.spec)
        if not trainer.is_global_zero:
            return Trained(None, None, trained.metrics, epochs=trained.epochs, world_size=trainer.world_size)
        module.trainer = None  # the optimiser's state goes with the trainer, before the test split is scored
        del trainer, fitted  # both hold the trainer
        free_finished_models()
        return trained

    def fit_new_model(self, ctx: RunContext, task: TaskSpec, fitted: list[Example], val: list[Example],
                      scored: list[Example], last_checkpoint: Path, final: bool = False, max_epochs: int | None = None,
                      logged: bool = True):
        """A fresh model trained on ``fitted`` for ``max_epochs`` (default ``trainer.max_epochs``; validated on
        ``val`` where there is one), resumable from ``last_checkpoint``: a fold's, or (``final``) the run's own, which
        logs to the run's loggers and, where the method says, keeps ``last_checkpoint`` at each epoch's end. Returns
        (module, tokenizer, the datamodule that also scores ``scored``, what the fit left)."""
        import lightning as L

        L.seed_everything(ctx.seed, workers=True)
        module, tokenizer = self.new_model(ctx, task, fitted)
        datamodule = build_datamodule(ctx.build(ctx.datamodule, "datamodule"), module, tokenizer, task, fitted, val,
                                      scored)
        # a refit (max_epochs given) keeps its last epoch too: a rerun or requeued job resumes it
        trainer = fixed_epoch_trainer(ctx, last_checkpoint, with_loggers=final and logged, validate=bool(val),
                                      every_epoch=final and (self.every_epoch or max_epochs is not None),
                                      **({"max_epochs": max_epochs} if max_epochs else {}))
        return module, tokenizer, datamodule, self.fit(trainer, module, datamodule, last_checkpoint)

    def train_on_validation(self, ctx: RunContext, data: Task, schedule: Choice) -> Trained:
        """The ``trainer`` and ``callbacks`` groups' schedule: validation each epoch, the best epoch kept
        (``best.ckpt``) and early stopping where the schedule was chosen on validation, else the last epoch kept
        there (``last_epoch_callbacks``); a finished run's best checkpoint is scored, not trained again."""
        run = ctx.folder
        module, tokenizer = self.new_model(ctx, data.spec, data.train)
        datamodule = build_datamodule(ctx.build(ctx.datamodule, "datamodule"), module, tokenizer, data.spec,
                                      data.train, data.val, [])
        from legalft.training.best_epoch import BestEpoch

        best_epoch, callbacks = BestEpoch(), ctx.callbacks()
        if schedule.option == "last":
            log.info("keeping the last of trainer.max_epochs=%s epochs: %s", ctx.trainer_config.max_epochs,
                     schedule.reason)
            callbacks = self.last_epoch_callbacks(callbacks)
        trainer, resumed = ctx.trainer([*callbacks, best_epoch]), {}
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
        # the epochs a refit trains for: up to the best epoch, or every epoch where the last was kept
        epochs = best_epoch.epochs if schedule.option == "best" else trainer.current_epoch
        if not trainer.is_global_zero:
            return Trained(None, None, metrics, epochs=epochs, world_size=trainer.world_size)
        if run.best_checkpoint.is_dir():
            from legalft.training.checkpoints import consolidate

            consolidate(run.best_checkpoint)
        run.require(run.best_checkpoint, "best checkpoint")
        best, tokenizer = self.saved_model(ctx, data.spec)
        return Trained(best, tokenizer, metrics, resumed, trainer.loggers, {"epoch": schedule}, epochs,
                       trainer.world_size)

    def cross_validate(self, ctx: RunContext, data: Task, fusing: bool) -> Chosen:
        """``protocol.cv_folds=K``: a model per fold (``legalft.kit.folds``) for ``trainer.max_epochs``; ``cv.json``
        (fusing: the fusion and each side alone). Returns what was chosen out of fold: the final model's thresholds
        (saved), what turns its test scores into what the run predicts with, the results' fields, the choices, the
        ``cv/`` metrics."""
        from legalft.evaluation.cross_validation import cross_validated
        from legalft.evaluation.predictions import targets_of
        from legalft.kit.folds import out_of_fold, write_cv

        task, pool = data.spec, data.train + data.val
        folds = ctx.folds(pool)

        def fold_probabilities(fit, held, last_checkpoint):
            module, _, datamodule, _ = self.fit_new_model(ctx, task, [pool[i] for i in fit], [],
                                                          [pool[i] for i in held], last_checkpoint)
            return predict(module, datamodule, "test")

        scores = out_of_fold(ctx.folder.folds(), pool, folds, len(task.labels), fold_probabilities)
        chosen = Chosen()
        if fusing:
            chosen.thresholds, cv, chosen.fields, combine, chosen.choices = fusion.cross_validated_choice(
                ctx.folder, data, pool, folds, scores, ctx.seed, self.min_choice_docs)
            classical = fusion.classical_side(data, pool, ctx.seed)
            chosen.fuse = lambda examples, probs: combine(probs, classical(examples))
        else:
            if task.multi_label:
                chosen.choices["thresholds"] = self.thresholds_out_of_fold(scores, folds, targets_of(pool, task),
                                                                           ctx.seed)
            chosen.thresholds, cv = cross_validated(pool, scores, folds, task, "thresholds" not in chosen.choices
                                                    or chosen.choices["thresholds"].option == "tuned")
        if task.multi_label:
            ctx.folder.write_thresholds(task.labels, chosen.thresholds)
        chosen.metrics = write_cv(ctx.folder, {task.name: cv})
        return chosen

    def score(self, ctx: RunContext, module, datamodule, test: list[Example], task: TaskSpec, fuse=None, loggers=None,
              **run_fields) -> dict:
        """Score ``test`` and publish the results; ``fuse`` turns the model's probabilities into what the run
        predicts with (``legalft.kit.fusion``)."""
        from legalft.evaluation.evidence import add_evidence
        from legalft.evaluation.predictions import score_predictions

        probs = predict(module, datamodule, "test")
        if fuse is not None:
            probs = fuse(test, probs)
        scores, records = score_predictions(test, probs, task, ctx.folder.read_thresholds(task.labels))
        evidence = evidence_namer(self.evidence_from, module, datamodule.tokenizer, task, ctx.folder)
        scores.update(add_evidence(records, test, evidence, ctx.explanations))
        return self.publish(ctx, {task.name: scores}, records, test, loggers, **run_fields)[task.name]

    # --- the choices a run makes by itself --------------------------------------------------------------------
    def schedule_choice(self, ctx: RunContext, data: Task) -> Choice | None:
        """Whether the model kept is the best validation epoch (a method that asks for it, on a validation split
        of at least ``min_choice_docs`` documents) or, the prior, the last of ``trainer.max_epochs``; None for a
        method that always trains a fixed schedule."""
        from legalft.evaluation.choices import prior_only

        if not self.best_on_validation:
            return None
        n = len(data.val)
        if ctx.cv_folds:
            return prior_only("last", n, "cross-validated: every fold and the final model train trainer.max_epochs")
        if n < self.min_choice_docs:
            return prior_only("last", n, f"{n} validation documents, fewer than method.min_choice_docs="
                                         f"{self.min_choice_docs}" if n else "no validation split: "
                                         "trainer.max_epochs")
        return Choice("best", "validation", n, "last", {})

    @staticmethod
    def last_epoch_callbacks(callbacks: list) -> list:
        """The ``callbacks`` group with its best-epoch checkpoint keeping the latest epoch instead (``best.ckpt``,
        the model the run predicts with, written as before) and without early stopping: nothing watches validation."""
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

    def thresholds_on_validation(self, ctx: RunContext, task: TaskSpec, val_probs: np.ndarray,
                                 val: list[Example]) -> tuple[np.ndarray, Choice]:
        """Thresholds tuned on the validation scores or every label at 0.5, chosen on inner folds of the validation
        documents where there are ``min_choice_docs`` of them (else the prior, tuned); saved in the run folder."""
        from legalft.evaluation.choices import on_validation, thresholds_choice
        from legalft.evaluation.predictions import targets_of

        targets = targets_of(val, task)
        choice = thresholds_choice(lambda tuned: on_validation(val_probs, targets, ctx.seed, tuned), targets,
                                   "validation", self.min_choice_docs, ctx.seed)
        if choice.option == "tuned":
            return self.tune_thresholds(ctx, task, val_probs, val), choice
        fixed = np.full(len(task.labels), 0.5)
        ctx.folder.write_thresholds(task.labels, fixed)
        return fixed, choice

    def thresholds_out_of_fold(self, scores: np.ndarray, folds, targets: np.ndarray, seed: int) -> Choice:
        """Tuned or fixed thresholds, chosen on a cross-validated run's out-of-fold decisions."""
        from legalft.evaluation.choices import thresholds_choice
        from legalft.evaluation.cross_validation import held_out_decisions

        return thresholds_choice(lambda tuned: held_out_decisions(scores, folds, targets, tuned), targets,
                                 "out_of_fold", self.min_choice_docs, seed)

    @staticmethod
    def what_predicted(model: str, choices: dict[str, Choice]) -> str:
        """The run's summary line: the model that made the predictions, and every choice with its evidence."""
        from legalft.evaluation.choices import described

        who = fusion.predicted_by(model, choices["fusion"].option) if "fusion" in choices else model
        return f"{who}; {described(choices)}" if choices else who

    @staticmethod
    def model_named(model: str, fusion_fields: dict) -> str:
        """What the results name as the run's model: the option that made its predictions."""
        return fusion.model_label(model, fusion_fields["fusion_choice"]["use"]) if fusion_fields else model

    # --- a finished run -----------------------------------------------------------------------------------------
    def saved_classifier(self, ctx: RunContext, task_name: str | None = None) -> tuple[TaskSpec, object, object]:
        """(task, module, tokenizer) of the run's model; a run without its model, or ``task_name`` not its task, is
        named before the model or any data is read."""
        run = ctx.folder
        run.require(*self.model_file(run))
        task = run.read_task()
        if task_name is not None and task_name != task.name:
            raise UserError(f"task={task_name}: run {run.path} classifies {task.name} alone; leave task= out.")
        return (task, *self.saved_model(ctx, task))

    @staticmethod
    def on_documents(ctx: RunContext, task: TaskSpec, module, tokenizer, examples: list[Example]):
        """(the datamodule that scores ``examples``, what turns the model's scores into the run's, the results' fusion
        fields)."""
        datamodule = build_datamodule(ctx.build(ctx.datamodule, "datamodule"), module, tokenizer, task, [], [],
                                      examples)
        if not ctx.folder.fusion.exists():
            return datamodule, None, {}
        return (datamodule, *fusion.rescoring_fusion(ctx, task.labels, examples))

    def classify(self, ctx: RunContext, examples: list[Example], task: str | None = None) -> Classified:
        """The run's saved model (fused with the classical side where the run predicts so) on ``examples``."""
        spec, module, tokenizer = self.saved_classifier(ctx, task)
        datamodule, fuse, _ = self.on_documents(ctx, spec, module, tokenizer, examples)
        scores = predict(module, datamodule, "test")
        if fuse is not None:
            scores = fuse(examples, scores)
        run = ctx.folder
        evidence = evidence_namer(self.evidence_from, module, tokenizer, spec, run)
        return Classified(spec, scores, run.read_thresholds(spec.labels), evidence)

    def rescore(self, ctx: RunContext) -> dict:
        """Score the run's model on a test split (the run's own, or an override)."""
        from legalft.evaluation import run_results

        run = ctx.folder
        task, module, tokenizer = self.saved_classifier(ctx)
        (scored,) = ctx.test_tasks()
        test = scored.test
        overlap = run.flag_overlap([(scored.spec, test)])
        datamodule, fuse, fields = self.on_documents(ctx, task, module, tokenizer, test)
        model = run_results.recorded_model(run.path, str(ctx.model.pretrained))
        if fields:  # what predicted, from the model's name as the run recorded it (or its config gives it)
            model = self.model_named(model.removesuffix("+tfidf_logreg"), fields)
        return self.score(ctx, module, datamodule, test, task, fuse, model=model, **self.run_fields(ctx), **overlap,
                          **subset_field(ctx), **fields, **({"cv_folds": ctx.cv_folds} if ctx.cv_folds else {}))
