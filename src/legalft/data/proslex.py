"""PROSLEX (statute prediction from Indian Supreme Court case facts), in its authors' format.

The authors publish one JSON file per collection (``Train/``, ``Validation/``, ``Test/`` under
``Dataset/``); each file is a dict keyed by document id::

    {"2002.INSC.360.txt": {"fact": "...", "statute": ["s1", "s3"],
                           "explanation": {"<span of the facts>": ["s1"]}, "doc_url": "..."}}

Statute codes ``s1``..``s7`` are mapped to labels ("IPC 302") by the label map in the data config. A split may
also be a FIRE 2026 Task 1 JSON Lines file (``.jsonl``: ``legalft.data.fire2026``), whose sections are read into
the same labels: FIRE's training file is the training split PROSLEX's repository does not publish. Explanation
spans are aligned to their facts and the files' noise counted (``legalft.data.noise``).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from legalft.data.example import Example, Task, TaskSpec
from legalft.data.fire2026 import read_splits
from legalft.data.fire2026 import read_file as read_fire_file
from legalft.data.noise import UNKNOWN_LABEL_POLICIES, NoiseCounts
from legalft.foundation.errors import UserError
from legalft.foundation.io import read_utf8

log = logging.getLogger(__name__)

SOURCE_HINT = (
    "PROSLEX is published at github.com/subinay494/Legal_Statute_Prediction_Explanation "
    "(folder Dataset/): set data.root to that folder, or data.train_path / data.val_path / "
    "data.test_path to a collection file or a folder of them, or a FIRE 2026 Task 1 .jsonl file"
)
SPLIT_FOLDERS = {
    "train": ("Train", "train"),
    "val": ("Validation", "validation", "Val", "val", "Dev", "dev"),
    "test": ("Test", "test"),
}


def collection_files(path: Path, key: str) -> list[Path]:
    """The files of one split: ``path`` itself (a collection file, or FIRE 2026 JSON Lines), or every ``*.json``
    in the folder."""
    if not path.exists():
        raise UserError(f"{key}: {path} does not exist. {SOURCE_HINT}.")
    files = [path] if path.is_file() else sorted(path.glob("*.json"))
    if not files:
        raise UserError(f"{key}: no *.json collection files in {path}. {SOURCE_HINT}.")
    return files


class JsonObject(dict):
    """A JSON object that remembers the keys it held twice (``json`` keeps the last copy silently)."""

    duplicates: list[str]


def json_object(pairs: list[tuple[str, object]]) -> JsonObject:
    obj = JsonObject(pairs)
    obj.duplicates = [key for key, n in Counter(key for key, _ in pairs).items() if n > 1]
    return obj


def read_collection(path: Path) -> dict:
    try:
        documents = json.loads(read_utf8(path), object_pairs_hook=json_object)
    except json.JSONDecodeError as err:
        raise UserError(
            f"{path}: malformed JSON at line {err.lineno}, column {err.colno} ({err.msg}). "
            "Re-download the file or fix it there."
        ) from None
    if not isinstance(documents, dict):
        raise UserError(f"{path}: expected a JSON object keyed by document id, found {type(documents).__name__}.")
    if documents.duplicates:
        raise UserError(f"{path}: document id(s) {', '.join(map(repr, documents.duplicates[:10]))} appear more than "
                        "once, and only the last copy would be read: remove or rename the other copies.")
    return documents


def read_split(
    files: list[Path], label_of_code: Mapping[str, str], unknown_labels: str = "drop_label",
    noise: NoiseCounts | None = None,
) -> list[Example]:
    """Read the documents of one split, checking every field the pipeline relies on; ``noise`` counts what they
    hold."""
    noise = NoiseCounts() if noise is None else noise
    if unknown_labels not in UNKNOWN_LABEL_POLICIES:
        raise UserError(f"data.unknown_labels={unknown_labels!r}: choose one of {', '.join(UNKNOWN_LABEL_POLICIES)}.")
    examples: list[Example] = []
    source_of: dict[str, Path] = {}
    unknown: Counter[str] = Counter()
    unknown_docs: list[str] = []
    for path in files:
        for doc_id, doc in read_collection(path).items():
            where = f"{path}: document {doc_id!r}"
            if doc_id in source_of:
                raise UserError(f"{where} also appears in {source_of[doc_id]}: document ids must be unique.")
            source_of[doc_id] = path
            codes, explanation = checked_document(doc, where)
            bad = [c for c in codes if c not in label_of_code]
            if bad:
                unknown.update(bad)
                unknown_docs.append(f"{doc_id} ({path.name})")
                codes = [] if unknown_labels == "drop_document" else [c for c in codes if c in label_of_code]
                if not codes:  # dropped, or nothing left to learn from
                    continue
            examples.append(document(doc_id, doc, path, codes, explanation, label_of_code, noise))
    if unknown:
        report_unknown_codes(unknown, unknown_docs, unknown_labels)
    return examples


def checked_document(doc, where: str) -> tuple[list[str], dict[str, list[str]]]:
    """(the document's statute codes, its explanation spans), every field the pipeline relies on checked."""
    if not isinstance(doc, dict) or "fact" not in doc or "statute" not in doc:
        raise UserError(f"{where} lacks a 'fact' or 'statute' field: fix or remove the document (to classify "
                        "documents without labels: predict.py run=<run folder> input=<this file>).")
    if doc.duplicates:
        raise UserError(f"{where} has the field(s) {', '.join(map(repr, doc.duplicates))} twice, and only the "
                        "last copy would be read: keep one.")
    if not isinstance(doc["fact"], str) or not doc["fact"].strip():
        raise UserError(f"{where} has an empty 'fact': fix or remove the document.")
    codes = doc["statute"]
    if not isinstance(codes, list) or not codes or not all(isinstance(c, str) for c in codes):
        raise UserError(f"{where}: 'statute' must be a non-empty list of codes such as ['s3'], not "
                        f"{json.dumps(codes)[:80]}.")
    explanation = doc.get("explanation") or {}
    if not isinstance(explanation, dict) or not all(
            isinstance(v, list) and all(isinstance(c, str) for c in v) for v in explanation.values()):
        raise UserError(f"{where}: 'explanation' must map spans of the facts to lists of codes, such as "
                        f"{{\"<span>\": [\"s3\"]}}, not {json.dumps(explanation)[:80]}.")
    return codes, explanation


def document(doc_id: str, doc, path: Path, codes: list[str], explanation: dict[str, list[str]],
             label_of_code: Mapping[str, str], noise: NoiseCounts) -> Example:
    """A checked document as an example: its labels, and each label's spans (aligned to the facts)."""
    fact = doc["fact"].strip()
    explanations: dict[str, list[str]] = {}
    for span, span_codes in explanation.items():
        for code in span_codes:
            if code in label_of_code:
                explanations.setdefault(label_of_code[code], []).append(span)
    noise.looked_at(fact)
    return Example(id=doc_id, text=fact, labels=tuple(sorted({label_of_code[c] for c in codes})),
                   explanations=noise.aligned(fact, explanations),
                   meta={"source_file": path.name, "doc_url": doc.get("doc_url", "")})


def report_unknown_codes(unknown: Counter, unknown_docs: list[str], unknown_labels: str) -> None:
    counts = ", ".join(f"{code!r} x{n}" for code, n in unknown.most_common())
    message = (f"unknown statute codes {counts} (not in data.label_map) in {len(unknown_docs)} document(s): "
               f"{', '.join(unknown_docs[:10])}")
    if unknown_labels == "error":
        raise UserError(f"{message}. Add the codes to data.label_map, or set data.unknown_labels=drop_label "
                        "(remove the code) or drop_document.")
    log.warning("%s; data.unknown_labels=%s", message, unknown_labels)


LABEL_MAP_KEYS = {"label", "description"}


def check_label_map(label_map) -> None:
    """``data.label_map``: statute code -> {label, description}, both text. A key besides those (what an
    unquoted comma in a YAML flow mapping makes of the rest of a description) or a missing label is named."""
    if not isinstance(label_map, Mapping) or not label_map:
        raise UserError("data.label_map: a mapping of statute codes to {label: ..., description: ...} is needed.")
    labels = []
    for code, entry in label_map.items():
        where = f"data.label_map.{code}"
        if not isinstance(entry, Mapping):
            raise UserError(f"{where}: {entry!r} is not a mapping; write {{label: IPC 302, description: \"...\"}}.")
        extra = sorted(str(k) for k in entry if k not in LABEL_MAP_KEYS)
        if extra:
            raise UserError(f"{where}: unknown key(s) {extra} (an entry has label and description). A comma inside "
                            "an unquoted description splits it: put the description in double quotes.")
        for key in LABEL_MAP_KEYS:
            if key in entry and not isinstance(entry[key], str) or key == "label" and not str(entry.get(key) or "").strip():
                raise UserError(f"{where}.{key}: {entry.get(key)!r} is not text. Give the section's "
                                f"{'label, e.g. IPC 302' if key == 'label' else 'description in double quotes'}.")
        labels.append(entry["label"])
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise UserError(f"data.label_map: labels {repeated} are given to more than one code; give each its own.")


class ProslexSource:
    """Resolves the split paths of a data config and reads them into one ``Task``."""

    license = "other"  # a model card's licence (the Hub's identifier): PROSLEX's authors' terms

    validation_from_train = True  # without a validation split, the protocol carves one out of Train

    def __init__(
        self,
        label_map: Mapping[str, Mapping[str, str]],
        root: str | None = None,
        train_path: str | None = None,
        val_path: str | None = None,
        test_path: str | None = None,
        unknown_labels: str = "drop_label",
        name: str = "proslex",
        multi_label: bool = True,
    ) -> None:
        self.name = name
        check_label_map(label_map)
        self.label_of_code = {code: entry["label"] for code, entry in label_map.items()}
        self.task = TaskSpec(
            name=name,
            labels=tuple(entry["label"] for entry in label_map.values()),
            multi_label=multi_label,
            label_descriptions={entry["label"]: entry.get("description", "") for entry in label_map.values()},
            statutes=True,
        )
        self.root = Path(root) if root else None
        self.paths = {"train": train_path, "val": val_path, "test": test_path}
        self.unknown_labels = unknown_labels

    def split_files(self, split: str) -> list[Path] | None:
        """Files of a split, or None when the config names none (only train is required)."""
        explicit = self.paths[split]
        if explicit:
            return collection_files(Path(explicit), f"data.{split}_path")
        if self.root is None:
            if split == "train":
                raise UserError(f"data.root and data.train_path are both unset. {SOURCE_HINT}.")
            return None
        if not self.root.is_dir() and self.paths["train"]:
            return None  # explicit paths alone; the default root need not exist
        if not self.root.is_dir():
            raise UserError(f"data.root: {self.root} is not a folder. {SOURCE_HINT}.")
        for folder in SPLIT_FOLDERS[split]:
            if (self.root / folder).is_dir():
                return collection_files(self.root / folder, "data.root")
        if split == "train":
            raise UserError(f"data.root: {self.root} has no Train/ folder. {SOURCE_HINT}.")
        return None

    def read(self, split: str, noise: NoiseCounts | None = None) -> list[Example] | None:
        files = self.split_files(split)
        if files is None:
            return None
        if len(files) == 1 and files[0].suffix.lower() == ".jsonl":  # FIRE 2026 lines, in PROSLEX's sections
            return read_fire_file(files[0], labelled=True, unknown_sections=self.unknown_labels, noise=noise,
                                  known=set(self.label_of_code.values()), keys=("data.unknown_labels", "data.label_map"))
        return read_split(files, self.label_of_code, self.unknown_labels, noise)

    def load(self) -> list[Task]:
        splits, notes = read_splits(self.read)
        if not self.task.multi_label:
            check_single_label({name: examples or [] for name, examples in splits.items()})
        return [Task(spec=self.task, train=splits["train"], val=splits["val"] or [], test=splits["test"], notes=notes)]

    def load_test(self) -> list[Task]:
        test = self.read("test")
        if test is None:
            raise UserError(f"no test split: set data.test_path, or data.root to a folder with Test/. {SOURCE_HINT}.")
        if not self.task.multi_label:
            check_single_label({"test": test})
        return [Task(spec=self.task, train=[], test=test)]


def shipped_codes() -> dict[str, str]:
    """PROSLEX's statute codes and their labels, as the shipped data config maps them (``s3`` -> ``IPC 302``)."""
    import yaml

    shipped = Path(__file__).resolve().parents[1] / "conf" / "data" / "proslex.yaml"
    return {code: entry["label"] for code, entry in yaml.safe_load(shipped.read_text())["label_map"].items()}


def read_collections(path: Path) -> list[Example]:
    """PROSLEX collection files (a file or a folder of them) read with the shipped label map."""
    return read_split(collection_files(path, "PROSLEX_SPLIT"), shipped_codes())


def check_single_label(splits: dict[str, list[Example]]) -> None:
    for split, examples in splits.items():
        for example in examples:
            if len(example.labels) != 1:
                raise UserError(
                    f"data.multi_label=false, but document {example.id!r} ({example.meta.get('source_file', '?')}, "
                    f"{split} split) has {len(example.labels)} labels: set data.multi_label=true."
                )
