"""FIRE 2026 Task 1, Explainable Statute Prediction: the organisers' JSON Lines, one case per line::

    {"doc_id": "...", "doc_url": "...", "fact": "<case facts>",
     "statute": [{"section": "Section 302 IPC", "exact_fact": "<sentence(s) of the facts>",
                  "reasoning_trace": "<why>"}]}

Training lines carry ``statute``; test lines only ``doc_id``, ``doc_url`` and ``fact``. Sections are read
into the project's labels ("Section 302 IPC", "S. 302 of the Indian Penal Code" and "IPC 302" are all
``IPC 302``); the label space is every IPC section the training data names (an open set, not PROSLEX's seven),
and a section that names no IPC section is reported and handled as ``data.unknown_sections`` says. Each
section's ``exact_fact`` is its evidence span, as PROSLEX's experts' spans are.

``convert_proslex`` (``legalft-fire2026 convert``) writes PROSLEX data in this format, so the whole path (reader,
runs, submission) runs on PROSLEX's development data.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from legalft.data.example import Example, Task, TaskSpec, reasoning_key
from legalft.data.proslex import UNKNOWN_LABEL_POLICIES, check_disjoint
from legalft.data.splitting import stratified_split
from legalft.data.table_files import numbered_json_lines
from legalft.errors import UserError

log = logging.getLogger(__name__)

SOURCE_HINT = ("FIRE 2026 Task 1 data is one JSON object per line with doc_id, doc_url, fact and (training) "
               "statute: [{section, exact_fact, reasoning_trace}]")
SECTION_FIELDS = ("section", "exact_fact", "reasoning_trace")
PENAL_CODE = r"(?:I\.?P\.?C\.?|Indian\s+Penal\s+Code(?:,?\s*(?:of\s+)?1860)?)"
NUMBER = r"(\d{1,3})\s*-?\s*([A-Za-z]{0,2})"
SECTION_FORMS = [
    re.compile(rf"^(?:sections?|sec\.?|s\.|u/s\.?)?\s*{NUMBER}\s*(?:,\s*|of\s+(?:the\s+)?)?{PENAL_CODE}$", re.I),
    re.compile(rf"^{PENAL_CODE}\s*,?\s*(?:sections?|sec\.?|s\.)?\s*{NUMBER}$", re.I),
]


def section_label(text: str) -> str | None:
    """``IPC 302`` (``IPC 498A``) for a reference to an IPC section, else None."""
    for form in SECTION_FORMS:
        match = form.match(" ".join(str(text).split()))
        if match:
            number, suffix = match.groups()
            return f"IPC {int(number)}{suffix.upper()}"
    return None


def section_text(label: str) -> str:
    """The submission's spelling of a label: ``IPC 302`` -> ``Section 302 IPC``."""
    match = re.fullmatch(r"IPC (\d+[A-Z]*)", label)
    if not match:
        raise UserError(f"label {label!r} is not an IPC section such as 'IPC 302': a FIRE 2026 submission names "
                        "IPC sections; score a run of data=fire2026 or data=proslex.")
    return f"Section {match.group(1)} IPC"


def section_order(label: str) -> tuple[int, str]:
    number = re.match(r"IPC (\d+)([A-Z]*)", label)
    return (int(number.group(1)), number.group(2)) if number else (10**6, label)


def text_field(row: dict, key: str, where: str, required: bool = True) -> str:
    value = row.get(key, "")
    if not isinstance(value, str) or required and not value.strip():
        raise UserError(f"{where}: '{key}' must be {'non-empty ' if required else ''}text, not "
                        f"{str(value)[:60]!r}. Fix the line.")
    return value


