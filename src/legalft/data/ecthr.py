"""LexGLUE's ECtHR Task A (``data=ecthr``): the facts of a European Court of Human Rights case, a list of
paragraphs, and the articles of the Convention the court found violated (multi-label; none at all is a
valid answer). Read from the ``lex_glue`` dataset's ``ecthr_a`` configuration as exported by ``datasets``
(``dataset.to_json`` or ``to_parquet``): one file per split, one row per case with ``text`` (the list of
facts paragraphs) and ``labels`` (class indices into the ten articles, or the articles' names).

The paragraphs are joined with blank lines into one document, read in windows like any long document; a
case's id is ``<split>-<row>`` (the export has none), or its ``id`` column where it has one."""

from __future__ import annotations

from pathlib import Path

from legalft.data.example import Example, Task, TaskSpec
from legalft.foundation.errors import UserError

SOURCE_HINT = ("Export it with the datasets library: load_dataset('lex_glue', 'ecthr_a') and, per split, "
               "dataset[split].to_json('<root>/<split>.jsonl') (or to_parquet('<root>/<split>.parquet'))")
SPLIT_FILES = {"train": "train", "val": "validation", "test": "test"}
SUFFIXES = (".jsonl", ".json", ".parquet")


def read_rows(path: Path) -> list[tuple[int, dict]]:
    """(row number from 1, row) of a JSON Lines or Parquet export."""
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise UserError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow), or export the split as "
                            "JSON Lines instead.") from None
        try:
            table = pq.read_table(path)
        except Exception as err:  # pyarrow's errors for a file that is not Parquet or is truncated
            raise UserError(f"{path}: not a readable Parquet file ({str(err).splitlines()[0][:200]}).") from None
        return list(enumerate(table.to_pylist(), start=1))
    from legalft.data.table_files import numbered_json_lines

    return numbered_json_lines(path)


class EcthrSource:
    """``data=ecthr``: ``root`` holds ``train``, ``validation`` and ``test`` files (``.jsonl``, ``.json`` or
    ``.parquet``); ``train_path`` / ``val_path`` / ``test_path`` win over it. ``articles`` are the label
    names, in the order the export's class indices count them; ``descriptions`` what prompts say of each."""

    license = "other"  # a model card's licence (the Hub's identifier): the terms LexGLUE's ECtHR is published under

    validation_from_train = True  # an export without a validation file lends one from train (conf/protocol)

    def __init__(self, articles: list[str], root: str | None = None, train_path: str | None = None,
                 val_path: str | None = None, test_path: str | None = None, name: str = "ecthr_a",
                 descriptions: dict[str, str] | None = None) -> None:
        if not articles or len(set(articles)) != len(articles):
            raise UserError("data.articles: list each article once (Task A's ten, as conf/data/ecthr.yaml does).")
        self.articles, self.name = [str(a) for a in articles], name
        self.root = Path(root) if root else None
        self.paths = {"train": train_path, "val": val_path, "test": test_path}
        self.spec = TaskSpec(name=name, labels=tuple(self.articles), multi_label=True, category="ecthr",
                             label_descriptions={a: (descriptions or {}).get(a, "") for a in self.articles})

    def file(self, split: str) -> Path | None:
        """The split's file, or None where the config names none and the root holds none (train is required)."""
        if self.paths[split]:
            path = Path(self.paths[split])
            if not path.is_file():
                raise UserError(f"data.{split}_path={path}: no such file. {SOURCE_HINT}.")
            return path
        found = [self.root / f"{SPLIT_FILES[split]}{suffix}" for suffix in SUFFIXES] if self.root else []
        found = [path for path in found if path.is_file()]
        if not found and split == "train":
            raise UserError(f"data.root={self.root}: no {SPLIT_FILES['train']}.jsonl or .parquet there, and "
                            f"data.train_path is unset. {SOURCE_HINT}.")
        return found[0] if found else None

    def labels_of(self, value, where: str) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise UserError(f"{where}: labels must be a list of article indices or names, not {value!r}.")
        labels = []
        for label in value:
            if isinstance(label, int) and not isinstance(label, bool) and 0 <= label < len(self.articles):
                labels.append(self.articles[label])
            elif isinstance(label, str) and label in self.articles:
                labels.append(label)
            else:
                raise UserError(f"{where}: label {label!r} is neither an index below {len(self.articles)} nor one of "
                                f"data.articles ({', '.join(self.articles)}).")
        return tuple(sorted(set(labels), key=self.articles.index))

    def read(self, split: str) -> list[Example] | None:
        path = self.file(split)
        if path is None:
            return None
        examples = []
        for number, row in read_rows(path):
            where = f"{path}: row {number}"
            text = row.get("text")
            if isinstance(text, list) and all(isinstance(p, str) for p in text):
                text = "\n\n".join(p.strip() for p in text if p.strip())
            if not isinstance(text, str) or not text.strip():
                raise UserError(f"{where}: text must be the case's facts, a non-empty list of paragraphs.")
            row_id = str(row["id"]) if row.get("id") is not None else f"{SPLIT_FILES[split]}-{number}"
            examples.append(Example(id=row_id, text=text, labels=self.labels_of(row.get("labels"), where),
                                    meta={"source_file": path.name}))
        if not examples:
            raise UserError(f"{path}: no cases in the file. {SOURCE_HINT}.")
        return examples

    def load(self) -> list[Task]:
        train, val, test = self.read("train"), self.read("val") or [], self.read("test")
        check_disjoint({"train": train, "val": val, "test": test or []})
        return [Task(spec=self.spec, train=train, val=val, test=test)]

    def load_test(self) -> list[Task]:
        test = self.read("test")
        if test is None:
            raise UserError(f"no test split: set data.test_path, or data.root to a folder with test.jsonl. {SOURCE_HINT}.")
        return [Task(spec=self.spec, train=[], test=test)]


def check_disjoint(splits: dict[str, list[Example]]) -> None:
    """Refuse document ids shared between splits: that is train/test leakage."""
    seen: dict[str, str] = {}
    for split, examples in splits.items():
        for example in examples:
            if example.id in seen and seen[example.id] != split:
                raise UserError(
                    f"document {example.id!r} is in both the {seen[example.id]} and the {split} split "
                    f"({example.meta.get('source_file', '?')}): remove it from one of them."
                )
            seen[example.id] = split
