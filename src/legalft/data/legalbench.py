"""LegalBench (Guha et al. 2023) in the layout of its repository and Hugging Face files::

    tasks/<task>/train.tsv  test.tsv  base_prompt.txt  README.md

The catalog ``legalbench_tasks.csv`` beside this file lists all 162 tasks with their reasoning
category, task type and metric (from the tasks' READMEs and LegalBench's evaluation code), so a
task is known even where its files are not. Label spaces come from the data.
"""

from __future__ import annotations

import csv
import difflib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from legalft.data.example import Example, Task, TaskSpec
from legalft.foundation.errors import UserError
from legalft.data.table_files import read_delimited
from legalft.foundation.io import atomic_folder, read_utf8
from legalft.foundation.path_names import component

CATALOG = Path(__file__).with_name("legalbench_tasks.csv")
HUB_REPO = "nguha/legalbench"
SOURCE_HINT = (
    "LegalBench comes from github.com/HazyResearch/legalbench (folder tasks/) or the Hugging Face "
    f"dataset {HUB_REPO}: set data.root to the folder that holds tasks/"
)
PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}")
# Free-text tasks: no fixed label space to score or to validate predictions against.
OPEN_METRICS = {"within_10pct", "stemmed_match", "contains", "manual", "f1"}


@dataclass(frozen=True)
class CatalogEntry:
    task: str
    category: str
    task_type: str
    metric: str


@cache
def catalog() -> dict[str, CatalogEntry]:
    with CATALOG.open(newline="") as f:
        return {row["task"]: CatalogEntry(**row) for row in csv.DictReader(f)}


def resolve_task_names(tasks) -> list[str]:
    """``all``, one name, or a list; unknown names get the closest known name suggested."""
    known = catalog()
    if tasks in (None, "all", ["all"]):
        return list(known)
    names = [tasks] if isinstance(tasks, str) else list(tasks)
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise UserError(f"data.tasks: no LegalBench task {name!r}.{hint} The 162 tasks are listed in {CATALOG}.")
    return names


def read_tsv(path: Path) -> list[dict[str, str]]:
    header, rows = read_delimited(path, "\t")
    if "answer" not in header:
        raise UserError(f"{path}: no 'answer' column (columns: {header}). Re-download the task's files.")
    return rows


def render(template: str, fields: dict[str, str], where: str) -> str:
    """Fill ``{{column}}`` placeholders; a placeholder without a value is an error, never left in."""
    missing = sorted(set(PLACEHOLDER.findall(template)) - set(fields))
    if missing:
        raise UserError(f"{where}: placeholder(s) {missing} have no column of that name (columns: {sorted(fields)}).")
    return PLACEHOLDER.sub(lambda m: str(fields[m.group(1)]), template)


def task_description(readme: str) -> str:
    """The one-line summary under the README's title ("### Classify if ...")."""
    match = re.search(r"^###\s*(.+)$", readme, flags=re.MULTILINE)
    return match.group(1).strip() if match else ""


def examples_from_rows(rows: list[dict[str, str]], path: Path, template: str) -> list[Example]:
    examples = []
    if rows:
        missing = sorted(set(PLACEHOLDER.findall(template)) - set(rows[0]))
        if missing:
            raise UserError(f"{path}: the prompt's placeholder(s) {missing} name no column of this file (columns: "
                            f"{sorted(k for k in rows[0] if k != 'answer')}). Fix the column names or base_prompt.txt.")
    for row in rows:
        fields = {k: v for k, v in row.items() if k not in ("answer", "index")}
        where = f"{path} row {row.get('index', '?')}"
        if not any(v.strip() for k, v in fields.items() if k in PLACEHOLDER.findall(template)):
            raise UserError(f"{where}: empty input. Fix or remove the row.")
        examples.append(
            Example(
                id=row.get("index", str(len(examples))),
                text=fields.get("text", ""),
                labels=(row["answer"].strip(),),
                fields=fields,
                meta={"slice": fields.get("slice", "")},
            )
        )
    return examples


