"""LexGLUE's ECtHR Task A (data=ecthr): the lex_glue export's JSON Lines and Parquet files read into one
multi-label task, bad rows named, and the shipped invented sample trained, cross-validated and rescored
by the methods like any other source."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from legalft.data.ecthr import EcthrSource
from legalft.foundation.errors import UserError

SAMPLE = ROOT / "src" / "legalft" / "samples" / "ecthr_sample"
ARTICLES = ["2", "3", "5", "6", "8", "9", "10", "11", "14", "P1-1"]


def write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_the_sample_reads_as_task_a_paragraphs_joined_and_indices_named():
    (task,) = EcthrSource(ARTICLES, root=str(SAMPLE)).load()
    assert task.spec.labels == tuple(ARTICLES) and task.spec.multi_label
    assert (len(task.train), len(task.val), len(task.test)) == (40, 12, 12)
    first = json.loads((SAMPLE / "train.jsonl").read_text().splitlines()[0])
    example = task.train[0]
    assert example.id == "train-1" and example.text == "\n\n".join(first["text"])
    assert example.labels == tuple(ARTICLES[i] for i in first["labels"])
    assert any(not e.labels for e in task.train)  # a case without a violation is a valid answer
    (rescored,) = EcthrSource(ARTICLES, root=str(SAMPLE)).load_test()
    assert [e.id for e in rescored.test] == [e.id for e in task.test] and rescored.spec == task.spec


def test_parquet_reads_as_json_lines_does(tmp_path):
    pyarrow = pytest.importorskip("pyarrow")  # the dev extra installs it
    import pyarrow.parquet as pq

    rows = [{"text": ["The applicant was beaten.", "He was detained."], "labels": [1, 2]},
            {"text": ["His land was taken."], "labels": []}]
    pq.write_table(pyarrow.Table.from_pylist(rows), tmp_path / "train.parquet")
    write(tmp_path / "test.jsonl", rows)
    (task,) = EcthrSource(ARTICLES, root=str(tmp_path)).load()
    assert [(e.text, e.labels) for e in task.train] == [(e.text, e.labels) for e in task.test]
    assert task.train[0].labels == ("3", "5") and task.train[1].labels == ()


@pytest.mark.parametrize("row, message", [
    ({"text": [], "labels": [1]}, r"row 2: text must be the case's facts, a non-empty list of paragraphs"),
    ({"text": ["x"], "labels": [12]}, r"row 2: label 12 is neither an index below 10 nor one of data.articles"),
    ({"text": ["x"], "labels": "3"}, r"row 2: labels must be a list of label indices or names"),
])
def test_a_bad_row_is_named_with_its_file_and_row(tmp_path, row, message):
    write(tmp_path / "train.jsonl", [{"text": ["The applicant was beaten."], "labels": ["3"]}, row])
    with pytest.raises(UserError, match=message):
        EcthrSource(ARTICLES, root=str(tmp_path)).load()


def test_a_missing_export_says_how_to_make_one(tmp_path):
    with pytest.raises(UserError, match=r"no train.jsonl or .parquet there.*load_dataset\('lex_glue', 'ecthr_a'\)"):
        EcthrSource(ARTICLES, root=str(tmp_path)).load()


@pytest.mark.slow
def test_the_sample_trains_cross_validates_and_rescores_with_the_methods_of_any_source(tmp_path, tiny_bert_dir):
    from commands import run_script
    from helpers import FAST_MODEL

    classical = run_script("train.py", "method=classical", "data=ecthr_sample", "protocol.cv_folds=3",
                           f"hydra.run.dir={tmp_path / 'classical'}")
    assert classical.returncode == 0, classical.stderr[-3000:]
    cv = json.loads((tmp_path / "classical" / "cv.json").read_text())["ecthr_sample"]
    assert cv["folds"] == 3 and sum(f["n"] for f in cv["per_fold"]) == 52
    encoder = run_script("train.py", "data=ecthr_sample", f"model.pretrained={tiny_bert_dir}", *FAST_MODEL,
                         "trainer.max_epochs=2", f"hydra.run.dir={tmp_path / 'encoder'}")
    assert encoder.returncode == 0, encoder.stderr[-3000:]
    for method in ("classical", "encoder"):
        metrics = json.loads((tmp_path / method / "metrics.json").read_text())
        assert metrics["tasks"]["ecthr_sample"]["n"] == 12 and metrics["run"]["method"] == method
        before = (tmp_path / method / "predictions.jsonl").read_text()
        rescored = run_script("evaluate.py", f"run={tmp_path / method}")
        assert rescored.returncode == 0, rescored.stderr[-3000:]
        assert (tmp_path / method / "predictions.jsonl").read_text() == before
