"""What the methods that fit one classifier per task share (``method=classical``, ``method=setfit``):
the loop over a data config's tasks, k-fold cross-validation through the one fold loop
(``legalft.kit.folds``), the run folder's result files, and rescoring by fitting again on the run's
own training data (deterministic for a seed, and a run folder never holds code or a pickled model to
load). A subclass writes how one task's classifier is fitted (``fit``) and what it records."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from legalft.data.example import Example, Task
from legalft.evaluation.choices import Choice
from legalft.foundation.errors import UserError
from legalft.kit.base import Classified, Method, chosen_task, no_test_split
from legalft.runs.context import RunContext

log = logging.getLogger(__name__)

THRESHOLD_FOLDS = 5  # folds of the out-of-fold scores thresholds are tuned on (PerTaskMethod.min_choice_docs)


@dataclass
class FinalModel:
    """What a per-task method predicts with: its classifier, the per-label thresholds, the choices it made on held-out
    documents (``legalft.evaluation.choices``) and how many documents it was fitted on once it had chosen."""

    scorer: Callable[[list[Example]], np.ndarray]
    thresholds: np.ndarray
    choices: dict[str, Choice] = field(default_factory=dict)
    fitted_on: int = 0  # documents the final model learnt from
    refit: bool = False  # the final model learnt from the documents it chose on as well
    chosen_on: int = 0  # the held-out documents its choices were made on (out of fold: every one)


class PerTaskMethod(Method):
    """Subclasses say how one task's classifier is fitted (``fit``), what the run records as its method
    and model, and what else of their settings (``run_fields``). A subclass with several ``options`` (classical's
    C) has the run choose among them on held-out documents, as it tunes thresholds."""

    # the fewest held-out documents a choice is made on: a multi-label task's thresholds are tuned on the validation
    # split where it holds this many, else on out-of-fold scores of the training and validation documents
    # (THRESHOLD_FOLDS folds), and the final model trains on all of them; ``options`` are chosen on the same
    # documents, and only where there are this many. None: tuned on the validation split whatever its size (runs of
    # earlier releases)
    min_choice_docs: int | None = None
    choice_name: ClassVar[str] = ""  # what ``options`` set (classical: "C")

    def model_label(self, model_choice: str | None) -> str:
        raise NotImplementedError

    def run_fields(self) -> dict:
        return {}

    def options(self) -> dict[str, object]:
        """The settings a run chooses among, by name; the first is the prior (one option: nothing to choose)."""
        return {"": None}

    def fit(self, task: Task, seed: int, option=None) -> Callable[[list[Example]], np.ndarray]:
        """A classifier fitted on ``task.train`` with ``option`` (one of ``options``; None: the prior), as a
        function from examples to scores in [0, 1] per label, columns in the task's label order."""
        raise NotImplementedError

    def fit_with(self, task: Task, seed: int, option) -> Callable[[list[Example]], np.ndarray]:
        """``fit`` with ``option``; a method with one option is called as plugins of earlier releases define ``fit``."""
        return self.fit(task, seed) if option is None else self.fit(task, seed, option)

    def fitted(self, task: Task, seed: int, refit: bool = False) -> FinalModel:
        """The final classifier and its thresholds. Its option and a multi-label task's thresholds are chosen on
        held-out scores: of the validation split, where it holds ``min_choice_docs`` documents (``refit``: the final
        model then learns from them too), else of the training and validation documents out of fold, the final
        model then fitted on all of them; thresholds 0.5 without either. (A cross-validated run's final model is
        ``cross_validated``'s.)"""
        spec = task.spec
        thresholds = np.full(len(spec.labels), 0.5)
        trained_labels = {label for e in task.train for label in e.labels}
        if not spec.multi_label and len(trained_labels) < 2:  # nothing to discriminate: the one label seen
            only = spec.labels.index(next(iter(trained_labels)))
            return FinalModel(lambda examples: np.eye(len(spec.labels))[[only] * len(examples)], thresholds,
                              fitted_on=len(task.train))
        if self.chooses_out_of_fold(task):
            return self.chosen_out_of_fold(task, seed)
        options, choices = self.options(), {}
        prior = next(iter(options))
        if task.val and len(options) > 1 and len(task.val) >= (self.min_choice_docs or 0):
            from legalft.evaluation.choices import on_validation

            scorers = {name: self.fit_with(task, seed, option) for name, option in options.items()}
            val_scores = {name: scorer(task.val) for name, scorer in scorers.items()}
            choice = self.option_choice(val_scores, task.val, spec, "validation", seed,
                                        lambda scores, targets: on_validation(scores, targets, seed))
            choices[self.choice_name] = choice
            scorer = scorers[choice.option]
        else:
            choice, scorer = None, self.fit_with(task, seed, options[prior])
        if spec.multi_label and task.val:
            from legalft.evaluation.metrics import tune_thresholds
            from legalft.evaluation.predictions import targets_of

            thresholds = tune_thresholds(scorer(task.val), targets_of(task.val, spec))
        if refit and task.val:
            use = options[choice.option if choice else prior]
            log.info("refitting on all %d training and validation documents", len(task.train) + len(task.val))
            return FinalModel(self.fit_with(replace(task, train=task.train + task.val, val=[]), seed, use), thresholds,
                              choices, len(task.train) + len(task.val), refit=True, chosen_on=len(task.val))
        return FinalModel(scorer, thresholds, choices, len(task.train), chosen_on=len(task.val))

    def chooses_out_of_fold(self, task: Task) -> bool:
        """Thresholds (a multi-label task's) or options chosen on out-of-fold scores: the validation split holds fewer
        than ``min_choice_docs`` documents, and the training and validation documents are enough to fold."""
        if self.min_choice_docs is None or len(task.val) >= self.min_choice_docs:
            return False
        pool = len(task.train) + len(task.val)
        return pool >= 2 * THRESHOLD_FOLDS and (task.spec.multi_label or
                                                (len(self.options()) > 1 and pool >= self.min_choice_docs))

    def chosen_out_of_fold(self, task: Task, seed: int) -> FinalModel:
        """Option and thresholds chosen on out-of-fold scores of the training and validation documents (the options
        scored only where there are ``min_choice_docs`` of them), the final model fitted on all of them."""
        from legalft.evaluation.metrics import tune_thresholds
        from legalft.evaluation.predictions import targets_of

        spec, pool = task.spec, task.train + task.val
        held_out, choices, use = self.chosen_on_folds(task, self.threshold_folds(pool, seed), seed, folder=None)
        thresholds = np.full(len(spec.labels), 0.5)
        if spec.multi_label:
            thresholds = tune_thresholds(held_out[use], targets_of(pool, spec))
            log.info("thresholds tuned on out-of-fold scores of %d training documents (%d validation documents, "
                     "fewer than method.min_choice_docs=%d)", len(pool), len(task.val), self.min_choice_docs)
        return FinalModel(self.fit_with(replace(task, train=pool, val=[]), seed, self.options()[use]), thresholds,
                          choices, len(pool), refit=True, chosen_on=len(pool))

    def option_choice(self, scores: dict[str, np.ndarray], held_out: list[Example], spec, chosen_on: str, seed: int,
                      decide) -> Choice:
        """The option whose held-out ``scores`` decide best (``legalft.evaluation.choices.choose``; the first option
        is the prior); ``decide(scores, targets)`` gives a multi-label task's decisions, thresholds not tuned on the
        documents they decide; a single-label task decides by its best-scored label."""
        from legalft.evaluation.choices import choose, prior_only
        from legalft.evaluation.predictions import targets_of

        options = list(self.options())
        if len(scores) < len(options):
            return prior_only(options[0], len(held_out), f"{len(held_out)} held-out documents, fewer than "
                                                         f"method.min_choice_docs={self.min_choice_docs}")
        targets = targets_of(held_out, spec)
        if spec.multi_label:
            decisions = {name: decide(s, targets) for name, s in scores.items()}
        else:
            one_hot = np.eye(len(spec.labels))
            decisions, targets = {name: one_hot[s.argmax(1)] for name, s in scores.items()}, one_hot[targets]
        return choose(decisions, targets, options[0], chosen_on, self.min_choice_docs or 0, seed)

    @staticmethod
    def threshold_folds(pool: list[Example], seed: int):
        from legalft.evaluation.cross_validation import stratified_folds

        return stratified_folds(pool, THRESHOLD_FOLDS, seed)

    def out_of_fold(self, task: Task, pool: list[Example], folds, seed: int, folder, option=None) -> np.ndarray:
        """Scores of every document of ``pool`` from a model fitted with ``option`` on the other folds, each fold's
        kept in ``folder`` as it ends (``legalft.kit.folds``), so a rerun skips the finished folds (``folder`` None:
        kept nowhere)."""
        from legalft.kit.folds import out_of_fold

        def fold(fit, held, last_checkpoint):
            return self.fit_with(replace(task, train=[pool[i] for i in fit], val=[]), seed, option)([pool[i] for i in held])

        if folder is None:
            scores = np.zeros((len(pool), len(task.spec.labels)))
            for fit, held in folds:
                scores[held] = fold(fit, held, None)
            return scores
        return out_of_fold(folder, pool, folds, len(task.spec.labels), fold)

    def cross_validate(self, task: Task, folds: int, seed: int, folder, stratify: bool = True
                       ) -> tuple[np.ndarray, dict, dict[str, Choice]]:
        """``folds``-fold cross-validation over the task's train and validation documents
        (``legalft.evaluation.cross_validation.cross_validated``), each option scored on the same folds (each fold's
        scores kept in ``folder``) and chosen out of fold: (thresholds for the final model, the task's ``cv.json``
        record of the chosen option, the choice)."""
        from legalft.evaluation.cross_validation import cross_validated, stratified_folds

        pool = task.train + task.val
        splits = stratified_folds(pool, folds, seed, stratify)
        held_out, choices, use = self.chosen_on_folds(task, splits, seed, folder)
        thresholds, record = cross_validated(pool, held_out[use], splits, task.spec)
        return thresholds, record, choices

    def chosen_on_folds(self, task: Task, folds, seed: int, folder) -> tuple[dict[str, np.ndarray], dict, str]:
        """(each option's out-of-fold scores of the task's train and validation documents on ``folds``, each fold's
        kept in ``folder`` (None: nowhere; a folder per option where there are several), the choice among them, the
        option chosen). Only the prior is scored where the documents are fewer than ``min_choice_docs``."""
        from legalft.evaluation.cross_validation import held_out_decisions

        spec, pool, options = task.spec, task.train + task.val, self.options()
        scored = options if len(pool) >= (self.min_choice_docs or 0) else dict(list(options.items())[:1])
        held_out = {name: self.out_of_fold(task, pool, folds, seed, option=option, folder=folder if folder is None
                                           or len(options) == 1 else folder / f"{self.choice_name}={name}")
                    for name, option in scored.items()}
        choices = {}
        if len(options) > 1:
            choices[self.choice_name] = self.option_choice(
                held_out, pool, spec, "out_of_fold", seed,
                lambda scores, targets: held_out_decisions(scores, folds, targets, spec.multi_label))
        return held_out, choices, choices[self.choice_name].option if choices else next(iter(options))

    def cross_validated(self, ctx: RunContext, task: Task) -> tuple[FinalModel, dict]:
        """``protocol.cv_folds=K`` (``cross_validate``): (the final model, fitted on every document with the option
        chosen out of fold and the thresholds its folds' scores give; the task's ``cv.json`` record)."""
        protocol, pool = ctx.protocol, task.train + task.val
        thresholds, record, choices = self.cross_validate(task, ctx.cv_folds, protocol.seed,
                                                          ctx.folder.folds(task.spec.name), protocol.stratify)
        options = self.options()
        use = options[choices[self.choice_name].option] if choices else next(iter(options.values()))
        final = self.fit_with(replace(task, train=pool, val=[]), ctx.seed, use)
        return FinalModel(final, thresholds, choices, len(pool), refit=True, chosen_on=len(pool)), record

    def kept_tasks(self, ctx: RunContext, tasks: list[Task]) -> list[Task]:
        kept = [t for t in tasks if t.spec.kind != "open"]
        skipped = [t.spec.name for t in tasks if t not in kept]
        if skipped:
            log.warning("method=%s classifies over a fixed label space: left out %d task(s) without one: %s",
                        self.name, len(skipped), ", ".join(skipped))
        if not kept:
            raise UserError(f"method={self.name}: no task with a fixed label space to classify (the data config's "
                            "tasks are answered in free text): score them in context (evaluate.py prompt=...).")
        return kept

    def score(self, ctx: RunContext, tasks: list[Task], model_name: str) -> dict:
        """Each task's final model (cross-validated first with ``protocol.cv_folds``), scored on its test split where
        it has one; the run record (a run without any test split records what it chose, and scores nothing)."""
        from legalft.evaluation.evidence import EvidenceSelector, add_evidence
        from legalft.evaluation.predictions import score_predictions
        from legalft.kit.folds import write_cv

        kept = self.kept_tasks(ctx, tasks)
        # scored examples the run learnt from, counted the same way when it trains and when it is rescored
        overlap = ctx.folder.flag_overlap([(t.spec, t.test or []) for t in kept])
        scores, records, folds, finals = {}, [], {}, {}
        for task in kept:
            if ctx.cv_folds:
                final, folds[task.spec.name] = self.cross_validated(ctx, task)
            else:
                final = self.fitted(task, ctx.seed, ctx.protocol.refits(task))
            finals[task.spec.name] = final
            if not task.test:
                continue
            scores[task.spec.name], task_records = score_predictions(task.test, final.scorer(task.test), task.spec,
                                                                     final.thresholds)
            # each predicted section's sentences, from a scorer of the experts' spans refitted like the classifier
            selector = EvidenceSelector.fit(task.train + task.val, task.spec.labels)
            scores[task.spec.name].update(add_evidence(task_records, task.test, selector, ctx.explanations))
            records += task_records
        metrics = write_cv(ctx.folder, folds) if folds else {}
        if not scores:
            log.info(no_test_split(ctx))
        self.publish(ctx, scores, records, [e for t in kept for e in t.test or []], model=model_name,
                     **self.run_fields(), **({"cv_folds": ctx.cv_folds} if ctx.cv_folds else {}),
                     **{"comparable": ctx.whole_test_split, **overlap}, **self.what_predicted(model_name, finals))
        return {**metrics, **{f"test/{task}/{k}": v for task, s in scores.items() for k, v in s.items()
                              if isinstance(v, float)}}

    def what_predicted(self, model: str, finals: dict[str, FinalModel]) -> dict:
        """The run record's ``choices`` (a run of one task: by choice name; of several: by task, then name) and
        ``predicted_with``, the line the run ends with: what predicted, the choices with their evidence, and how many
        documents the final model learnt from once it had chosen."""
        from legalft.evaluation.choices import described, records

        def said(final: FinalModel) -> str:
            parts = [described(final.choices, tuple(final.choices))] if final.choices else []
            if final.refit:
                parts.append(f"refit on {final.fitted_on} documents")
            return "; ".join(parts)

        if len(finals) == 1:
            (final,) = finals.values()
            line = said(final)
            return {"predicted_with": f"{model}; {line}" if line else model,
                    **({"choices": records(final.choices)} if final.choices else {}),
                    **({"refit": {"documents": final.fitted_on, "chosen_on": final.chosen_on}} if final.refit else {})}
        chose = {task: records(final.choices) for task, final in finals.items() if final.choices}
        return {"predicted_with": model + (f"; {self.choice_name} chosen per task (metrics.json's choices)"
                                           if chose else ""), **({"choices": chose} if chose else {})}

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
        final = (self.cross_validated(ctx, chosen)[0] if ctx.cv_folds
                 else self.fitted(chosen, ctx.seed, ctx.protocol.refits(chosen)))
        evidence = EvidenceSelector.fit(chosen.train + chosen.val, chosen.spec.labels)
        return chosen, final.scorer, final.thresholds, evidence

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
        if not any(task.test for task in tasks):
            raise UserError(f"run={ctx.folder.path} has no test split to score: give one with data.test_path=FILE.")
        return self.score(ctx, tasks, run_results.recorded_model(ctx.folder.path, self.model_label(None)))
