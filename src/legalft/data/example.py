"""The shape every data source is read into, whatever its file format."""

from __future__ import annotations

from dataclasses import dataclass, field


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


@dataclass(frozen=True)
class Splits:
    task: TaskSpec
    train: list[Example]
    val: list[Example]
    test: list[Example] | None
