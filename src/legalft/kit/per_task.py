"""What the methods that fit one classifier per task share (``method=classical``, ``method=setfit``):
the loop over a data config's tasks, k-fold cross-validation through the one fold loop
(``legalft.kit.folds``), the run folder's result files, and rescoring by fitting again on the run's
own training data (deterministic for a seed, and a run folder never holds code or a pickled model to
load). A subclass writes how one task's classifier is fitted (``fit``) and what it records."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from legalft.data.example import Example, Task
from legalft.foundation.errors import UserError
from legalft.kit.base import Classified, Method, chosen_task
from legalft.runs.context import RunContext

log = logging.getLogger(__name__)

THRESHOLD_FOLDS = 5  # folds of the out-of-fold scores thresholds are tuned on (PerTaskMethod.min_choice_docs)


class PerTaskMethod(Method):
    """Subclasses say how one task's classifier is fitted (``fit``), what the run records as its method
    and model, and what else of their settings (``run_fields``)."""

    # the fewest validation documents a multi-label task's thresholds are tuned on; with fewer, they are tuned on
    # out-of-fold scores of the training and validation documents (THRESHOLD_FOLDS folds), and the final model
    # trains on all of them. None: tuned on the validation split whatever its size (runs of earlier releases)
    min_choice_docs: int | None = None

    def model_label(self, model_choice: str | None) -> str:
        raise NotImplementedError

    def run_fields(self) -> dict:
        return {}

    def fit(self, task: Task, seed: int) -> Callable[[list[Example]], np.ndarray]:
        """A classifier fitted on ``task.train``, as a function from examples to scores in [0, 1] per
        label, columns in the task's label order."""
        raise NotImplementedError

    def fitted(self, task: Task, seed: int, tune: bool = True) -> tuple[Callable[[list[Example]], np.ndarray], np.ndarray]:
        """(the final classifier, per-label thresholds). A multi-label task's thresholds are tuned on held-out
        scores: of the validation split, where it holds ``min_choice_docs`` documents, else of the training and
        validation documents out of fold, the final model then fitted on all of them; 0.5 without either.
        ``tune=False``: a cross-validated run's final model, whose thresholds come from its folds."""
        from legalft.evaluation.metrics import tune_thresholds
        from legalft.evaluation.predictions import targets_of

        spec = task.spec
        thresholds = np.full(len(spec.labels), 0.5)
        trained_labels = {label for e in task.train for label in e.labels}
        if not spec.multi_label and len(trained_labels) < 2:  # nothing to discriminate: the one label seen
            only = spec.labels.index(next(iter(trained_labels)))
            return (lambda examples: np.eye(len(spec.labels))[[only] * len(examples)]), thresholds
        if spec.multi_label and tune and self.thresholds_out_of_fold(task):
            pool = task.train + task.val
            held_out = self.out_of_fold(task, pool, self.threshold_folds(pool, seed), seed, folder=None)
            log.info("thresholds tuned on out-of-fold scores of %d training documents (%d validation documents, "
                     "fewer than method.min_choice_docs=%d)", len(pool), len(task.val), self.min_choice_docs)
            return self.fit(replace(task, train=pool, val=[]), seed), tune_thresholds(held_out, targets_of(pool, spec))
        scores = self.fit(task, seed)
        if spec.multi_label and tune and task.val:
            thresholds = tune_thresholds(scores(task.val), targets_of(task.val, spec))
        return scores, thresholds

    def thresholds_out_of_fold(self, task: Task) -> bool:
        return (self.min_choice_docs is not None and len(task.val) < self.min_choice_docs
                and len(task.train) + len(task.val) >= 2 * THRESHOLD_FOLDS)

    @staticmethod
    def threshold_folds(pool: list[Example], seed: int):
        from legalft.evaluation.cross_validation import stratified_folds

        return stratified_folds(pool, THRESHOLD_FOLDS, seed)

    def fit_predict(self, task: Task, test: list[Example], seed: int, tune: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(scores per test example and label, per-label thresholds)."""
        scores, thresholds = self.fitted(task, seed, tune)
        return scores(test), thresholds

    def out_of_fold(self, task: Task, pool: list[Example], folds, seed: int, folder) -> np.ndarray:
        """Scores of every document of ``pool`` from a model fitted on the other folds, each fold's kept in
        ``folder`` as it ends (``legalft.kit.folds``), so a rerun skips the finished folds (``folder`` None:
        kept nowhere)."""
        from legalft.kit.folds import out_of_fold

        def fold(fit, held, last_checkpoint):
            return self.fit(replace(task, train=[pool[i] for i in fit], val=[]), seed)([pool[i] for i in held])

        if folder is None:
            scores = np.zeros((len(pool), len(task.spec.labels)))
            for fit, held in folds:
                scores[held] = fold(fit, held, None)
            return scores
        return out_of_fold(folder, pool, folds, len(task.spec.labels), fold)

    def cross_validate(self, task: Task, folds: int, seed: int, folder, stratify: bool = True
                       ) -> tuple[np.ndarray, dict]:
        """(thresholds for the final model, the task's ``cv.json`` record), over the task's train and
        validation documents (``legalft.evaluation.cross_validation.cross_validated``); each fold's scores
        kept in ``folder``."""
        from legalft.evaluation.cross_validation import cross_validated, stratified_folds

        pool = task.train + task.val
        splits = stratified_folds(pool, folds, seed, stratify)
        return cross_validated(pool, self.out_of_fold(task, pool, splits, seed, folder), splits, task.spec)

    def kept_tasks(self, ctx: RunContext, tasks: list[Task]) -> list[Task]:
        kept = [t for t in tasks if t.spec.kind != "open" and (t.test or ctx.cv_folds)]
        skipped = [t.spec.name for t in tasks if t not in kept]
        if skipped:
            log.warning("method=%s classifies over a fixed label space: left out %d task(s) without one or "
                        "without a test split: %s", self.name, len(skipped), ", ".join(skipped))
        if not kept:
            raise UserError(f"method={self.name}: no task with a fixed label space and a test split to score.")
        return kept

    def score(self, ctx: RunContext, tasks: list[Task], model_name: str) -> dict:
        from legalft.evaluation.evidence import EvidenceSelector, add_evidence
        from legalft.evaluation.predictions import score_predictions
        from legalft.kit.folds import write_cv

        kept = self.kept_tasks(ctx, tasks)
        # scored examples the run learnt from, counted the same way when it trains and when it is rescored
        overlap = ctx.folder.flag_overlap([(t.spec, t.test or []) for t in kept])
        scores, records, folds = {}, [], {}
        for task in kept:
            if ctx.cv_folds:
                thresholds, folds[task.spec.name] = self.cross_validate(
                    task, ctx.cv_folds, ctx.protocol.seed, ctx.folder.folds(task.spec.name), ctx.protocol.stratify)
                task = replace(task, train=task.train + task.val, val=[])  # the final model: every document
            if not task.test:
                continue
            probs, tuned = self.fit_predict(task, task.test, ctx.seed, tune=not ctx.cv_folds)
            scores[task.spec.name], task_records = score_predictions(
                task.test, probs, task.spec, thresholds if ctx.cv_folds else tuned)
            # each predicted section's sentences, from a scorer of the experts' spans refitted like the classifier
            selector = EvidenceSelector.fit(task.train + task.val, task.spec.labels)
            scores[task.spec.name].update(add_evidence(task_records, task.test, selector, ctx.explanations))
            records += task_records
        metrics = write_cv(ctx.folder, folds) if folds else {}
        if not scores:
            log.info("no test split: the cross-validation in cv.json is the run's result")
            return metrics
        self.publish(ctx, scores, records, [e for t in kept for e in t.test or []], model=model_name,
                     **self.run_fields(), **({"cv_folds": ctx.cv_folds} if ctx.cv_folds else {}),
                     **{"comparable": ctx.whole_test_split, **overlap})
        return {**metrics, **{f"test/{task}/{k}": v for task, s in scores.items() for k, v in s.items()
                              if isinstance(v, float)}}

    def run(self, ctx: RunContext) -> dict:
        tasks = ctx.tasks()
        ctx.write_config()
        ctx.folder.write_training_data([(t.spec, t.train + t.val) for t in tasks])
        return self.score(ctx, tasks, self.model_label(ctx.model_choice))

    def finished(self, ctx: RunContext, task: str | None):
        """The run's final classifier of one task, fitted again on the run's training data (its config's), as
        rescoring does: (the task, the classifier, its thresholds (a cross-validated run's from its folds' scores,
        kept in the run folder), the evidence scorer)."""
        from legalft.evaluation.evidence import EvidenceSelector

        chosen = chosen_task(self.kept_tasks(ctx, ctx.tasks()), task, ctx.folder.path)
        thresholds = None
        if ctx.cv_folds:
            thresholds, _ = self.cross_validate(chosen, ctx.cv_folds, ctx.protocol.seed,
                                                ctx.folder.folds(chosen.spec.name), ctx.protocol.stratify)
            chosen = replace(chosen, train=chosen.train + chosen.val, val=[])
        scorer, tuned = self.fitted(chosen, ctx.seed, tune=thresholds is None)
        evidence = EvidenceSelector.fit(chosen.train + chosen.val, chosen.spec.labels)
        return chosen, scorer, tuned if thresholds is None else thresholds, evidence

    def exportable(self, ctx: RunContext, task: str | None):
        """``finished``'s (task, fitted model, thresholds, evidence scorer), for an export that reads one text: a task
        whose training data has one label fitted no model, and one whose prompt reads several columns is refused."""
        from legalft.llm.prompts import input_columns

        chosen, scorer, thresholds, evidence = self.finished(ctx, task)
        model = getattr(scorer, "model", None)
        if model is None:
            raise UserError(f"run={ctx.folder.path}: task {chosen.spec.name}'s training data has one label, so the run "
                            "fitted no classifier to export.")
        if input_columns(chosen) != ["text"]:
            raise UserError(f"task {chosen.spec.name} reads the columns {', '.join(input_columns(chosen))}; an exported "
                            "classifier reads one text. Classify with the run itself: predict.py run=<the run folder>.")
        return chosen, model, thresholds, evidence

    def classify(self, ctx: RunContext, examples: list[Example], task: str | None = None) -> Classified:
        chosen, scorer, thresholds, evidence = self.finished(ctx, task)
        return Classified(chosen.spec, scorer(examples), thresholds, evidence)

    def rescore(self, ctx: RunContext) -> dict:
        """Fit again on the run's training data (its config's), score the test split (or an override)."""
        from legalft.evaluation import run_results

        tasks = ctx.tasks()
        return self.score(ctx, tasks, run_results.recorded_model(ctx.folder.path, self.model_label(None)))
