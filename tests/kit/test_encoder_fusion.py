"""An encoder run fused with method=classical (method.fuse_classical, on by default for multi-label
tasks with held-out scores): what the run folder records, and rescoring that refits the classical side."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import SAMPLE, proslex_doc, write_collection
from commands import run_script
from helpers import FAST_MODEL, read_jsonl

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fused_run(tmp_path_factory, tiny_bert_dir):
    run_dir = tmp_path_factory.mktemp("fused") / "run"
    result = run_script("train.py", "data=proslex_sample", f"model.pretrained={tiny_bert_dir}", *FAST_MODEL,
                        "trainer.max_epochs=3", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir.parent / "stdout.txt").write_text(result.stdout)
    return run_dir


def test_the_run_records_the_fusion_and_decides_on_fused_scores(fused_run):
    from legalft.kit.fusion import model_label

    run = json.loads((fused_run / "metrics.json").read_text())["run"]
    choice = run["fusion_choice"]  # a sample's validation split is too small to choose on: the prior, the fusion
    assert choice["chosen_on"] == "prior" and set(choice["scores"]) == {"fused", "encoder", "classical"}
    assert choice["use"] == "fused" and choice["n"] == 35  # the sample's validation documents
    assert "35 held-out documents, fewer than method.min_choice_docs=100" in choice["reason"]
    epoch = run["choices"]["epoch"]  # nor to choose an epoch on: the last of trainer.max_epochs
    assert (epoch["option"], epoch["chosen_on"], epoch["n"]) == ("last", "prior", 35)
    assert run["choices"]["thresholds"]["option"] == "tuned" and run["choices"]["thresholds"]["chosen_on"] == "prior"
    # finished at the defaults: the weights it predicts with, not the optimizer's state (keep_optimizer=false)
    import torch

    assert [p.name for p in (fused_run / "checkpoints").iterdir()] == ["best.ckpt"]
    assert "optimizer_states" not in torch.load(fused_run / "checkpoints" / "best.ckpt", weights_only=True)
    printed = (fused_run.parent / "stdout.txt").read_text()
    assert "predicted with minilm fused with tfidf_logreg; fusion: fused, the prior (35 held-out" in printed
    assert run["model"] == model_label("minilm", choice["use"]) and run["fused_with"] == "tfidf_logreg"
    fusion = json.loads((fused_run / "fusion.json").read_text())
    assert fusion["use"] == choice["use"]
    assert fusion["trained_on"] == "train" and fusion["seed"] == 0  # the classical side learnt what the encoder did
    assert {len(v) for part in (fusion["mean"], fusion["std"]) for v in part.values()} == {7}
    thresholds = json.loads((fused_run / "thresholds.json").read_text())
    for p in read_jsonl(fused_run / "predictions.jsonl"):
        assert p["prediction"] == [label for label, s in p["scores"].items() if s >= thresholds[label]]


def test_rescoring_refits_the_classical_side_to_the_same_result(fused_run):
    before = {name: (fused_run / name).read_text() for name in ("metrics.json", "predictions.jsonl")}
    result = run_script("evaluate.py", f"run={fused_run}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (fused_run / "predictions.jsonl").read_text() == before["predictions.jsonl"]
    after = json.loads((fused_run / "metrics.json").read_text())
    assert after["tasks"] == json.loads(before["metrics.json"])["tasks"]
    assert after["run"]["model"] == json.loads(before["metrics.json"])["run"]["model"]
    assert after["run"]["fusion_choice"]["use"] == json.loads(before["metrics.json"])["run"]["fusion_choice"]["use"]


def test_rescoring_refuses_when_the_training_documents_changed(fused_run, tmp_path):
    data = tmp_path / "sample"
    shutil.copytree(SAMPLE, data)
    collection = next((data / "Train").glob("*.json"))
    documents = json.loads(collection.read_text())
    first = next(iter(documents))
    documents[first]["fact"] = documents[first]["fact"] + " An added sentence."
    collection.write_text(json.dumps(documents))
    run_dir = tmp_path / "run"
    shutil.copytree(fused_run, run_dir)
    config = run_dir / "config.yaml"
    config.write_text(config.read_text().replace(str(SAMPLE), str(data)))
    before = (run_dir / "metrics.json").read_text()
    result = run_script("evaluate.py", f"run={run_dir}")
    assert result.returncode == 2 and "no longer gives the documents the run trained on" in result.stderr
    assert "Traceback" not in result.stderr and (run_dir / "metrics.json").read_text() == before


def test_fusion_asked_for_where_it_cannot_apply_is_refused_before_anything_is_written(tmp_path, tiny_bert_dir):
    data = tmp_path / "data"
    for split in ("Train", "Validation", "Test"):
        write_collection(data / split, "c.json", {f"{split}{code}": proslex_doc(f"Case {code}.", [code]) for code in ("s1", "s3")})
    result = run_script("train.py", f"data.root={data}", "data.multi_label=false", f"model.pretrained={tiny_bert_dir}",
                        *FAST_MODEL, "method.fuse_classical=true", f"hydra.run.dir={tmp_path / 'run'}")
    assert result.returncode == 2 and "fuse_classical=true: task proslex is single-label" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "run").exists()
