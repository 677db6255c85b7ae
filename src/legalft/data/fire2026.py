"""FIRE 2026 Task 1, Explainable Statute Prediction: the organisers' JSON Lines, one case per line. Three shapes are
read, line by line:

- training lines, as the organisers publish them::

    {"doc_id": "2013.INSC.228.txt", "fact": "<case facts>", "statute": ["IPC 147", "IPC 302"],
     "explanation": {"<a sentence of the facts>": "IPC 147", "<another>": "IPC 302"}}

- test lines: ``doc_id`` and ``fact`` (``doc_url`` where given);
- submission-shaped lines, ``statute: [{"section", "exact_fact", "reasoning_trace"}]``, each ``exact_fact`` that
  section's evidence.

Sections are read into the project's labels whatever their spelling ("IPC 302", "Section 302 IPC" and
"S. 302 of the Indian Penal Code" are all ``IPC 302``); the label space is the organisers' seven sections
(``data.sections``; null: every IPC section the training data names), and a section outside it, or one that names
no IPC section, is reported with counts and handled as ``data.unknown_sections`` says. Explanation spans are aligned to their facts, and the files' other noise counted
(``legalft.data.noise``). ``data=proslex`` reads these files too, into PROSLEX's seven sections.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from legalft.data.example import Example, Task, TaskSpec, reasoning_key
from legalft.data.noise import UNKNOWN_LABEL_POLICIES, NoiseCounts, without_shared_documents
from legalft.data.table_files import numbered_json_lines
from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)

SOURCE_HINT = ("FIRE 2026 Task 1 data is one JSON object per line: doc_id, fact and, on training lines, statute "
               "(a list of sections such as \"IPC 302\") with explanation ({\"<sentence of the fact>\": \"IPC 302\"})")
SECTION_FIELDS = ("section", "exact_fact", "reasoning_trace")
PENAL_CODE = r"(?:I\.?P\.?C\.?|Indian\s+Penal\s+Code(?:,?\s*(?:of\s+)?1860)?)"
NUMBER = r"(\d{1,3})\s*-?\s*([A-Za-z]{0,2})"
SECTION_FORMS = [
    re.compile(rf"^(?:sections?|sec\.?|s\.|u/s\.?)?\s*{NUMBER}\s*(?:,\s*|of\s+(?:the\s+)?)?{PENAL_CODE}$", re.I),
    re.compile(rf"^{PENAL_CODE}\s*,?\s*(?:sections?|sec\.?|s\.)?\s*{NUMBER}$", re.I),
]
LABEL = re.compile(r"IPC (\d+)([A-Z]*)")


def section_label(text: str) -> str | None:
    """``IPC 302`` (``IPC 498A``) for a reference to an IPC section, else None."""
    for form in SECTION_FORMS:
        match = form.match(" ".join(str(text).split()))
        if match:
            number, suffix = match.groups()
            return f"IPC {int(number)}{suffix.upper()}"
    return None


def section_text(label: str) -> str:
    """A label as the organisers spell sections in their files and task description: ``IPC 302``, ``IPC 498A``."""
    if not LABEL.fullmatch(label):
        raise UserError(f"label {label!r} is not an IPC section such as 'IPC 302': a FIRE 2026 submission names "
                        "IPC sections; score a run of data=fire2026 or data=proslex.")
    return label


def section_order(label: str) -> tuple[int, str]:
    number = LABEL.match(label)
    return (int(number.group(1)), number.group(2)) if number else (10**6, label)


def text_field(row: dict, key: str, where: str, required: bool = True) -> str:
    value = row.get(key, "")
    if value is None and not required:
        return ""
    if not isinstance(value, str) or required and not value.strip():
        raise UserError(f"{where}: '{key}' must be {'non-empty ' if required else ''}text, not "
                        f"{str(value)[:60]!r}. Fix the line.")
    return value


def written_sections(row: dict, where: str) -> tuple[list[str], list[tuple[str, str]], list[tuple[str, str]]]:
    """A labelled line's sections as written, its (section, evidence span) pairs and its (section, reasoning) pairs,
    from either shape: ``statute`` as a list of sections with ``explanation`` mapping spans to sections (the
    organisers' training lines), or as a list of {section, exact_fact, reasoning_trace} (a submission's)."""
    statutes = row["statute"]
    if isinstance(statutes, list) and all(isinstance(s, str) for s in statutes):
        explanation = row.get("explanation") or {}
        if not isinstance(explanation, dict) or not all(
                isinstance(v, str) or isinstance(v, list) and all(isinstance(x, str) for x in v)
                for v in explanation.values()):
            raise UserError(f"{where}: 'explanation' must map sentences of the fact to a section (\"IPC 302\") or a "
                            f"list of them, not {str(explanation)[:80]!r}. Fix the line.")
        spans = [(section, span) for span, sections in explanation.items()
                 for section in ([sections] if isinstance(sections, str) else sections)]
        return [s for s in statutes if s.strip()], spans, []
    if not isinstance(statutes, list) or not all(isinstance(s, dict) for s in statutes):
        raise UserError(f"{where}: 'statute' must be a list of sections such as [\"IPC 302\"] (or of objects with "
                        f"{', '.join(SECTION_FIELDS)}), not {str(statutes)[:80]!r}. Fix the line.")
    sections, spans, reasons = [], [], []
    for number, statute in enumerate(statutes, start=1):
        entry = f"{where}, statute {number}"
        section = text_field(statute, "section", entry)
        sections.append(section)
        spans.append((section, text_field(statute, "exact_fact", entry, required=False)))
        reasons.append((section, text_field(statute, "reasoning_trace", entry, required=False)))
    return sections, spans, reasons


def by_label(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for section, text in pairs:
        label = section_label(section)
        if label is not None and text.strip():
            grouped.setdefault(label, []).append(text.strip())
    return grouped


def read_file(path: Path, labelled: bool, unknown_sections: str, noise: NoiseCounts | None = None,
              known: set[str] | None = None, keys: tuple[str, str] = ("data.unknown_sections", "data.sections")
              ) -> list[Example]:
    """The cases of one file. ``labelled``: every line must carry ``statute`` (a training file); otherwise a line may
    (a labelled development file) or may not (the organisers' test file). ``noise`` counts what the file holds.
    ``known``: the label space (the organisers' seven sections); a section outside it is handled as
    ``unknown_sections`` says, as one that names no IPC section is. ``keys``: the settings that say so, named in
    messages (the policy's, the label space's)."""
    if unknown_sections not in UNKNOWN_LABEL_POLICIES:
        raise UserError(f"{keys[0]}={unknown_sections!r}: choose one of {', '.join(UNKNOWN_LABEL_POLICIES)}.")
    if not path.is_file():
        raise UserError(f"{path} is not a file. {SOURCE_HINT}.")
    noise = NoiseCounts() if noise is None else noise
    examples, seen, unknown, unknown_lines = [], {}, Counter(), []
    for line, row in numbered_json_lines(path):
        where = f"{path}: line {line}"
        doc_id = text_field(row, "doc_id", where)
        if doc_id in seen:
            raise UserError(f"{where}: doc_id {doc_id!r} is also on line {seen[doc_id]}: doc_ids must be unique.")
        seen[doc_id] = line
        fact = text_field(row, "fact", where).strip()
        meta = {"doc_url": text_field(row, "doc_url", where, required=False), "source_file": path.name}
        noise.looked_at(fact)
        if row.get("statute") is None:
            if labelled:
                raise UserError(f"{where} has no 'statute': a training line lists its sections. {SOURCE_HINT}.")
            examples.append(Example(id=doc_id, text=fact, labels=(), meta=meta))
            continue
        sections, spans, reasons = written_sections(row, where)
        labels = {label for s in sections if (label := section_label(s)) and (known is None or label in known)}
        dropped = [s for s in sections if section_label(s) not in labels]
        if dropped:
            unknown.update(dropped)
            unknown_lines.append(str(line))
            if unknown_sections != "drop_label":
                continue  # "error": every unknown section is named below; "drop_document"
        if labelled and not labels:
            continue
        evidence = noise.aligned(fact, {k: v for k, v in by_label(spans).items() if k in labels})
        meta.update({reasoning_key(k): " ".join(v) for k, v in by_label(reasons).items() if k in labels})
        examples.append(Example(id=doc_id, text=fact, labels=tuple(sorted(labels, key=section_order)),
                                explanations=evidence, meta=meta))  # reasoning: prompt=json's target
    if unknown:
        report_unknown(path, unknown, unknown_lines, unknown_sections, known, keys)
    if not examples:
        raise UserError(f"{path}: no case to read. {SOURCE_HINT}.")
    return examples


def report_unknown(path: Path, unknown: Counter, lines: list[str], policy: str, known: set[str] | None,
                   keys: tuple[str, str]) -> None:
    key, space = keys
    counts = ", ".join(f"{section!r} x{n}" for section, n in unknown.most_common(10))
    outside = "that name no IPC section" if known is None else f"outside {space}"
    message = (f"{path}: section(s) {outside}: {counts} (line(s) {', '.join(lines[:10])}"
               f"{', ...' if len(lines) > 10 else ''})")
    what = {"drop_label": "dropped from their cases", "drop_document": "their cases left out",
            "error": ""}[policy]
    if policy == "error":
        raise UserError(f"{message}. Write them as 'IPC <number>'{'' if known is None else f' of {space}'}, or "
                        f"set {key}=drop_label (drop the section) or drop_document (drop the case).")
    log.warning("%s: %s (%s=%s)", message, what, key, policy)


def read_splits(read) -> tuple[dict[str, list[Example] | None], dict]:
    """Each split ``read(name, noise)`` gives (None: not given), the training side without the documents a later
    split holds too, and the notes a run records (``run.data_notes``): what each split's files held, what was
    dropped. Each split's noise is logged."""
    splits, notes = {}, {}
    for name in ("train", "val", "test"):
        noise = NoiseCounts()
        splits[name] = read(name, noise)
        if splits[name] is not None:
            notes[name] = noise.as_dict()
            log.info("%s split: %s", name, noise.summary())
    train, val, dropped = without_shared_documents(splits["train"], splits["val"] or [], splits["test"] or [])
    splits.update({"train": train, "val": val if splits["val"] is not None else None})
    for name, count in dropped.items():
        notes[name]["dropped_in_a_later_split"] = count
    return splits, notes


class Fire2026Source:
    """``data=fire2026``: the training file (and a validation file, else the protocol's ``val_fraction`` of
    training) and the test file, into one multi-label statute task."""

    license = "cc-by-4.0"  # a model card's licence (the Hub's identifier): the organisers publish the task's data so

    validation_from_train = True  # without a validation file, the protocol carves one out of training

    def __init__(self, train_path: str, test_path: str | None = None, val_path: str | None = None,
                 name: str = "fire2026", unknown_sections: str = "drop_label",
                 descriptions: Mapping[str, str] | None = None, sections: list[str] | None = None) -> None:
        self.name = name
        self.paths = {"train": train_path, "val": val_path, "test": test_path}
        self.unknown_sections = unknown_sections
        self.descriptions = dict(descriptions or {})
        self.sections = self.label_space(sections)

    @staticmethod
    def label_space(sections) -> set[str] | None:
        """``data.sections`` as labels (``IPC 302``), each named where it is not an IPC section; None: open."""
        if sections is None:
            return None
        labels = set()
        for section in sections:
            label = section_label(str(section))
            if label is None:
                raise UserError(f"data.sections: {section!r} is not an IPC section such as 'IPC 302'.")
            labels.add(label)
        return labels

    def read(self, split: str, noise: NoiseCounts | None = None) -> list[Example] | None:
        path = self.paths[split]
        if not path:
            if split == "train":
                raise UserError(f"data.train_path is unset. {SOURCE_HINT}.")
            return None
        return read_file(Path(path), labelled=split != "test", unknown_sections=self.unknown_sections, noise=noise,
                         known=self.sections)

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
        splits, notes = read_splits(self.read)
        spec = self.spec(splits["train"] + (splits["val"] or []))
        return [Task(spec=spec, train=splits["train"], val=splits["val"] or [],
                     test=self.with_known_sections(splits["test"], spec), notes=notes)]

    def load_test(self) -> list[Task]:
        test = self.read("test")
        if test is None:
            raise UserError(f"no test file: set data.test_path. {SOURCE_HINT}.")
        spec = self.spec(self.read("train") + (self.read("val") or []))
        return [Task(spec=spec, train=[], test=self.with_known_sections(test, spec))]


def fire_line(example: Example, facts_only: bool) -> dict:
    """An example as the organisers write a line: a training line (``statute``, ``explanation``), or with
    ``facts_only`` a test line. A span for several sections maps to the list of them."""
    row = {"doc_id": example.id, "fact": example.text}
    if example.meta.get("doc_url"):
        row["doc_url"] = example.meta["doc_url"]
    if not facts_only:
        row["statute"] = [section_text(label) for label in example.labels]
        explanation: dict[str, list[str]] = {}
        for label in example.labels:
            for span in example.explanations.get(label, ()):
                explanation.setdefault(span, []).append(section_text(label))
        row["explanation"] = {span: labels[0] if len(labels) == 1 else labels for span, labels in explanation.items()}
    return row


def write_fire_lines(examples: list[Example], out: Path, facts_only: bool = False, test_out: Path | None = None,
                     test_fraction: float = 0.2, seed: int = 0) -> dict[Path, int]:
    """Statute examples (PROSLEX's: ``proslex.read_collections``) written as FIRE 2026 JSON Lines, as the organisers
    write their training lines. ``facts_only``: test lines (doc_id, doc_url, fact). ``test_out``: a stratified
    ``test_fraction`` of the cases goes there instead (with their sections, so a development run is scored).
    Returns the cases per file; an existing file is never replaced."""
    import json

    from legalft.data.splitting import stratified_split
    from legalft.foundation.io import atomic_write_text

    for path in (out, test_out):
        if path is not None and path.exists():
            raise UserError(f"{path} exists: choose a new file (nothing is overwritten).")
    files = {out: examples}
    if test_out is not None:
        files[out], files[test_out] = stratified_split(examples, test_fraction, seed)
    for path, cases in files.items():
        lines = [json.dumps(fire_line(e, facts_only and (path != out or test_out is None)), ensure_ascii=False)
                 for e in cases]
        atomic_write_text(path, "\n".join(lines) + "\n")
    return {path: len(cases) for path, cases in files.items()}
