"""LexGLUE's ECtHR Task A (``data=ecthr``): the facts of a European Court of Human Rights case, a list of
paragraphs, and the articles of the Convention the court found violated (multi-label; none at all is a
valid answer). Read from the ``lex_glue`` dataset's ``ecthr_a`` configuration as exported by ``datasets``
(``dataset.to_json`` or ``to_parquet``): one file per split, one row per case with ``text`` (the list of
facts paragraphs) and ``labels`` (class indices into the ten articles, or the articles' names).

The paragraphs are joined with blank lines into one document, read in windows like any long document; a
case's id is ``<split>-<row>`` (the export has none), or its ``id`` column where it has one."""

from __future__ import annotations

from pathlib import Path

from legalft.data.hf import HfSource
from legalft.foundation.errors import UserError

SOURCE_HINT = ("Export it with the datasets library: load_dataset('lex_glue', 'ecthr_a') and, per split, "
               "dataset[split].to_json('<root>/<split>.jsonl') (or to_parquet('<root>/<split>.parquet'))")
SPLIT_FILES = {"train": "train", "val": "validation", "test": "test"}
BUILDERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet"}


class EcthrSource(HfSource):
    """``data=ecthr``: ``root`` holds ``train``, ``validation`` and ``test`` files (``.jsonl``, ``.json`` or
    ``.parquet``); ``train_path`` / ``val_path`` / ``test_path`` win over it. ``articles`` are the label
    names, in the order the export's class indices count them; ``descriptions`` what prompts say of each.
    Each file is loaded by the ``datasets`` builder of its format, and read as ``data=hf`` reads any dataset."""

    license = "other"  # a model card's licence (the Hub's identifier): the terms LexGLUE's ECtHR is published under
    labels_key = "data.articles"

    def __init__(self, articles: list[str], root: str | None = None, train_path: str | None = None,
                 val_path: str | None = None, test_path: str | None = None, name: str = "ecthr_a",
                 descriptions: dict[str, str] | None = None) -> None:
        if not articles or len(set(articles)) != len(articles):
            raise UserError("data.articles: list each article once (Task A's ten, as conf/data/ecthr.yaml does).")
        self.root = Path(root) if root else None
        self.paths = {"train": train_path, "val": val_path, "test": test_path}
        files = {SPLIT_FILES[split]: str(path) for split in SPLIT_FILES if (path := self.file(split))}
        super().__init__(path=str(self.root or files["train"]), task=name, data_files=files, text_column="text",
                         label_column="labels", labels=[str(a) for a in articles], multi_label=True,
                         descriptions=descriptions,
                         metric="macro_f1", category="ecthr")

    def file(self, split: str) -> Path | None:
        """The split's file, or None where the config names none and the root holds none (train is required)."""
        if self.paths[split]:
            path = Path(self.paths[split])
            if not path.is_file():
                raise UserError(f"data.{split}_path={path}: no such file. {SOURCE_HINT}.")
            if path.suffix not in BUILDERS:
                raise UserError(f"data.{split}_path={path}: neither .jsonl, .json nor .parquet. {SOURCE_HINT}.")
            return path
        found = [self.root / f"{SPLIT_FILES[split]}{suffix}" for suffix in BUILDERS] if self.root else []
        found = [path for path in found if path.is_file()]
        if not found and split == "train":
            raise UserError(f"data.root={self.root}: no {SPLIT_FILES['train']}.jsonl or .parquet there, and "
                            f"data.train_path is unset. {SOURCE_HINT}.")
        return found[0] if found else None

    def loaded(self):
        """Each split's file through the builder of its format (a JSON Lines train split beside a Parquet test one)."""
        import datasets

        loaded = {}
        for split, file in self.data_files.items():
            try:
                loaded[split] = datasets.load_dataset(BUILDERS[Path(file).suffix], data_files={split: file}, split=split,
                                                      cache_dir=self.cache_dir)
            except Exception as err:  # pyarrow's and the builder's errors for a file that is not what it says
                if not type(err).__module__.startswith(("datasets", "pyarrow")) and not isinstance(err, (OSError, ValueError)):
                    raise
                cause = err.__cause__ or err
                raise UserError(f"{file}: not readable as lex_glue's ecthr export ({str(cause).splitlines()[0][:300]}). "
                                f"{SOURCE_HINT}.") from None
        return datasets.DatasetDict(loaded)

    def row_place(self, split: str, number: int) -> str:
        return f"{self.data_files[split]}: row {number}"

    def text_of(self, value, where: str) -> str:
        if not (isinstance(value, list) and any(isinstance(p, str) and p.strip() for p in value)):
            raise UserError(f"{where}: text must be the case's facts, a non-empty list of paragraphs.")
        return super().text_of(value, where)
