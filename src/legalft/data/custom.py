"""A user's own labelled legal dataset: CSV, TSV or JSON Lines files, one row per document.

``conf/data/custom.yaml`` names the files and columns. Files are read row by row
(``legalft.data.table_files``), so a bad row is named by file and row. A label column holds one label
per row, or for multi-label data a JSON list (a JSON Lines list, or a CSV/TSV cell holding one, e.g.
``["IPC 302", "IPC 201"]``) or labels joined by ``label_separator``. Without a validation file, the
protocol's stratified ``val_fraction`` of train becomes validation; without a test file, its
``test_fraction`` of train (if set) becomes test (``legalft.data.protocol``).
"""

from __future__ import annotations

from pathlib import Path

from legalft.data.example import Example, Task, TaskSpec
from legalft.data.table_files import read_delimited, read_json_lines
from legalft.foundation.errors import UserError

DELIMITERS = {".csv": ",", ".tsv": "\t"}
JSON_LINES = (".jsonl", ".json")


def read_rows(path: Path, key: str) -> list[dict]:
    if not path.is_file():
        raise UserError(f"{key}: {path} is not a file. Point it at a CSV, TSV or JSON Lines file.")
    suffix = path.suffix.lower()
    if suffix in JSON_LINES:
        return read_json_lines(path)
    if suffix in DELIMITERS:
        return read_delimited(path, DELIMITERS[suffix])[1]
    raise UserError(f"{key}: {path} is neither .csv, .tsv nor .jsonl: rename it or convert it.")


def json_list_cell(cell: str, where: str, column: str) -> list:
    """A CSV/TSV cell that holds a JSON list of labels."""
    import json

    try:
        value = json.loads(cell)
    except ValueError as err:
        raise UserError(f"{where}: column {column!r} starts like a JSON list but is not one ({err.msg} at character "
                        f"{err.pos}): {cell[:60]!r}. Write it as [\"a\", \"b\"], or join labels with "
                        "data.label_separator.") from None
    if not isinstance(value, list):
        raise UserError(f"{where}: column {column!r} holds {cell[:60]!r}, not a JSON list of labels.")
    return value


class CustomSource:

    license = "unknown"  # a model card's licence (the Hub's identifier): a user's own data: its licence is the user's to state
    validation_from_train = True  # without a validation file, the protocol carves one out of training

    def __init__(self, train_path: str, name: str = "custom", val_path: str | None = None,
                 test_path: str | None = None, text_column: str = "text", label_column: str = "label",
                 id_column: str | None = None, multi_label: bool = False, label_separator: str = ";",
                 descriptions: dict[str, str] | None = None) -> None:
        self.name = name
        self.paths = {"train": train_path, "val": val_path, "test": test_path}
        self.text_column, self.label_column, self.id_column = text_column, label_column, id_column
        self.multi_label, self.label_separator = multi_label, label_separator
        self.descriptions = dict(descriptions or {})

    def labels_of(self, value, where: str) -> tuple[str, ...]:
        if self.multi_label and isinstance(value, str) and value.lstrip().startswith("["):
            value = json_list_cell(value, where, self.label_column)
        values = value if isinstance(value, list) else (
            str(value).split(self.label_separator) if self.multi_label else [value])
        if any(isinstance(v, (list, dict)) for v in values):
            raise UserError(f"{where}: column {self.label_column!r} holds a nested list or an object; a row's labels "
                            "are a flat list of names, e.g. [\"IPC 302\", \"IPC 201\"].")
        labels = tuple(sorted({str(v).strip() for v in values if v is not None and str(v).strip()}))
        if not labels:
            raise UserError(f"{where}: no label in column {self.label_column!r}. Fix or remove the row.")
        if len(labels) > 1 and not self.multi_label:
            raise UserError(f"{where}: {len(labels)} labels {list(labels)}, but data.multi_label=false: set "
                            "data.multi_label=true.")
        return labels

    def read(self, split: str) -> list[Example] | None:
        if not self.paths[split]:
            return None
        path, key = Path(self.paths[split]), f"data.{split}_path"
        rows = read_rows(path, key)
        columns = [self.text_column, self.label_column] + ([self.id_column] if self.id_column else [])
        missing = [c for c in columns if rows and c not in rows[0]]
        if missing:
            raise UserError(f"{path}: no column {missing} (columns: {sorted(rows[0])}). Set data.text_column, "
                            "data.label_column or data.id_column to the file's names.")
        examples = []
        for number, row in enumerate(rows, start=1):
            absent = [c for c in columns if c not in row]  # JSON Lines rows each name their own columns
            if absent:
                raise UserError(f"{path} row {number}: no column {absent} (it has {sorted(row)}). Fix or remove the row.")
            row_id = str(row[self.id_column]) if self.id_column else f"{split}-{number}"
            where = f"{path} row {number} (id {row_id!r})"
            text = row[self.text_column]
            if not isinstance(text, str) or not text.strip():
                raise UserError(f"{where}: empty {self.text_column!r}. Fix or remove the row.")
            fields = {k: str(v) for k, v in row.items() if k not in (self.label_column,)}
            examples.append(Example(id=row_id, text=text.strip(), labels=self.labels_of(row[self.label_column], where),
                                    fields={**fields, "text": text.strip()}, meta={"source_file": path.name}))
        if not examples:
            raise UserError(f"{path}: no rows.")
        ids = [e.id for e in examples]
        if len(set(ids)) != len(ids):
            duplicated = sorted({i for i in ids if ids.count(i) > 1})[:5]
            raise UserError(f"{path}: ids {duplicated} appear more than once in column {self.id_column!r}.")
        return examples

    def load(self) -> list[Task]:
        train, val, test = self.read("train"), self.read("val") or [], self.read("test")
        if train is None:
            raise UserError("data.train_path is unset: point it at the training file (CSV, TSV or JSON Lines).")
        return [Task(spec=self.spec(train, val + (test or [])), train=train, val=val, test=test)]

    def load_test(self) -> list[Task]:
        return self.load()  # the label space comes from the training file

    def spec(self, train: list[Example], held_out: list[Example]) -> TaskSpec:
        labels = tuple(sorted({label for e in train for label in e.labels}))
        unseen = sorted({label for e in held_out for label in e.labels} - set(labels))
        if unseen:
            raise UserError(f"data: labels {unseen} occur in the validation or test data but never in "
                            f"{self.paths['train']}, so no method can learn them. Add training rows for them.")
        return TaskSpec(
            name=self.name, labels=labels, multi_label=self.multi_label,
            label_descriptions={label: self.descriptions.get(label, "") for label in labels},
            # how a single-label task is scored when prompted (LegalBench's classification metric)
            metric="macro_f1" if self.multi_label else "balanced_accuracy", category="custom",
        )
