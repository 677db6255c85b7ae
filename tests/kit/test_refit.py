"""A document classifier that chose on validation documents trains its final model again on every document
(protocol.refit): for the epoch count it chose, with the fusion and thresholds it chose, recorded, resumable, and
rescored as it predicted."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from commands import run_script
from helpers import FAST_MODEL, read_jsonl

pytestmark = pytest.mark.slow

# the sample's own validation split (35 documents) is chosen on: refit=true, as a carved share would be by default
REFIT_RUN = ["data=proslex_sample", *FAST_MODEL, "trainer.max_epochs=3", "protocol.refit=true",
             "method.min_choice_docs=0", "logger=csv"]


def refit_run_in(folder, model_dir, *overrides):
    run_dir = folder / "run"
    result = run_script("train.py", *REFIT_RUN, f"model.pretrained={model_dir}", *overrides, f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    (folder / "stdout.txt").write_text(result.stdout)
    return run_dir


@pytest.fixture(scope="module")
def refit_run(tmp_path_factory, tiny_bert_dir):
    """The encoder alone: its final model is trained again."""
    return refit_run_in(tmp_path_factory.mktemp("refit"), tiny_bert_dir, "method.fuse_classical=false")


@pytest.fixture(scope="module")
def fused_refit_run(tmp_path_factory, tiny_bert_dir):
    return refit_run_in(tmp_path_factory.mktemp("fused_refit"), tiny_bert_dir)


def test_the_final_model_trains_on_every_document_for_the_chosen_epoch_count(refit_run):
    run = json.loads((refit_run / "metrics.json").read_text())["run"]
    rows = list(csv.DictReader((refit_run / "csv" / "metrics.csv").open()))
    val = [float(r["val/macro_f1"]) for r in rows if r.get("val/macro_f1")]
    best_epochs = val.index(max(val)) + 1  # the checkpoint keeps the first epoch that reaches the best score
    assert run["choices"]["epoch"]["option"] == "best" and run["choices"]["epoch"]["chosen_on"] == "validation"
    assert run["refit"] == {"documents": 98 + 35, "chosen_on": 35, "epochs": best_epochs, "model_refit": True,
                            "seconds": run["refit"]["seconds"]}
    printed = (refit_run.parent / "stdout.txt").read_text()
    assert f"; refit on 133 documents for {best_epochs} epoch" in printed
    plan = json.loads((refit_run / "refit.json").read_text())
    assert plan["done"] and plan["choices"]["epoch"]["option"] == "best"
    assert len(val) == 3  # the run's log holds its epochs on validation; the refit's training is not logged there
    # the refit's resumable state went once it finished (checkpoints.keep_optimizer=false)
    assert sorted(p.name for p in (refit_run / "checkpoints").rglob("*.ckpt")) == ["best.ckpt"]


def test_a_fused_run_refits_its_classical_side_where_rescoring_does(fused_refit_run):
    run = json.loads((fused_refit_run / "metrics.json").read_text())["run"]
    use = run["fusion_choice"]["use"]
    assert run["refit"]["model_refit"] == (use != "classical")  # the classical side alone predicts: only it is refit
    fusion = json.loads((fused_refit_run / "fusion.json").read_text())
    assert fusion["trained_on"] == "train+val" and fusion["use"] == use
    printed = (fused_refit_run.parent / "stdout.txt").read_text()
    assert ("classical side refit on 133 documents" if use == "classical" else "; refit on 133 documents") in printed


@pytest.mark.parametrize("which", ["refit_run", "fused_refit_run"])
def test_rescoring_a_refit_run_gives_its_predictions(which, request, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(request.getfixturevalue(which), run_dir)
    before = (run_dir / "predictions.jsonl").read_text()
    result = run_script("evaluate.py", f"run={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (run_dir / "predictions.jsonl").read_text() == before


def test_a_rerun_after_the_choices_goes_straight_to_the_refit(refit_run, tmp_path, tiny_bert_dir):
    """A run stopped between its choices and the end of the refit: the rerun reads refit.json, trains the final model
    again (nothing is chosen again) and predicts what the uninterrupted run did."""
    run_dir = tmp_path / "run"
    shutil.copytree(refit_run, run_dir)
    plan = json.loads((run_dir / "refit.json").read_text())
    (run_dir / "refit.json").write_text(json.dumps({**plan, "done": False, "seconds": None}))
    for name in ("metrics.json", "predictions.jsonl"):
        (run_dir / name).unlink()
    result = run_script("train.py", *REFIT_RUN, f"model.pretrained={tiny_bert_dir}", "method.fuse_classical=false",
                        f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    said = result.stdout + result.stderr
    assert "refit: training on all 133" in said and "keeping the last of" not in said and "Validation" not in said
    assert [r["prediction"] for r in read_jsonl(run_dir / "predictions.jsonl")] == \
        [r["prediction"] for r in read_jsonl(refit_run / "predictions.jsonl")]
    assert json.loads((run_dir / "refit.json").read_text())["done"]


def test_a_given_validation_split_stays_held_out_by_default(tmp_path, tiny_bert_dir):
    run_dir = tmp_path / "run"
    result = run_script("train.py", "data=proslex_sample", *FAST_MODEL, "trainer.max_epochs=1", "logger=none",
                        "method.fuse_classical=false", f"model.pretrained={tiny_bert_dir}", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "refit" not in json.loads((run_dir / "metrics.json").read_text())["run"]
    assert not (run_dir / "refit.json").exists()
