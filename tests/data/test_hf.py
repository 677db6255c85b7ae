"""data=hf and data=lexglue: datasets the tests build with the datasets library itself (a multi-label ClassLabel
sequence, paragraph lists, a save_to_disk folder, Parquet shards), read into tasks by their features; the hub's
loading tested with a mocked hub, and the real library offline."""

from __future__ import annotations

import json
import time

import pytest

from legalft.foundation.errors import UserError

datasets = pytest.importorskip("datasets")

ARTICLES = ["2", "3", "5"]
FACTS = [  # (paragraphs, violated articles by index)
    (["The applicant was detained for ten days.", "He was not brought before a judge."], [2]),
    (["Police officers beat the applicant in custody.", "No investigation followed."], [0, 1]),
    (["The applicant's house was searched.", "Nothing was found. He complained."], []),
    (["The applicant died in a police cell.", "The inquiry was closed."], [0]),
]


def ecthr_like(rows=FACTS, copies: int = 3) -> "datasets.Dataset":
    features = datasets.Features({"text": datasets.Sequence(datasets.Value("string")),
                                  "labels": datasets.Sequence(datasets.ClassLabel(names=ARTICLES))})
    rows = rows * copies
    return datasets.Dataset.from_dict({"text": [r[0] for r in rows], "labels": [r[1] for r in rows]}, features=features)


def test_a_save_to_disk_folder_of_paragraph_lists_reads_as_a_multi_label_task_named_by_its_features(tmp_path):
    from legalft.data.hf import HfSource
    from legalft.data.sentences import split_sentences

    folder = tmp_path / "saved"
    datasets.DatasetDict({"train": ecthr_like(), "test": ecthr_like(copies=1)}).save_to_disk(str(folder))
    (task,) = HfSource(path=str(folder)).load()
    assert task.spec.labels == tuple(ARTICLES) and task.spec.multi_label and task.spec.name == "saved"
    assert (len(task.train), task.val, len(task.test)) == (12, [], 4)
    first = task.train[0]
    assert first.id == "train-1" and first.text == "\n\n".join(FACTS[0][0]) and first.labels == ("5",)
    assert task.train[1].labels == ("2", "3") and task.train[2].labels == ()
    # a paragraph's end is a sentence's end, whatever its punctuation
    assert [s.text for s in split_sentences("Facts one\n\nfacts two.")] == ["Facts one", "facts two."]
    origin = task.origin
    assert origin["path"] == str(folder) and set(origin["fingerprints"]) == {"train", "test"}
    assert origin["fingerprints"]["train"] != origin["fingerprints"]["test"]


def test_parquet_shards_through_the_builder_keep_their_class_labels_and_files_are_fingerprinted(tmp_path):
    from legalft.data.hf import HfSource

    dataset = datasets.Dataset.from_dict(
        {"provision": ["Governing law is Delaware.", "Either party may terminate.", "Notices go by post.",
                       "This agreement is governed by French law."] * 3,
         "label": [0, 1, 2, 0] * 3},
        features=datasets.Features({"provision": datasets.Value("string"),
                                    "label": datasets.ClassLabel(names=["Governing Laws", "Terminations", "Notices"])}))
    shards = [tmp_path / f"train-{i}.parquet" for i in range(2)]
    for i, shard in enumerate(shards):
        dataset.shard(2, i, contiguous=True).to_parquet(str(shard))
    dataset.select(range(3)).to_parquet(str(tmp_path / "test.parquet"))
    source = HfSource(path="parquet", data_files={"train": str(tmp_path / "train-*.parquet"),
                                                  "test": str(tmp_path / "test.parquet")}, task="provisions")
    (task,) = source.load()
    assert task.spec.labels == ("Governing Laws", "Terminations", "Notices") and not task.spec.multi_label
    assert [e.labels for e in task.test] == [("Governing Laws",), ("Terminations",), ("Notices",)]
    assert task.test[0].text == "Governing law is Delaware." and len(task.train) == 12
    assert task.spec.metric == "balanced_accuracy"
    digests = task.origin["files"]
    assert set(digests) == {str(tmp_path / "test.parquet")} and all(d.startswith("sha256:") for d in digests.values())


def test_the_protocol_makes_the_validation_split_a_dataset_lacks(tmp_path):
    from omegaconf import OmegaConf

    from legalft.data.hf import HfSource
    from legalft.data.protocol import Protocol

    folder = tmp_path / "saved"
    datasets.DatasetDict({"train": ecthr_like(copies=5)}).save_to_disk(str(folder))
    source = HfSource(path=str(folder))
    protocol = Protocol(**{**OmegaConf.to_container(OmegaConf.load("conf/protocol/default.yaml")), "seed": 0})
    (task,) = protocol.applied(source.load(), source.validation_from_train)
    assert task.val and len(task.train) + len(task.val) == 20 and task.test is None


