"""What every method is (``legalft.foundation.registry``'s contract): one class, built from its own node
``conf/method/<name>.yaml``, that runs and rescores, and declares what is its own, so that no shared
module names a method: how its runs are named in reports and LegalEvalHub exports, whether it trains, what its
saved configs may build, and how its exports are read back. How runs of earlier releases are read is
``legalft.runs.migrations``'s table, not the method's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

    from legalft.data.example import Example, TaskSpec
    from legalft.runs.context import RunContext


def chosen_task(tasks: list, task: str | None, run) -> object:
    """The one of a run's ``tasks`` (``Task`` objects) that ``task=`` names, or its only one; ``run``: its folder."""
    from legalft.foundation.errors import UserError

    names = [t.spec.name for t in tasks]
    if task is None and len(tasks) > 1:
        raise UserError(f"run={run} holds {len(tasks)} tasks ({', '.join(names[:10])}{' ...' if len(names) > 10 else ''}"
                        "): choose one with task=<name>.")
    if task is not None and task not in names:
        raise UserError(f"task={task}: the run has no such task; it has {', '.join(names[:10])}"
                        f"{' ...' if len(names) > 10 else ''}.")
    return next(t for t in tasks if task in (None, t.spec.name))


@dataclass
class Classified:
    """What a finished run says of documents nobody labelled (``predict.py``): a classifier's score per label, the
    threshold each label is decided by, and where the run gives them, each predicted section's evidence; or a
    prompted model's answers (``answers``, from ``legalft.llm.scoring.unlabelled_answers``)."""

    task: TaskSpec
    scores: np.ndarray | None  # documents x labels, in (0, 1), columns in ``task.labels`` order
    thresholds: np.ndarray | None  # per label (multi-label); single-label tasks take the top label
    evidence: object = None  # legalft.evaluation.evidence.EvidenceSelector, or None
    answers: list[dict] | None = None  # per document: prediction, raw generation, label_scores, evidence

    def records(self, examples: list[Example], codes: dict[str, str] | None = None) -> list[dict]:
        """One record per document (``predict.py``'s lines): its prediction, every label's score and threshold (or
        the model's answer), and each predicted section's evidence sentences where the run gives them; ``codes``:
        each label's code."""
        from legalft.evaluation.grounding import predicted_sections
        from legalft.evaluation.predictions import named_labels, unlabelled_records

        if self.answers is not None:
            records = []
            for example, answer in zip(examples, self.answers):
                predicted = answer["prediction"]
                record = {"id": example.id, "prediction": predicted}
                named = named_labels(predicted if isinstance(predicted, list) else [predicted] if predicted else [],
                                     self.task, codes)
                if named:
                    record["labels"] = named
                records.append({**record, **{k: v for k, v in answer.items() if k != "prediction"}})
            return records
        records = unlabelled_records(examples, self.scores, self.task, self.thresholds, codes)
        if self.evidence is not None:
            for record, example in zip(records, examples):
                evidence = self.evidence.select(example.text, predicted_sections(record))
                if evidence:
                    record["evidence"] = evidence
        return records


@dataclass
class Exported:
    """What ``legalft.export`` says of a model a method wrote into an export folder: how to load it (for the model
    card), the task and thresholds it decides by, its evidence scorer, and what else ``legalft.json`` records for
    its kind of model (windows, fusion), as plain numbers and text."""

    task: TaskSpec | None  # None: a model that answers prompts (no legalft.json)
    thresholds: np.ndarray | None
    library_name: str
    pipeline_tag: str
    load: str  # a few lines of Python
    evidence: object = None  # legalft.evaluation.evidence.EvidenceSelector, or None
    record: dict = field(default_factory=dict)


def no_test_split(ctx) -> str:
    """What a run without a test split says it did, and how its model is used and scored."""
    path = ctx.folder.path
    return (f"no test split: the run is trained and scores nothing{' but its cross-validation (cv.json)' if ctx.cv_folds else ''}. "
            f"python predict.py run={path} input=FILE classifies new documents (the organisers' test file); python "
            f"evaluate.py run={path} data.test_path=FILE scores labelled ones; data.test_path, protocol.test_fraction "
            "or protocol.cv_folds=K score a run as it trains")