class LegalBenchSource:

    license = "other"  # a model card's licence (the Hub's identifier): each LegalBench task carries its own licence
    validation_from_train = False  # a task's train split is a handful of demonstrations: none is carved off

    def __init__(self, root: str | None = None, tasks="all", splits=("train", "test"), hub: bool = False) -> None:
        self.root = Path(root) if root else None
        self.task_names = resolve_task_names(tasks)
        self.splits = tuple(splits)
        self.hub = hub

    def task_dir(self, name: str) -> Path:
        if self.hub:
            return self.download(name)
        if self.root is None or not (self.root / "tasks").is_dir():
            raise UserError(f"data.root: {self.root} has no tasks/ folder. {SOURCE_HINT}.")
        folder = self.root / "tasks" / component(name, "data.tasks")
        if not folder.is_dir():
            raise UserError(f"data.root: task {name!r} has no folder {folder}. {SOURCE_HINT}.")
        return folder

    def download(self, name: str) -> Path:
        """The task's folder from the hub's ``data.tar.gz`` (the dataset's loading script is not run:
        datasets 4 no longer runs scripts), extracted once next to the hub's cached archive."""
        import tarfile

        from huggingface_hub import hf_hub_download

        try:
            archive = Path(hf_hub_download(HUB_REPO, "data.tar.gz", repo_type="dataset"))
        except Exception as err:  # the hub client raises many types when offline
            raise UserError(
                f"data.hub=true: could not fetch {HUB_REPO} ({type(err).__name__}). Offline, download it once "
                f"(`hf download {HUB_REPO} --repo-type dataset`) or set data.hub=false and data.root. {SOURCE_HINT}."
            ) from None
        extracted = archive.parent / "extracted"
        if not extracted.exists():
            try:  # extracted whole: a killed or concurrent extraction never mixes with this one
                with atomic_folder(extracted) as partial, tarfile.open(archive) as tar:
                    tar.extractall(partial, filter="data")
            except OSError:
                if not extracted.is_dir():  # else another process extracted it first
                    raise
        folder = next((p for p in extracted.rglob(name) if p.is_dir() and (p / "train.tsv").exists()), None)
        if folder is None:
            raise UserError(f"data.hub=true: {HUB_REPO}'s data.tar.gz has no folder for task {name!r}.")
        return folder

    def load_task(self, name: str) -> Task:
        folder = self.task_dir(name)
        entry = catalog()[name]
        prompt_path = folder / "base_prompt.txt"
        base_prompt = read_utf8(prompt_path) if prompt_path.exists() else "{{text}}"
        template = base_prompt if PLACEHOLDER.search(base_prompt) else "{{text}}"
        # LegalBench names it README.md, but README.MD in a few tasks (abercrombie, rule_qa)
        readme = next((p for p in sorted(folder.iterdir()) if p.name.lower() == "readme.md"), None)
        splits: dict[str, list[Example] | None] = {}
        for split in ("train", "test"):
            path = folder / f"{split}.tsv"
            if split not in self.splits:
                splits[split] = None
            elif path.exists():
                splits[split] = examples_from_rows(read_tsv(path), path, template)
                if split == "test" and not splits[split]:  # a train split may be empty (rule_qa's is)
                    raise UserError(f"{path}: no rows below the header. Re-download the task's files. {SOURCE_HINT}.")
            elif split == "train":  # a few tasks (scalr) publish no train split; demonstrations then fail clearly
                splits[split] = []
            else:
                raise UserError(f"{path}: missing {split} split of task {name!r}. {SOURCE_HINT}.")
        train, test = splits["train"] or [], splits["test"]
        kind = "open" if entry.metric in OPEN_METRICS else "label"
        labels = sorted({e.labels[0] for e in train or test or []})
        if test and kind == "label":
            unseen = sorted({e.labels[0] for e in test} - set(labels))
            if unseen:
                raise UserError(
                    f"{folder / 'test.tsv'}: labels {unseen} never occur in the train split, so the prompt's label "
                    f"space {labels} lacks them. Check the task's files."
                )
        spec = TaskSpec(
            name=name,
            labels=tuple(labels),
            multi_label=False,
            metric=entry.metric,
            kind=kind,
            category=entry.category,
            description=task_description(read_utf8(readme)) if readme else "",
            ids_name_documents=False,  # `index` numbers each split's rows from 0
        )
        return Task(spec=spec, train=train, test=test, base_prompt=base_prompt)

    def load(self) -> list[Task]:
        return [self.load_task(name) for name in dict.fromkeys(self.task_names)]

    def load_test(self) -> list[Task]:
        return self.load()  # prompts and label spaces need the train splits too


def task_at(index: int) -> str:
    """The catalog's ``index``-th task: what one job of a SLURM array over all tasks runs."""
    names = list(catalog())
    if not 0 <= index < len(names):
        raise UserError(f"task index {index}: the catalog has tasks 0-{len(names) - 1} (sbatch --array=0-{len(names) - 1}).")
    return names[index]
