"""predict.py: a finished run classifies documents nobody labelled, reading its folder and never writing it."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from commands import run_process, run_script
from helpers import FAST_MODEL
from helpers import CASES, folder_digest, read_only


@pytest.fixture(scope="module")
def classical_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("classical") / "run"
    result = run_script("train.py", "method=classical", "data=proslex_sample", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    read_only(run_dir)
    return run_dir


def write_cases(folder: Path) -> Path:
    path = folder / "cases.csv"
    path.write_text("doc_id,fact\n" + "".join(f'{i},"{text}"\n' for i, text in CASES))
    return path


@pytest.fixture
def cases_csv(tmp_path):
    return write_cases(tmp_path)


def test_a_run_classifies_a_csv_into_json_lines_and_leaves_its_folder_as_it_was(classical_run, cases_csv, tmp_path):
    before = folder_digest(classical_run)
    out = tmp_path / "predictions.jsonl"
    result = run_script("predict.py", f"run={classical_run}", f"input={cases_csv}", f"out={out}")
    assert result.returncode == 0, result.stderr[-3000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ["c1", "c2", "c3"]  # input order
    for record in records:
        assert set(record["scores"]) == set(record["thresholds"]) == {"IPC 147", "IPC 201", "IPC 302", "IPC 376",
                                                                      "IPC 420", "IPC 498A", "IPC 506"}
        assert record["prediction"] == [label for label, s in record["scores"].items()
                                        if s >= record["thresholds"][label]]
        for named in record.get("labels", []):  # statute sections: their PROSLEX code and description
            assert named["code"].startswith("s") and named["description"]
        assert set(record.get("evidence", {})) <= set(record["prediction"])
    assert "IPC 498A" in records[1]["prediction"]  # the dowry case
    header = json.loads((tmp_path / "predictions.jsonl.run.json").read_text())
    assert header["method"] == "classical" and header["documents"] == 3 and "evaluate.py" in header["to_score"]
    assert folder_digest(classical_run) == before


def test_csv_out_and_an_existing_out_is_kept_unless_overwrite(classical_run, cases_csv, tmp_path):
    out = tmp_path / "predictions.csv"
    out.write_text("mine")
    refused = run_script("predict.py", f"run={classical_run}", f"input={cases_csv}", f"out={out}")
    assert refused.returncode == 2 and "exists. Choose another out=..., or set overwrite=true" in refused.stderr
    assert out.read_text() == "mine" and not (tmp_path / "predictions.csv.run.json").exists()
    result = run_script("predict.py", f"run={classical_run}", f"input={cases_csv}", f"out={out}", "overwrite=true")
    assert result.returncode == 0, result.stderr[-3000:]
    header, *rows = out.read_text().splitlines()
    assert header.startswith("id,prediction,score IPC 147") and [r.split(",")[0] for r in rows] == ["c1", "c2", "c3"]


@pytest.mark.parametrize("overwrite", ["overwrite=false", "overwrite=true"])
def test_an_out_inside_the_run_folder_is_refused_with_or_without_overwrite(classical_run, cases_csv, overwrite):
    """The run folder is read, never written: its own predictions.jsonl is its result."""
    before = folder_digest(classical_run)
    result = run_script("predict.py", f"run={classical_run}", f"input={cases_csv}",
                        f"out={classical_run}/predictions.jsonl", overwrite)
    assert result.returncode == 2 and f"is inside {classical_run}, which predict.py reads and never writes" \
        in result.stderr
    assert folder_digest(classical_run) == before


def test_a_file_that_appears_after_the_start_is_not_replaced_without_overwrite(tmp_path):
    """Another command's output that lands on out while this one runs is kept, and this one says so."""
    from legalft.apps.predicting import write
    from legalft.foundation.errors import UserError

    out = tmp_path / "same.jsonl"
    header = {"documents": 1, "run": "r", "legalft": "0", "config_digest": "d"}
    out.write_text("the other command's predictions\n")  # after this command's start check
    with pytest.raises(UserError, match="a file appeared there while this command ran"):
        write([{"id": "1", "prediction": []}], header, (out, tmp_path / "same.jsonl.run.json"), ["a"])
    assert out.read_text() == "the other command's predictions\n" and not list(tmp_path.glob(".same*"))
    write([{"id": "1", "prediction": []}], header, (out, tmp_path / "same.jsonl.run.json"), ["a"], overwrite=True)
    assert out.read_text() == '{"id": "1", "prediction": []}\n'


