"""A folder ``legalft.export`` wrote, read back as the run it came from classifies (``predict.py run=<the export>``):
``legalft.json`` names the method that wrote it, and that method's ``classify_export`` gives the scores (an
encoder's stock transformers model rebuilt into the run's document classifier; a classical run's TF-IDF classifier
from its plain files); the thresholds and the evidence scorer come from ``legalft.json``. Nothing in the folder is
executed or unpickled."""

from __future__ import annotations

import json
from pathlib import Path

from legalft.data.example import Example, TaskSpec
from legalft.foundation.errors import UserError
from legalft.kit.base import Classified

RECORD = "legalft.json"
FORMAT = 1


def is_export(path: str | Path) -> bool:
    """A folder ``legalft.export`` wrote (``legalft.json``, no run's ``config.yaml``)."""
    path = Path(path)
    return (path / RECORD).is_file() and not (path / "config.yaml").exists()


def read_record(folder: Path) -> dict:
    try:
        record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            raise ValueError(f"format {record.get('format') if isinstance(record, dict) else None!r}, not {FORMAT}")
        TaskSpec(name=str(record["task"]), labels=tuple(record["labels"]), multi_label=bool(record["multi_label"]))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise UserError(f"{folder / RECORD}: not an export this release reads ({err}). Export the run again with "
                        "python -m legalft.export.") from None
    return record


def classify(folder: str | Path, examples: list[Example], with_evidence: bool = True) -> tuple[Classified, dict]:
    """(the export's scores of ``examples`` with its thresholds and evidence scorer (``with_evidence``), its
    ``legalft.json``), from the method that wrote it."""
    import numpy as np

    from legalft.foundation import registry
    from legalft.runs.migrations import method_named

    folder = Path(folder)
    record = read_record(folder)
    task = TaskSpec(name=record["task"], labels=tuple(record["labels"]), multi_label=bool(record["multi_label"]),
                    label_descriptions=record.get("descriptions") or {})
    method = method_named(str(record.get("method")))
    if method is None:
        raise UserError(f"{folder / RECORD}: method {record.get('method')!r} is not one this installation has "
                        f"({', '.join(registry.methods())}). Install the plugin that wrote it.")
    scores, namer = method.classify_export(folder, record, task, examples)
    thresholds = np.array([float(record.get("thresholds", {}).get(label, 0.5)) for label in task.labels])
    return Classified(task, scores, thresholds, (namer or evidence(folder, record)) if with_evidence else None), record


def evidence(folder: Path, record: dict):
    from legalft.evaluation.evidence import EvidenceSelector
    from legalft.foundation.io import inside

    name = (record.get("evidence") or {}).get("file")
    if not name:
        return None
    path = inside(folder, name, f"{folder / RECORD}: evidence.file")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise UserError(f"{path}: legalft.json names this evidence scorer, but it cannot be read ({err}). Export the "
                        "run again.") from None
    return EvidenceSelector.from_json(text, str(path))


def classify_texts(folder: str | Path, texts: list[str]) -> list[dict]:
    """For Python: each text's predicted labels, every label's score and threshold, and the evidence sentences, as
    ``predict.py`` writes them."""
    examples = [Example(id=str(i), text=text, labels=()) for i, text in enumerate(texts, start=1)]
    classified, record = classify(folder, examples)
    return classified.records(examples, record.get("codes") or {})
