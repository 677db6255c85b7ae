"""The shape every data source is read into, whatever its file format."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Example:
    """One labelled document or prompt input.

    ``labels`` is a tuple for every task: one element for single-label tasks, any number for
    multi-label ones (PROSLEX). ``explanations`` maps a label to the annotated text spans that
    support it.
    """

    id: str
    text: str
    labels: tuple[str, ...]
    explanations: dict[str, tuple[str, ...]] = field(default_factory=dict)
    meta: dict[str, str] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)  # every input column, for prompt templates


def reasoning_key(label: str) -> str:
    """Where an example's ``meta`` keeps the gold reasoning for a label (FIRE 2026's ``reasoning_trace``)."""
    return f"reasoning {label}"


KINDS = ("label", "label_set", "open")


@dataclass(frozen=True)
class TaskSpec:
    """What the runners and the metrics need to know about a task, built by its loader."""

    name: str
    labels: tuple[str, ...]
    multi_label: bool
    label_descriptions: dict[str, str] = field(default_factory=dict)
    metric: str = "macro_f1"  # the task's headline metric, as its benchmark reports it
    category: str = ""  # LegalBench reasoning category (issue, rule, conclusion, interpretation, rhetoric)
    description: str = ""
    # labels are statute sections (PROSLEX): prompted in the PROSLEX paper's words and read back by
    # section number; other multi-label tasks are prompted and read by label name
    statutes: bool = False
    # What an answer is, which prompts, answer parsing, scoring and reports switch on: "label", one of
    # ``labels``; "label_set", any set of them (``multi_label``); "open", free text compared with the
    # gold answer by the task's metric (LegalBench's numeric, extraction and multi-answer tasks).
    kind: str = ""
    # whether an example's id names the same document in every split (PROSLEX's case ids, a custom id column),
    # so a scored example with a training example's id is one the run learnt from; LegalBench numbers the rows
    # of each split from 0, so there only the text says so
    ids_name_documents: bool = True

    def __post_init__(self) -> None:
        if not self.kind:
            object.__setattr__(self, "kind", "label_set" if self.multi_label else "label")
        if self.kind not in KINDS:
            raise ValueError(f"TaskSpec.kind={self.kind!r}: one of {', '.join(KINDS)}")


@dataclass(frozen=True)
class Task:
    """One task as every method sees it, whichever source read it: a list of these is what every
    data source's ``load()`` returns, so no pipeline, prompt or metric asks which source it holds.

    ``val`` is empty where the source has no validation split (LegalBench); ``test`` is None where
    it has no test split. ``base_prompt`` is the task's prompt with ``{{column}}`` placeholders (the
    published one, for LegalBench), naming the ``Example.fields`` a prompt shows.
    """

    spec: TaskSpec
    train: list[Example]
    test: list[Example] | None
    base_prompt: str = "{{text}}"
    val: list[Example] = field(default_factory=list)
    # what the reader found in each split's files and what it dropped, by split (legalft.data.noise): a run records
    # it as metrics.json's run.data_notes
    notes: dict[str, dict[str, int]] = field(default_factory=dict)
    # where a dataset the ``datasets`` library loaded came from and each split's fingerprint (``data.hf``): a run
    # records it as metrics.json's run.dataset
    origin: dict = field(default_factory=dict)
    # ``val`` is a share of the training documents the protocol set aside (``protocol.val_fraction``), not a split
    # the data gave: a run that chooses on it learns from it too once it has chosen (``protocol.refit``)
    val_from_train: bool = False


class DataSource(Protocol):
    """What a data config's ``_target_`` builds (one small module per source, under ``legalft.data``)."""

    def load(self) -> list[Task]:
        """Every task the config names, with the splits it names; bad data ends in a ``UserError``."""

    def load_test(self) -> list[Task]:
        """For rescoring a trained run: the tasks with their test splits (train where prompts need it)."""