@pytest.mark.parametrize("build, message", [
    (lambda: datasets.Dataset.from_dict({"context": ["A holding."], "endings": [["a", "b", "c"]], "label": [1]}),
     r"multiple-choice task: column 'endings' holds each row's candidate answers"),
    (lambda: datasets.Dataset.from_dict({"passage": ["x"], "summary": ["y"], "label": ["a"]}),
     r"set data.text_column to one of its columns \(passage, summary, label\): passage, summary could be it"),
    (lambda: datasets.Dataset.from_dict({"text": ["x", "y"], "label": [0, -1]}, features=datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["a", "b"])})),
     r"split train, row 2: no label \(-1\): this split's labels are not published"),
    (lambda: datasets.Dataset.from_dict({"text": ["x", " "], "label": ["a", "b"]}),
     r"split train, row 2: text must be a non-empty text or list of paragraphs"),
])
def test_what_cannot_be_read_as_a_classification_task_is_one_message_naming_the_row_or_column(tmp_path, build, message):
    from legalft.data.hf import HfSource

    build().save_to_disk(str(tmp_path / "saved"))
    with pytest.raises(UserError, match=message):
        HfSource(path=str(tmp_path / "saved")).load()


class MockedHub:
    """``datasets.load_dataset`` as the hub would answer it, recording what it was asked."""

    def __init__(self, dataset):
        self.dataset, self.calls = dataset, []

    def __call__(self, path, name=None, **options):
        self.calls.append({"path": path, "name": name, **options})
        return self.dataset


def test_lexglue_by_name_asks_the_hub_for_the_task_and_describes_its_labels(monkeypatch):
    from legalft.data.lexglue import LexGlueSource

    issue_areas = [str(i) for i in range(1, 15)]
    split = datasets.Dataset.from_dict(
        {"text": ["The petitioner was convicted of murder.", "The union struck."], "label": [0, 6]},
        features=datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=issue_areas)}))
    hub = MockedHub(datasets.DatasetDict({"train": split, "validation": split, "test": split}))
    monkeypatch.setattr(datasets, "load_dataset", hub)
    (task,) = LexGlueSource(task="scotus", revision="a1b2c3").load()
    assert hub.calls == [{"path": "coastalcph/lex_glue", "name": "scotus", "revision": "a1b2c3", "data_files": None,
                          "cache_dir": None}]
    assert task.spec.name == "scotus" and task.spec.labels == tuple(issue_areas) and task.spec.metric == "macro_f1"
    assert task.spec.label_descriptions["1"] == "Criminal Procedure" and task.spec.label_descriptions["7"] == "Unions"
    assert [e.labels for e in task.test] == [("1",), ("7",)] and len(task.val) == 2
    assert task.origin == {"path": "coastalcph/lex_glue", "name": "scotus", "revision": "a1b2c3",
                           "fingerprints": {k: split._fingerprint for k in ("train", "val", "test")}}


@pytest.mark.parametrize("task, message", [
    ("case_hold", r"LexGLUE's multiple-choice task .* lm-evaluation-harness"),
    ("ecthr_c", r"one of ecthr_a, ecthr_b, scotus, eurlex, ledgar, unfair_tos"),
])
def test_lexglue_refuses_what_it_does_not_classify(task, message):
    from legalft.data.lexglue import LexGlueSource

    with pytest.raises(UserError, match=message):
        LexGlueSource(task=task)


def test_a_hub_name_offline_is_one_message_at_once_naming_the_offline_switch_and_local_copies(monkeypatch):
    from legalft.data import hf

    monkeypatch.setattr("legalft.foundation.hub.hub_unreachable", lambda: True)
    start = time.monotonic()
    with pytest.raises(UserError) as refused:
        hf.HfSource(path="coastalcph/lex_glue", name="ledgar").load()
    assert time.monotonic() - start < 20
    message = str(refused.value)
    assert "the hub is unreachable from here" in message and "HF_DATASETS_OFFLINE" in message
    assert "save_to_disk" in message and "data.data_files" in message