def read_file(path: Path, labelled: bool, unknown_sections: str) -> list[Example]:
    """The cases of one file. ``labelled``: every line must carry ``statute`` (a training file); otherwise a
    line may (a development file converted from PROSLEX) or may not (the organisers' test file)."""
    if unknown_sections not in UNKNOWN_LABEL_POLICIES:
        raise UserError(f"data.unknown_sections={unknown_sections!r}: choose one of {', '.join(UNKNOWN_LABEL_POLICIES)}.")
    if not path.is_file():
        raise UserError(f"{path} is not a file. {SOURCE_HINT}.")
    examples, seen, unknown, unknown_lines = [], {}, Counter(), []
    for line, row in numbered_json_lines(path):
        where = f"{path}: line {line}"
        doc_id = text_field(row, "doc_id", where)
        if doc_id in seen:
            raise UserError(f"{where}: doc_id {doc_id!r} is also on line {seen[doc_id]}: doc_ids must be unique.")
        seen[doc_id] = line
        fact = text_field(row, "fact", where).strip()
        doc_url = text_field(row, "doc_url", where, required=False)
        if "statute" not in row:
            if labelled:
                raise UserError(f"{where} has no 'statute': a training line lists its sections. {SOURCE_HINT}.")
            examples.append(Example(id=doc_id, text=fact, labels=(), meta={"doc_url": doc_url, "source_file": path.name}))
            continue
        statutes = row["statute"]
        if not isinstance(statutes, list) or not all(isinstance(s, dict) for s in statutes):
            raise UserError(f"{where}: 'statute' must be a list of objects with {', '.join(SECTION_FIELDS)}.")
        labels, spans, reasons, dropped = set(), {}, {}, False
        for number, statute in enumerate(statutes, start=1):
            entry = f"{where}, statute {number}"
            section = text_field(statute, "section", entry)
            exact_fact = text_field(statute, "exact_fact", entry, required=False)
            reasoning = text_field(statute, "reasoning_trace", entry, required=False)
            label = section_label(section)
            if label is None:
                unknown[section] += 1
                unknown_lines.append(str(line))
                dropped = True
                continue
            labels.add(label)
            if exact_fact.strip():
                spans.setdefault(label, []).append(exact_fact.strip())
            if reasoning.strip():
                reasons.setdefault(label, []).append(reasoning.strip())
        if dropped and unknown_sections == "error":
            continue  # every unknown section is named below
        if dropped and unknown_sections == "drop_document" or labelled and not labels:
            continue
        examples.append(Example(id=doc_id, text=fact, labels=tuple(sorted(labels, key=section_order)),
                                explanations={k: tuple(v) for k, v in spans.items()},
                                meta={"doc_url": doc_url, "source_file": path.name,  # reasoning: prompt=json's target
                                      **{reasoning_key(k): " ".join(v) for k, v in reasons.items()}}))
    if unknown:
        counts = ", ".join(f"{section!r} x{n}" for section, n in unknown.most_common(10))
        message = (f"{path}: section(s) that name no IPC section: {counts} (line(s) "
                   f"{', '.join(unknown_lines[:10])}{', ...' if len(unknown_lines) > 10 else ''})")
        if unknown_sections == "error":
            raise UserError(f"{message}. Write them as 'Section <number> IPC', or set data.unknown_sections="
                            "drop_label (drop the section) or drop_document.")
        log.warning("%s; data.unknown_sections=%s", message, unknown_sections)
    if not examples:
        raise UserError(f"{path}: no case to read. {SOURCE_HINT}.")
    return examples


