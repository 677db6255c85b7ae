"""The model card (``README.md``) of an exported run, in the Hugging Face Hub's format: YAML front matter
(licence, base model, datasets, language, pipeline tag, tags, ``model-index`` with the run's scores), then what
the model predicts, its labels, its training data, the recipe, how to load it and its limits. Everything in it
is read from the run folder (``metrics.json``, ``cv.json``, ``label_map.json``, ``config.yaml``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import yaml

FEW_DOCUMENTS = 10  # a label learnt from fewer training documents than this is named under the card's limits


@dataclass
class CardFacts:
    name: str  # the exported model's name (its folder's, or the Hub repository's)
    method: str
    model: str  # what predicted (metrics.json's run.model)
    base_model: str | None  # a Hub id, or None for a local path
    data: str  # the data config's name
    license: str
    task: str
    labels: list[str]
    multi_label: bool
    library_name: str
    pipeline_tag: str
    load: str  # a few lines of Python
    descriptions: dict[str, str] = field(default_factory=dict)
    codes: dict[str, str] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=dict)
    training_counts: dict[str, int] = field(default_factory=dict)  # training documents per label, where known
    run: dict = field(default_factory=dict)  # metrics.json's run record
    test: dict = field(default_factory=dict)  # the task's test scores, where the run was scored on a test split
    cv: dict = field(default_factory=dict)  # the task's cv.json record, where cross-validated
    notes: list[str] = field(default_factory=list)  # what transformers does not apply, said in the limits


def front_matter(facts: CardFacts) -> dict:
    results = []
    for split, scores in (("test", facts.test), (f"{facts.cv.get('folds', '')}-fold cross-validation mean",
                                                  facts.cv.get("mean", {}))):
        metrics = [{"type": "f1", "name": name, "value": round(float(scores[key]), 4)}
                   for key, name in (("macro_f1", "macro-F1"), ("micro_f1", "micro-F1")) if key in scores]
        metrics += [{"type": "accuracy", "name": "accuracy", "value": round(float(scores["accuracy"]), 4)}] \
            if "accuracy" in scores else []
        if metrics:
            results.append({"task": {"type": "text-classification", "name": facts.task},
                            "dataset": {"name": facts.data, "type": facts.data, "split": split}, "metrics": metrics})
    matter = {"license": facts.license, "language": ["en"], "library_name": facts.library_name,
              "pipeline_tag": facts.pipeline_tag, "datasets": [facts.data],
              "tags": ["legal", "legalft", facts.method,
                       "multi-label-classification" if facts.multi_label else "single-label-classification"]}
    if facts.base_model:
        matter["base_model"] = facts.base_model
    if results:
        matter["model-index"] = [{"name": facts.name, "results": results}]
    return matter


def card(facts: CardFacts) -> str:
    lines = ["---", yaml.safe_dump(front_matter(facts), sort_keys=False, allow_unicode=True).strip(), "---", "",
             f"# {facts.name}", "",
             f"Predicts the {'set of labels' if facts.multi_label else 'label'} of a legal document for the task "
             f"`{facts.task}` ({len(facts.labels)} labels), trained by legalft (`method={facts.method}`, "
             f"predicting with {facts.model}).", ""]
    lines += label_table(facts) + ["", "## Training data", "",
                                   f"- Data: `{facts.data}` (licence: {facts.license})"]
    if facts.run.get("data_fingerprint"):
        lines.append(f"- Scored data fingerprint: `{facts.run['data_fingerprint']}`")
    lines += ["", "## Recipe", "", f"- Method: `{facts.method}`, model: `{facts.model}`, seed {facts.run.get('seed')}"]
    if facts.run.get("predicted_with"):
        lines.append(f"- What predicted, and each choice the run made: {facts.run['predicted_with']}")
    lines += [f"- Config digest: `{facts.run.get('config_digest', '?')}`", ""] + scores_section(facts)
    lines += ["## How to load", "", "```python", facts.load, "```", "", "## Limits", ""] + limits(facts)
    return "\n".join(lines) + "\n"


def label_table(facts: CardFacts) -> list[str]:
    rows = ["| label | code | description | threshold | training documents |", "| --- | --- | --- | --- | --- |"]
    for label in facts.labels:
        threshold = facts.thresholds.get(label)
        rows.append(f"| {label} | {facts.codes.get(label, '')} | {facts.descriptions.get(label, '')} | "
                    f"{'' if threshold is None else f'{threshold:.2f}'} | {facts.training_counts.get(label, '')} |")
    return rows


def scores_section(facts: CardFacts) -> list[str]:
    lines = []
    if facts.test:
        lines += ["## Scores", "", f"Test split ({facts.test.get('n', '?')} documents): " + ", ".join(
            f"{key} {facts.test[key]:.3f}" for key in ("macro_f1", "micro_f1", "accuracy") if key in facts.test), ""]
    if facts.cv.get("mean"):
        mean, std = facts.cv["mean"], facts.cv.get("std", {})
        lines += ["" if lines else "## Scores", *([] if lines else [""]),
                  f"{facts.cv.get('folds')}-fold cross-validation, mean (sd) over folds: " + ", ".join(
                      f"{key} {mean[key]:.3f} ({std.get(key, 0):.3f})" for key in ("macro_f1", "micro_f1")
                      if key in mean), ""]
    return lines


def limits(facts: CardFacts) -> list[str]:
    few = [label for label in facts.labels if facts.training_counts.get(label, FEW_DOCUMENTS) < FEW_DOCUMENTS]
    lines = [f"- Labels learnt from fewer than {FEW_DOCUMENTS} training documents: {', '.join(few)}."] if few else []
    overlap = facts.run.get("overlap_with_training")
    if overlap:
        lines.append(f"- {overlap} scored documents were also training documents: its test scores overstate it.")
    if facts.run.get("comparable") is False:
        lines.append("- Its scores are not comparable with published numbers (a subset of the test split, or "
                     "documents it trained on).")
    return lines + [f"- {note}" for note in facts.notes] + (
        [] if lines or facts.notes else ["- None recorded beyond what the scores above show."])


def training_counts(tasks: list, task: str) -> dict[str, int]:
    """Training documents per label of ``task`` among ``tasks`` (the run's data, read again)."""
    for t in tasks:
        if t.spec.name == task:
            documents = t.train + t.val
            return {label: sum(label in e.labels for e in documents) for label in t.spec.labels}
    return {}


def read_json(path) -> dict:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