def test_train_py_on_a_saved_dataset_records_where_it_came_from_and_offline_lexglue_exits_2(tmp_path):
    from commands import run_script

    folder = tmp_path / "saved"
    datasets.DatasetDict({"train": ecthr_like(copies=6), "test": ecthr_like(copies=1)}).save_to_disk(str(folder))
    result = run_script("train.py", "method=classical", "data=hf", f"data.path={folder}", "data.task=facts",
                        f"hydra.run.dir={tmp_path / 'run'}")
    assert result.returncode == 0, result.stderr[-3000:]
    run = json.loads((tmp_path / "run" / "metrics.json").read_text())["run"]
    assert run["dataset"]["facts"]["path"] == str(folder)
    assert set(run["dataset"]["facts"]["fingerprints"]) == {"train", "test"}  # the dataset's own splits
    offline = run_script("train.py", "method=classical", "data=lexglue", "data.task=ledgar",
                         f"hydra.run.dir={tmp_path / 'offline'}", env={"HF_DATASETS_OFFLINE": "1"})
    assert offline.returncode == 2 and "HF_DATASETS_OFFLINE" in offline.stderr and "Traceback" not in offline.stderr
    assert not (tmp_path / "offline" / "metrics.json").exists()


def test_runs_of_one_method_that_read_other_files_for_a_task_are_not_averaged(tmp_path):
    from legalft.reporting.runs import Run, group_by_method

    def run(name, digest):
        info = {"method": "classical", "model": "tfidf", "seed": 0,
                "dataset": {"t": {"path": f"/mnt/{name}", "name": None, "revision": None, "files": {"a": digest}}}}
        return Run(path=tmp_path / name, info=info, tasks={"t": {}},
                   predictions={"t": [{"id": "1", "gold": ["a"]}]})

    assert len(group_by_method([run("a", "sha256:1"), run("b", "sha256:1")], "paper")) == 1  # moved, same contents
    with pytest.raises(UserError, match="scored t on different test sets"):
        group_by_method([run("a", "sha256:1"), run("b", "sha256:2")], "paper")


@pytest.mark.parametrize("given", ["folder", "script"])
def test_a_dataset_script_is_refused_before_any_run_folder_is_made(tmp_path, given):
    """datasets no longer runs loading scripts and the project never runs code from a data folder: one message, exit
    2, no run folder; the script is not run (it would write a file)."""
    from commands import run_script

    folder = tmp_path / "legal_ds"
    folder.mkdir()
    marker = tmp_path / "ran"
    (folder / "legal_ds.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    path = folder if given == "folder" else folder / "legal_ds.py"
    run_dir = tmp_path / "run"
    result = run_script("train.py", "method=classical", "data=hf", f"data.path={path}", f"hydra.run.dir={run_dir}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{folder / 'legal_ds.py'} is a dataset loading script" in result.stderr and "data.data_files" in result.stderr
    assert not run_dir.exists() and not marker.exists()


def write_csv(path, rows: list[str]):
    path.write_text("\n".join(rows) + ("\n" if rows else ""))
    return path


def test_csv_labels_are_the_files_text_and_json_booleans_read_as_true_and_false(tmp_path):
    from legalft.data.hf import HfSource

    rows = ["text,label"] + [f"clause {i} {'is' if i % 2 else 'is not'} hearsay,{'True' if i % 2 else 'false'}"
                             for i in range(8)]
    train = write_csv(tmp_path / "train.csv", rows)
    (task,) = HfSource(path="csv", data_files={"train": str(train)}).load()
    assert task.spec.labels == ("True", "false") and task.train[1].labels == ("True",)  # as the file spells them
    codes = write_csv(tmp_path / "codes.csv", ["text,label", "a clause,007", "another,1"])
    assert HfSource(path="csv", data_files=str(codes)).load()[0].spec.labels == ("007", "1")
    indexed = write_csv(tmp_path / "indexed.csv", ["text,label", "a clause,0", "another,1"])
    named = HfSource(path="csv", data_files=str(indexed), labels=["no", "yes"]).load()[0]
    assert [e.labels for e in named.train] == [("no",), ("yes",)]  # data.labels names a CSV's indices
    jsonl = tmp_path / "train.jsonl"
    jsonl.write_text("".join(json.dumps({"text": f"clause {i}", "label": bool(i % 2)}) + "\n" for i in range(4)))
    assert HfSource(path="json", data_files=str(jsonl)).load()[0].spec.labels == ("false", "true")


@pytest.mark.parametrize("rows, message", [([], "empty: a CSV file of data=hf needs a header line"),
                                           (["text,label"], r"a header \(text, label\) and no rows")])
def test_an_empty_or_header_only_csv_is_named(tmp_path, rows, message):
    from legalft.data.hf import HfSource

    path = write_csv(tmp_path / "train.csv", rows)
    with pytest.raises(UserError, match=f"{path}: {message}"):
        HfSource(path="csv", data_files={"train": str(path)}).load()
