"""Any dataset the Hugging Face ``datasets`` library loads (``data=hf``): a hub name with an optional config, a
packaged builder over local files (``parquet``, ``json``, ``csv`` with ``data_files``), or a folder
``save_to_disk`` wrote.

Its splits are the dataset's own (``train``; ``validation``, ``valid``, ``dev`` or ``val``; ``test``, or the names
``splits`` maps); ``conf/protocol`` makes the ones it lacks. Label kinds come from the dataset's features: a
``ClassLabel`` names the labels of a single-label task, a list of ``ClassLabel`` those of a multi-label one; plain
strings or integers are labels by their value (integers named by ``labels`` where given). A text that is a list of
paragraphs (ECtHR's facts) is joined with blank lines, which windows read through and evidence never crosses."""

from __future__ import annotations

import contextlib
import hashlib
import logging
from functools import cached_property
from pathlib import Path

from legalft.data.example import Example, Task, TaskSpec
from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)

PACKAGED_BUILDERS = ("parquet", "json", "csv", "arrow", "text", "imagefolder", "audiofolder", "webdataset")
SPLIT_NAMES = {"train": ("train",), "val": ("validation", "valid", "dev", "val"), "test": ("test",)}
TEXT_COLUMNS = ("text", "fact", "facts", "document", "content", "body", "input", "sentence", "context")
LABEL_COLUMNS = ("labels", "label")
# columns of a row's candidate answers: a multiple-choice task (LexGLUE's case_hold), not a classification one
CHOICE_COLUMNS = ("endings", "choices", "options", "candidates", "answers")
PARAGRAPH_JOIN = "\n\n"
OFFLINE_HINT = ("Set HF_DATASETS_OFFLINE=1 to read a dataset the local cache holds, or give a local copy: "
                "data.path=<folder save_to_disk wrote>, or data.path=parquet (json, csv) with data.data_files=<files>")


@contextlib.contextmanager
def offline_when_unreachable(path: str):
    """Loads inside this read the hub's files from the local cache alone when the hub cannot be asked: without it an
    offline machine waits out the hub client's retries (half a minute) before the same failure. The libraries read
    ``HF_DATASETS_OFFLINE`` / ``HF_HUB_OFFLINE`` once, at import, hence the module attributes."""
    from legalft.foundation.hub import hub_unreachable

    if Path(path).exists() or path in PACKAGED_BUILDERS or not hub_unreachable():
        yield
        return
    import datasets.config
    import huggingface_hub.constants

    was = datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE
    datasets.config.HF_HUB_OFFLINE = huggingface_hub.constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE = was


def is_saved_folder(path: Path) -> bool:
    """A folder ``Dataset.save_to_disk`` or ``DatasetDict.save_to_disk`` wrote."""
    return path.is_dir() and any((path / name).is_file() for name in ("dataset_dict.json", "state.json"))


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return f"sha256:{digest.hexdigest()[:16]}"


def listed(feature):
    """The element feature of a list feature (``List``, ``LargeList``, ``Sequence``, or ``[feature]``); None for
    any other."""
    import datasets

    if isinstance(feature, list) and len(feature) == 1:
        return feature[0]
    kinds = tuple(getattr(datasets, name) for name in ("List", "LargeList", "Sequence") if hasattr(datasets, name))
    return feature.feature if isinstance(feature, kinds) else None


def is_string(feature) -> bool:
    import datasets

    return isinstance(feature, datasets.Value) and feature.dtype in ("string", "large_string")