class Fire2026Source:
    """``data=fire2026``: the training file (and a validation file, else the protocol's ``val_fraction`` of
    training) and the test file, into one multi-label statute task."""

    license = "other"  # a model card's licence (the Hub's identifier): the FIRE 2026 organisers' terms

    validation_from_train = True  # without a validation file, the protocol carves one out of training

    def __init__(self, train_path: str, test_path: str | None = None, val_path: str | None = None,
                 name: str = "fire2026", unknown_sections: str = "drop_label",
                 descriptions: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.paths = {"train": train_path, "val": val_path, "test": test_path}
        self.unknown_sections = unknown_sections
        self.descriptions = dict(descriptions or {})

    def read(self, split: str) -> list[Example] | None:
        path = self.paths[split]
        if not path:
            if split == "train":
                raise UserError(f"data.train_path is unset. {SOURCE_HINT}.")
            return None
        return read_file(Path(path), labelled=split != "test", unknown_sections=self.unknown_sections)

    def spec(self, labelled: list[Example]) -> TaskSpec:
        labels = tuple(sorted({label for e in labelled for label in e.labels}, key=section_order))
        return TaskSpec(name=self.name, labels=labels, multi_label=True, statutes=True,
                        label_descriptions={label: self.descriptions.get(label, "") for label in labels})

    def with_known_sections(self, test: list[Example] | None, spec: TaskSpec) -> list[Example] | None:
        """Gold sections of the test file that training never names are reported and left out: no run can
        predict them."""
        if not test:
            return test
        unseen = Counter(label for e in test for label in e.labels if label not in spec.labels)
        if unseen:
            log.warning("test sections that no training case names, left out of the gold sets: %s",
                        ", ".join(f"{label} x{n}" for label, n in unseen.most_common()))
        if not any(e.labels for e in test):
            log.warning("%s has no gold sections (the organisers' test file): its scores in metrics.json are "
                        "not a result; `python report.py report=fire2026 runs=<this run> out=<file>` writes the "
                        "submission.", self.paths["test"])
        return [Example(id=e.id, text=e.text, labels=tuple(x for x in e.labels if x in spec.labels),
                        explanations={k: v for k, v in e.explanations.items() if k in spec.labels}, meta=e.meta)
                for e in test]

    def load(self) -> list[Task]:
        train, val, test = self.read("train"), self.read("val") or [], self.read("test")
        check_disjoint({"train": train, "val": val, "test": test or []})
        spec = self.spec(train + val)
        return [Task(spec=spec, train=train, val=val, test=self.with_known_sections(test, spec))]

    def load_test(self) -> list[Task]:
        test = self.read("test")
        if test is None:
            raise UserError(f"no test file: set data.test_path. {SOURCE_HINT}.")
        spec = self.spec(self.read("train") + (self.read("val") or []))
        return [Task(spec=spec, train=[], test=self.with_known_sections(test, spec))]


def fire_line(example: Example, facts_only: bool) -> dict:
    row = {"doc_id": example.id, "doc_url": example.meta.get("doc_url", ""), "fact": example.text}
    if not facts_only:
        row["statute"] = [{"section": section_text(label), "exact_fact": " ".join(example.explanations.get(label, ())),
                           "reasoning_trace": ""} for label in example.labels]
    return row


def convert_proslex(split: Path, out: Path, facts_only: bool = False, test_out: Path | None = None,
                    test_fraction: float = 0.2, seed: int = 0) -> dict[Path, int]:
    """PROSLEX collection files (a file or a folder of them) written as FIRE 2026 JSON Lines: each statute code
    as ``Section <n> IPC`` with its experts' spans as ``exact_fact`` (PROSLEX has no reasoning traces: empty).
    ``facts_only``: test lines (doc_id, doc_url, fact). ``test_out``: a stratified ``test_fraction`` of the cases
    goes there instead (with their sections, so a development run is scored). Returns the cases per file."""
    import json

    import yaml

    from legalft.data.proslex import collection_files, read_split
    from legalft.io import atomic_write_text

    for path in (out, test_out):
        if path is not None and path.exists():
            raise UserError(f"{path} exists: choose a new file (nothing is overwritten).")
    shipped = Path(__file__).resolve().parents[1] / "conf" / "data" / "proslex.yaml"  # PROSLEX's codes
    label_map = yaml.safe_load(shipped.read_text())["label_map"]
    examples = read_split(collection_files(split, "PROSLEX_SPLIT"), {c: e["label"] for c, e in label_map.items()})
    files = {out: examples}
    if test_out is not None:
        files[out], files[test_out] = stratified_split(examples, test_fraction, seed)
    for path, cases in files.items():
        lines = [json.dumps(fire_line(e, facts_only and path != out or facts_only and test_out is None),
                            ensure_ascii=False) for e in cases]
        atomic_write_text(path, "\n".join(lines) + "\n")
    return {path: len(cases) for path, cases in files.items()}