def test_without_out_the_predictions_go_to_standard_output(classical_run, cases_csv, tmp_path):
    result = run_script("predict.py", f"run={classical_run}", f"input={cases_csv}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == ["c1", "c2", "c3"]
    assert "3 documents classified by" in result.stderr


@pytest.mark.parametrize("problem,message", [
    ("empty", "no documents in it"),
    ("no_text", "no text column found"),
    ("unfinished", "the run has not finished"),
    ("no_run", "no such run folder"),
])
def test_bad_input_is_one_line_and_status_2_with_nothing_written(classical_run, tmp_path, problem, message):
    cases = tmp_path / "cases.csv"
    cases.write_text({"empty": "text\n", "no_text": "id,summary\n1,x\n"}.get(problem, "text\nThe facts.\n"))
    run = {"unfinished": tmp_path, "no_run": tmp_path / "absent"}.get(problem, classical_run)
    out = tmp_path / "out" / "p.jsonl"
    out.parent.mkdir()
    result = run_script("predict.py", f"run={run}", f"input={cases}", f"out={out}")
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert list(out.parent.iterdir()) == []


@pytest.mark.slow
def test_standard_input_and_an_encoder_run_read_only(tiny_bert_dir, tmp_path):
    """An encoder run fused with classical: a document a line on standard input, its windows, fusion and
    thresholds as when it was scored; the same scores as the run gave a test document."""
    import subprocess
    import sys

    from conftest import ROOT

    run_dir, cache = tmp_path / "encoder", tmp_path / "windows"
    trained = run_script("train.py", "data=proslex_sample", f"model.pretrained={tiny_bert_dir}", *FAST_MODEL,
                         "trainer.max_epochs=1", f"datamodule.cache_dir={cache}", f"hydra.run.dir={run_dir}")
    assert trained.returncode == 0, trained.stderr[-3000:]
    read_only(run_dir)
    before, cached = folder_digest(run_dir), folder_digest(cache)
    assert len(cached) == 3  # the training run kept its splits' windows
    scored = json.loads((run_dir / "predictions.jsonl").read_text().splitlines()[0])
    test_files = sorted((ROOT / "src/legalft/samples/proslex_sample/Test").glob("*.json"))
    text = next(doc["fact"] for f in test_files for key, doc in json.loads(f.read_text()).items() if key == scored["id"])
    result = subprocess.run([sys.executable, "predict.py", f"run={run_dir}", "input=-"], cwd=ROOT, text=True,
                            input=" ".join(text.split()) + "\n" + CASES[0][1] + "\n", capture_output=True, timeout=600,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert (first["id"], second["id"]) == ("1", "2")
    assert first["scores"] == pytest.approx(scored["scores"], abs=1e-3)  # newlines in the facts read as spaces
    assert folder_digest(run_dir) == before
    assert folder_digest(cache) == cached  # the run's window cache is read, never written: predict writes only out
    mine = tmp_path / "my_windows"  # a cache the command names is kept
    named = run_script("predict.py", f"run={run_dir}", f"input={write_cases(tmp_path)}", f"out={tmp_path / 'p.jsonl'}",
                       f"cache_dir={mine}")
    assert named.returncode == 0, named.stderr[-3000:]
    assert len(folder_digest(mine)) == 1 and folder_digest(cache) == cached


def test_evaluate_with_another_data_format_says_so_and_points_at_predict(classical_run):
    before = folder_digest(classical_run)
    result = run_script("evaluate.py", f"run={classical_run}", "data=fire2026")
    assert result.returncode == 2 and "Traceback" not in result.stderr and "damaged" not in result.stderr
    assert "names another data format (Fire2026Source) than run" in result.stderr and "predict.py" in result.stderr
    after = folder_digest(classical_run)
    assert {k: v for k, v in after.items() if k != ".lock"} == {k: v for k, v in before.items() if k != ".lock"}


def test_a_classical_run_exports_plain_files_that_predict_reads_as_the_run_classifies(classical_run, cases_csv,
                                                                                      tmp_path):
    """Vocabularies, idf and weights (no pickle) and the evidence scorer, in a folder readable as the umask says
    (under parents the export made); predict.py run=<the export> gives what the run gives, byte for byte."""
    old = os.umask(0o022)
    try:
        out = tmp_path / "new" / "statutes"
        result = run_process("-m", "legalft.export", f"run={classical_run}", f"out={out}")
    finally:
        os.umask(old)
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "evidence.json", "legalft.json", "tfidf.json",
                                                     "tfidf.safetensors"]
    assert all(p.stat().st_mode & 0o777 == 0o644 for p in out.iterdir())
    record = json.loads((out / "legalft.json").read_text())
    assert record["method"] == "classical" and record["codes"]["IPC 302"] == "s3"
    from_run, from_export = tmp_path / "run.jsonl", tmp_path / "export.jsonl"
    for run, path in ((classical_run, from_run), (out, from_export)):
        result = run_script("predict.py", f"run={run}", f"input={cases_csv}", f"out={path}")
        assert result.returncode == 0, result.stderr[-3000:]
    assert from_export.read_text() == from_run.read_text()
    assert any("evidence" in json.loads(line) for line in from_export.read_text().splitlines())
    header = json.loads((tmp_path / "export.jsonl.run.json").read_text())
    assert header["method"] == "classical" and f"evaluate.py run={classical_run.resolve()}" in header["to_score"]
    wrong = run_script("predict.py", f"run={out}", "task=hearsay", f"input={cases_csv}", f"out={tmp_path / 'w.jsonl'}")
    assert wrong.returncode == 2 and "classifies proslex_sample alone" in wrong.stderr
    assert not (tmp_path / "w.jsonl").exists()


def test_temporary_files_carry_the_command_and_a_killed_ones_are_named_and_kept(classical_run, cases_csv, tmp_path):
    """What a killed predict.py leaves beside out says whose it was; the next command names it and keeps it (it
    did not make it), and writes its own output."""
    import os as _os

    from legalft.foundation import io

    seen = []
    io.this_command("predict")
    io.atomic_write(tmp_path / "p.jsonl", lambda tmp: seen.append(tmp.name) or tmp.write_text("x"))
    assert seen[0].startswith(f".p.jsonl.predict-{_os.getpid()}.") and seen[0].endswith(".tmp")
    left = tmp_path / ".out.jsonl.predict-99999.a1b2c3d4.tmp"
    left.write_text("half of a killed command's output")
    result = run_script("predict.py", f"run={classical_run}", f"input={cases_csv}", f"out={tmp_path / 'out.jsonl'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "1 temporary file(s) or folder(s) that a killed command left beside" in result.stderr
    assert ".out.jsonl.predict-99999.a1b2c3d4.tmp" in result.stderr and left.exists()


def test_predict_and_export_leave_no_log_where_they_are_run(classical_run, cases_csv, tmp_path):
    """They write nothing but out: no <job>.log in the folder they are run from."""
    import subprocess
    import sys

    from conftest import ROOT

    here = tmp_path / "here"
    here.mkdir()
    for command in ([str(ROOT / "predict.py"), f"run={classical_run}", f"input={cases_csv}", f"out={tmp_path / 'p.jsonl'}"],
                    ["-m", "legalft.export", f"run={classical_run}", f"out={tmp_path / 'exported'}"]):
        result = subprocess.run([sys.executable, *command], cwd=here, capture_output=True, text=True, timeout=600,
                                env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert result.returncode == 0, result.stderr[-3000:]
    assert list(here.iterdir()) == []
    assert (tmp_path / "p.jsonl").is_file() and (tmp_path / "exported" / "README.md").is_file()