class HfSource:
    """``data=hf``. ``path``/``name``/``revision``/``data_files`` are ``load_dataset``'s (or ``path`` a
    ``save_to_disk`` folder); ``task`` names the task in results (default: ``name``, else the path's last part);
    ``splits`` maps train/val/test to the dataset's split names; ``labels`` names integer labels in index order;
    ``descriptions`` says what prompts say of each label."""

    license = "unknown"  # a model card's licence (the Hub's identifier): the dataset card's, where it states one
    validation_from_train = True  # a dataset without a validation split lends one from train (conf/protocol)
    labels_key = "data.labels"  # the config key that names integer labels, in messages

    def __init__(self, path: str, name: str | None = None, task: str | None = None,
                 data_files: str | list | dict | None = None, revision: str | None = None,
                 splits: dict[str, str] | None = None, text_column: str | None = None,
                 label_column: str | None = None, id_column: str | None = None, labels: list | None = None,
                 multi_label: bool | None = None, descriptions: dict[str, str] | None = None,
                 metric: str | None = None, category: str = "hf", cache_dir: str | None = None) -> None:
        if not path:
            raise UserError("data.path is unset: a hub name (coastalcph/lex_glue), a builder (parquet, json, csv) "
                            "with data.data_files, or a folder save_to_disk wrote.")
        self.path, self.name, self.revision, self.cache_dir = str(path), name, revision, cache_dir
        files = self.plain(data_files)
        if isinstance(files, dict):  # the config lists train, validation and test: those left null are not given
            files = {split: value for split, value in files.items() if value} or None
        self.data_files = files or None
        self.task_name = task or name or Path(self.path.rstrip("/")).name
        self.split_names = {key: (value,) for key, value in (splits or {}).items() if value}
        unknown = sorted(set(self.split_names) - set(SPLIT_NAMES))
        if unknown:
            raise UserError(f"data.splits: {unknown} are not train, val or test.")
        self.text_column, self.label_column, self.id_column = text_column, label_column, id_column
        self.label_names = [str(label) for label in labels] if labels else None
        self.multi_label = multi_label  # None: as the label column's feature says (a list: multi-label)
        self.descriptions, self.metric, self.category = dict(descriptions or {}), metric, category
        self.names: dict[str, str] = {}  # train/val/test -> the dataset's name of the split read as it

    # -- loading ---------------------------------------------------------------------------------------------------
    def where(self) -> str:
        return self.path + (f" ({self.name})" if self.name else "")

    @cached_property
    def splits(self) -> dict:
        """train/val/test -> the dataset's split (val and test absent where the dataset has none)."""
        import datasets

        loaded = self.loaded()
        if isinstance(loaded, datasets.Dataset):  # one split saved alone: the training data
            loaded = datasets.DatasetDict({"train": loaded})
        found = {}
        for key, names in SPLIT_NAMES.items():
            names = self.split_names.get(key, names)
            match = next((n for n in names if n in loaded), None)
            if match is None and key in self.split_names:
                raise UserError(f"data.splits.{key}={names[0]}: {self.where()} has no such split (it has "
                                f"{', '.join(loaded)}).")
            if match is not None:
                found[key] = loaded[match]
                self.names[key] = match
        if "train" not in found:
            raise UserError(f"{self.where()}: no train split (it has {', '.join(loaded)}). Name the one to train on "
                            "with data.splits.train=<split>.")
        return found

    def loaded(self):
        """The DatasetDict (or Dataset) the library loads for the config, or one message why it cannot."""
        import datasets

        if is_saved_folder(Path(self.path)):
            return datasets.load_from_disk(self.path)
        self.refuse_script()
        if self.path not in PACKAGED_BUILDERS and not Path(self.path).exists() and self.data_files is None:
            self.check_hub_name()
        features = self.csv_as_text() if self.path == "csv" else None
        try:
            with offline_when_unreachable(self.path):
                return datasets.load_dataset(self.path, self.name, data_files=self.plain(self.data_files),
                                             revision=self.revision, cache_dir=self.cache_dir,
                                             **({"features": features} if features else {}))
        except (ConnectionError, OSError) as err:  # offline, not in the cache, or files that are not there
            raise self.unreadable(err) from None
        except ValueError as err:  # a config name the dataset lacks, or data files that match nothing
            raise UserError(f"data: {self.where()}: {str(err).splitlines()[0][:400]}") from None
        except Exception as err:  # the library's DatasetNotFoundError, DatasetGenerationError, ...
            if type(err).__module__.startswith(("datasets", "huggingface_hub", "pyarrow")):
                raise self.unreadable(err) from None
            raise

    def csv_files(self) -> list[Path]:
        """The local files ``data.data_files`` names (globs expanded), in split order."""
        import glob

        files = self.plain(self.data_files)
        given = (files.values() if isinstance(files, dict) else [files]) if files else []
        names = [name for entry in given for name in ([entry] if isinstance(entry, str) else entry)]
        return [Path(path) for name in names for path in (sorted(glob.glob(name)) or [name])]

    def csv_as_text(self):
        """Every column of CSV files read as the text the file holds (pandas would read ``true`` as a boolean and
        ``007`` as 7), as the other sources read a file's labels; an empty or header-only file named."""
        import csv

        import datasets

        header = None
        for path in self.csv_files():
            if not path.is_file():
                continue  # the library names a file that is not there
            with open(path, newline="", encoding="utf-8-sig", errors="replace") as stream:
                rows = csv.reader(stream)
                first = next(rows, None)
                if first is None or not any(cell.strip() for cell in first):
                    raise UserError(f"{path}: empty: a CSV file of data=hf needs a header line (its column names) and "
                                    "a row per document.")
                if next(rows, None) is None:
                    raise UserError(f"{path}: a header ({', '.join(first)}) and no rows: a CSV file of data=hf needs a "
                                    "row per document.")
            header = header or first
        if header is None:
            return None
        return datasets.Features({name: datasets.Value("string") for name in header})

    def refuse_script(self) -> None:
        """A dataset loading script (a ``.py`` file, or a folder holding ``<its name>.py``), which ``datasets`` no longer
        runs and this project never runs: named before anything is read."""
        path = Path(self.path)
        script = path if path.suffix == ".py" else path / f"{path.name}.py"
        if script.is_file():
            raise UserError(f"data.path={self.path}: {script} is a dataset loading script, code that neither datasets "
                            "(since 4.0) nor this project runs. Give the dataset's files instead (data.path=parquet, json "
                            "or csv with data.data_files.train=..., data.data_files.test=...), or a folder "
                            "save_to_disk wrote.")

    def check_hub_name(self) -> None:
        from huggingface_hub.utils import HFValidationError, validate_repo_id

        try:
            validate_repo_id(self.path)
        except HFValidationError:
            raise UserError(f"data.path={self.path}: no such folder or file, and not a hub dataset name "
                            "(owner/name).") from None

    def unreadable(self, err: Exception) -> UserError:
        from legalft.foundation.hub import hub_unreachable

        reason = str(err).splitlines()[0][:300] if str(err) else type(err).__name__
        cause = err.__cause__ or err.__context__  # the library's "An error occurred while generating the dataset"
        if cause is not None and str(cause).strip():
            reason += f" ({type(cause).__name__}: {str(cause).strip().splitlines()[0][:300]})"
        if Path(self.path).exists() or self.path in PACKAGED_BUILDERS:
            return UserError(f"data: {self.where()} could not be read: {reason}.")
        offline = " (the hub is unreachable from here, and the local cache does not hold it)" if hub_unreachable() else ""
        return UserError(f"data: {self.where()} could not be loaded from the Hugging Face Hub{offline}: {reason}. "
                         f"{OFFLINE_HINT}.")

    @staticmethod
    def plain(value):
        """Hydra's list and dict configs as the plain values ``load_dataset`` checks for."""
        from omegaconf import DictConfig, ListConfig, OmegaConf

        return OmegaConf.to_container(value) if isinstance(value, (DictConfig, ListConfig)) else value

    # -- columns and labels ---------------------------------------------------------------------------------------
    @cached_property
    def columns(self) -> tuple[str, str, str | None]:
        """(text, label, id) column of the training split: named in the config or found."""
        features = self.splits["train"].features
        self.refuse_multiple_choice(features)
        not_text = {*LABEL_COLUMNS, self.label_column, self.id_column, "id"}
        text = self.column(features, self.text_column, "data.text_column", TEXT_COLUMNS,
                           lambda n, f: n not in not_text and (is_string(f) or is_string(listed(f))))
        label = self.column(features, self.label_column, "data.label_column", LABEL_COLUMNS,
                            lambda n, f: self.is_class_label(f) or self.is_class_label(listed(f)))
        identity = self.id_column or ("id" if "id" in features else None)
        if identity is not None and identity not in features:
            raise UserError(f"data.id_column={identity}: {self.where()} has no such column (it has {', '.join(features)}).")
        return text, label, identity

    @staticmethod
    def is_class_label(feature) -> bool:
        import datasets

        return isinstance(feature, datasets.ClassLabel)

    def column(self, features, given: str | None, key: str, names: tuple[str, ...], fits) -> str:
        if given:
            if given not in features:
                raise UserError(f"{key}={given}: {self.where()} has no such column (it has {', '.join(features)}).")
            return given
        found = [n for n in names if n in features] or [n for n, f in features.items() if fits(n, f)]
        if len(found) != 1 and not (found and found[0] in names):
            raise UserError(f"{self.where()}: set {key} to one of its columns ({', '.join(features)}): "
                            f"{'none' if not found else ', '.join(found)} could be it.")
        return found[0]

    def refuse_multiple_choice(self, features) -> None:
        choices = [n for n in CHOICE_COLUMNS if n in features and is_string(listed(features[n]))]
        if choices:
            raise UserError(f"{self.where()} is a multiple-choice task: column {choices[0]!r} holds each row's candidate "
                            "answers and the label picks one of them. data=hf reads classification datasets (a text, "
                            "and labels from one label set); score a multiple-choice task with an in-context harness "
                            "such as lm-evaluation-harness instead.")

    @cached_property
    def label_kind(self) -> tuple[tuple[str, ...] | None, bool]:
        """(the label names the features or ``labels`` give, None where the values are the names; multi-label)."""
        feature = self.splits["train"].features[self.columns[1]]
        element = listed(feature)
        multi = element is not None if self.multi_label is None else self.multi_label
        inner = element if element is not None else feature
        if self.is_class_label(inner):
            names = tuple(self.label_names or inner.names)
            if len(names) != inner.num_classes:
                raise UserError(f"{self.labels_key}: {len(names)} names for the dataset's {inner.num_classes} classes.")
            return names, multi
        return (tuple(self.label_names) if self.label_names else None), multi

    def labels_of(self, value, where: str) -> tuple[str, ...]:
        names, multi = self.label_kind
        values = value if multi else [value]
        if not isinstance(values, list):
            raise UserError(f"{where}: labels must be a list of label indices or names, not {value!r}.")
        labels = []
        for label in values:
            if isinstance(label, bool):  # a JSON true or false: its text in the file
                label = "true" if label else "false"
            if isinstance(label, str) and label.strip().isdigit() and names is not None and label not in names \
                    and self.label_names is not None:  # a CSV's index, read as text, of the labels data.labels names
                label = int(label)
            if isinstance(label, int) and not isinstance(label, bool):
                if label < 0 and not multi:  # ClassLabel's -1: a row without a label (a hidden test split)
                    raise UserError(f"{where}: no label (-1): this split's labels are not published; score on another "
                                    "split (data.splits.test=<split>).")
                if names is None:
                    labels.append(str(label))
                    continue
                if not 0 <= label < len(names):
                    raise UserError(f"{where}: label {label!r} is neither an index below {len(names)} nor one of "
                                    f"{self.labels_key} ({', '.join(names)}).")
                labels.append(names[label])
            elif isinstance(label, str) and label.strip() and (names is None or label in names):
                labels.append(label.strip())
            else:
                known = f" ({', '.join(names)})" if names else ""
                raise UserError(f"{where}: label {label!r} is not one of the task's labels{known}.")
        if not labels and not multi:
            raise UserError(f"{where}: no label. Fix or filter the row.")
        order = names or sorted(set(labels))
        return tuple(sorted(set(labels), key=order.index))

    def text_of(self, value, where: str) -> str:
        if isinstance(value, list) and all(isinstance(p, str) for p in value):
            value = PARAGRAPH_JOIN.join(p.strip() for p in value if p.strip())
        if not isinstance(value, str) or not value.strip():
            raise UserError(f"{where}: text must be a non-empty text or list of paragraphs. Fix or filter the row "
                            "(dataset.filter), and give the copy as data.path.")
        return value.strip()

    # -- the source ------------------------------------------------------------------------------------------------
    def read(self, split: str) -> list[Example] | None:
        dataset = self.splits.get(split)
        if dataset is None:
            return None
        text, label, identity = self.columns
        name = self.names[split]
        missing = [c for c in (text, label, identity) if c and c not in dataset.column_names]
        if missing:
            raise UserError(f"{self.where()}: split {name} has no column {missing}.")
        examples = []
        for number, row in enumerate(dataset.select_columns([c for c in (text, label, identity) if c]), start=1):
            row_id = str(row[identity]) if identity else f"{name}-{number}"
            where = self.row_place(name, number)
            examples.append(Example(id=row_id, text=self.text_of(row[text], where),
                                    labels=self.labels_of(row[label], where),
                                    meta={"source_file": f"{self.task_name}:{name}"}))
        if not examples:
            raise UserError(f"{self.where()}: split {name} has no rows.")
        return examples

    def row_place(self, split: str, number: int) -> str:
        """Where a row is, in messages (rows counted from 1)."""
        return f"{self.where()}: split {split}, row {number}"

    def spec(self, train: list[Example], held_out: list[Example]) -> TaskSpec:
        names, multi = self.label_kind
        labels = names if names is not None else tuple(sorted({label for e in train for label in e.labels}))
        unseen = sorted({label for e in held_out for label in e.labels} - set(labels))
        if unseen:
            raise UserError(f"{self.where()}: labels {unseen} occur in the validation or test split but never in "
                            "train, so no method can learn them.")
        return TaskSpec(name=self.task_name, labels=labels, multi_label=multi,
                        label_descriptions={label: self.descriptions.get(label, "") for label in labels},
                        metric=self.metric or ("macro_f1" if multi else "balanced_accuracy"), category=self.category)

    def load(self) -> list[Task]:
        from legalft.data.splitting import check_disjoint

        train, val, test = self.read("train"), self.read("val") or [], self.read("test")
        if self.columns[2] is not None:
            check_disjoint({"train": train, "val": val, "test": test or []})
        return [Task(spec=self.spec(train, val + (test or [])), train=train, val=val, test=test,
                     origin=self.origin())]

    def load_test(self) -> list[Task]:
        (task,) = self.load()  # the label space comes from the training split
        if task.test is None:
            raise UserError(f"{self.where()}: no test split. Name one with data.splits.test=<split>.")
        return [task]

    def origin(self) -> dict:
        """What the run records of the dataset (``run.dataset``): where it was loaded from (name, config and revision,
        or each local file's digest) and the ``datasets`` fingerprint of each split."""
        record = {"path": self.path, "name": self.name, "revision": self.revision,
                  "fingerprints": {key: split._fingerprint for key, split in self.splits.items()}}
        local = [Path(self.path)] if Path(self.path).is_file() else []
        files = self.plain(self.data_files)
        if files is not None:
            groups = files.values() if isinstance(files, dict) else [files]
            local += [Path(f) for group in groups for f in ([group] if isinstance(group, str) else group)]
        if local:
            record["files"] = {str(p): file_digest(p) for p in local if p.is_file()}
        return record