class Method:
    # the config choice (method=<name>) and what results record as run.method; registered under it (and
    # its older names) in pyproject.toml's legalft.methods entry points
    name: ClassVar[str] = ""
    trains: ClassVar[bool] = True  # fits on the train split (a report sets these against in-context runs)
    # classes a saved config of its runs may build besides the method and the data source ("module.Class")
    builds: ClassVar[tuple[str, ...]] = ()
    # checks of its own settings, run before anything is written (legalft.apps.config_checks): key of its node ->
    # (a check of legalft.foundation.checks, what the value must be)
    settings: ClassVar[Mapping[str, tuple]] = {}
    # checks of the config groups it reads besides its own node, the same way: group -> {key -> (check, what)}
    group_settings: ClassVar[Mapping[str, Mapping[str, tuple]]] = {}

    @classmethod
    def config_problems(cls, requested) -> list[str]:
        """What its settings cannot be together (one value given another), found in the settings a command
        ``requested`` before anything loads (``legalft.apps.config_checks``; a run itself reads only its context);
        each problem names the keys."""
        return []

    # reads documents in windows (the windows group, conf/windows): a saved config of another method's run is
    # compared and rescored without it
    reads_windows: ClassVar[bool] = False

    def classify(self, ctx: RunContext, examples: list[Example], task: str | None = None) -> Classified:
        """Scores of ``examples`` (unlabelled) from the finished run ``ctx.folder``, which is read, never written;
        ``task``: which of a several-task run's tasks (None: its one task)."""
        from legalft.foundation.errors import UserError

        raise UserError(f"method={self.name} does not classify unlabelled documents (its class implements no "
                        f"Method.classify); score it on labelled documents with evaluate.py run={ctx.folder.path} "
                        "data.test_path=...")

    def export(self, ctx: RunContext, folder: Path, part: str | None = None) -> Exported:
        """Write the run's model into ``folder`` (new, empty) for use outside this project; ``part``: which of the
        run's models (a several-task run's task, a LoRA run's adapter; None: its one model)."""
        from legalft.foundation.errors import UserError

        raise UserError(f"legalft.export does not export {self.name} runs; python predict.py run={ctx.folder.path} "
                        "input=... classifies with them.")

    @classmethod
    def classify_export(cls, folder: Path, record: dict, task: TaskSpec, examples: list[Example]):
        """(scores of ``examples``, documents x labels in ``task.labels`` order; the export's own evidence namer or
        None) from a folder this method's ``export`` wrote, whose ``legalft.json`` is ``record``
        (``predict.py run=<the export>``). Nothing in the folder is executed or unpickled."""
        from legalft.foundation.errors import UserError

        raise UserError(f"{folder}: an export of a {cls.name} run, which predict.py reads from its run folder: "
                        f"predict.py run={record.get('run')} (transformers loads this folder).")

    def run(self, ctx: RunContext) -> dict:
        """Train (or prompt) and score a new run, writing its results with ``run_results.publish``
        (docs/results.md); returns the metrics a sweeper may optimise."""
        raise NotImplementedError

    def rescore(self, ctx: RunContext) -> dict:
        """Score a finished run folder again, on its own test split or the data keys the command replaces."""
        raise NotImplementedError

    def publish(self, ctx: RunContext, scores: dict, records: list[dict], scored: list[Example], loggers=None,
                **fields) -> dict:
        """The run's ``metrics.json`` and ``predictions.jsonl`` (docs/results.md), the one way every method writes
        its run record: its scores and records, its method, seed, metric mode, config digest and the scored
        data's fingerprint, and ``fields`` (model, comparable, ...); ``loggers`` default to the run's."""
        from legalft.evaluation import run_results

        if ctx.data_notes:
            fields.setdefault("data_notes", ctx.data_notes)
        if ctx.data_origin:
            fields.setdefault("dataset", ctx.data_origin)
        info = run_results.run_info(method=self.name, seed=ctx.seed, metric_mode=ctx.metric_mode,
                                    data_fingerprint=run_results.data_fingerprint(scored),
                                    config_digest=ctx.config_digest, **fields)
        run_results.publish(ctx.folder.path, info, scores, records, ctx.loggers if loggers is None else loggers)
        return scores

    @classmethod
    def report_words(cls, info: Mapping) -> list[str]:
        """How a report names a run of this method (its ``metrics.json`` ``run`` record), word by word: the
        method first, then what sets its runs apart (the seed never does: seeds are averaged)."""
        return [cls.name, str(info.get("model", "?"))]

    @classmethod
    def hub_prompt_id(cls, info: Mapping) -> str:
        """LegalEvalHub's ``prompt_id`` for a run: how it was prompted or trained."""
        return cls.name
