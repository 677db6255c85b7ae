"""method.evidence_weight: an encoder trained on the experts' evidence sentences as well as the documents, which
names each predicted section's evidence itself, in its run, in predict.py and in its export."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from commands import run_script
from conftest import ROOT
from helpers import FAST_MODEL, read_jsonl
from helpers import folder_digest, read_only

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def evidence_run(tmp_path_factory, tiny_bert_dir):
    run_dir = tmp_path_factory.mktemp("evidence") / "run"
    result = run_script("train.py", "data=proslex_sample", f"model.pretrained={tiny_bert_dir}", *FAST_MODEL,
                        "model.chunk_embedding=cls", "trainer.max_epochs=2", "method.evidence_weight=1.0",
                        "method.evidence_from=model",
                        "method.fuse_classical=false", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    read_only(run_dir)
    return run_dir


def test_the_run_trains_on_the_sentences_and_names_evidence_from_its_own_model(evidence_run):
    from legalft.methods.encoder import load_trained_module
    from legalft.models.model_evidence import ModelEvidence
    from legalft.models.pretrained import load_tokenizer
    from legalft.runs.folder import RunFolder

    run = RunFolder(evidence_run)
    module = load_trained_module(run)
    assert module.hparams.evidence_weight == 1.0
    logged = (evidence_run / "metrics.json").read_text() + "".join(p.read_text() for p in evidence_run.rglob("*.csv"))
    assert "train/evidence_loss" in logged
    records = read_jsonl(evidence_run / "predictions.jsonl")
    test = json.loads((ROOT / "src/legalft/samples/proslex_sample/Test/test_collection_IPC_302.json").read_text())
    namer = ModelEvidence(module.model, load_tokenizer(str(evidence_run / "encoder"), key="run"),
                          run.read_task().labels)
    checked = 0
    for record in records:
        if record["id"] in test and record.get("evidence"):
            assert record["evidence"] == namer.select(test[record["id"]]["fact"], list(record["evidence"]))
            checked += 1
    assert checked
    metrics = json.loads((evidence_run / "metrics.json").read_text())
    scores = next(iter(metrics["scores"].values())) if "scores" in metrics else metrics
    assert "evidence_sentence_f1" in json.dumps(scores)


def test_predict_and_the_export_name_the_same_evidence_as_the_run(evidence_run, tmp_path):
    test_files = sorted((ROOT / "src/legalft/samples/proslex_sample/Test").glob("*.json"))
    documents = [{"id": key, "text": doc["fact"]} for f in test_files for key, doc in json.loads(f.read_text()).items()]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(d) + "\n" for d in documents[:8]))
    before = folder_digest(evidence_run)
    out = tmp_path / "export"
    result = subprocess.run([sys.executable, "-m", "legalft.export", f"run={evidence_run}", f"out={out}"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((out / "legalft.json").read_text())["evidence"]["from"] == "model"
    assert not (out / "evidence.json").exists()  # the span scorer is not what names this model's evidence
    outputs = {}
    for name, source in (("run", evidence_run), ("export", out)):
        outputs[name] = tmp_path / f"{name}.jsonl"
        result = run_script("predict.py", f"run={source}", f"input={cases}", f"out={outputs[name]}")
        assert result.returncode == 0, result.stderr[-3000:]
    from_run, from_export = read_jsonl(outputs["run"]), read_jsonl(outputs["export"])
    assert any(r.get("evidence") for r in from_run)
    for ours, theirs in zip(from_export, from_run):
        assert ours["scores"] == pytest.approx(theirs["scores"], abs=1e-4)
        assert ours.get("evidence") == theirs.get("evidence")
    assert folder_digest(evidence_run) == before


@pytest.mark.parametrize(("overrides", "message"), [
    (["method.evidence_weight=-1"], "method.evidence_weight=-1: must be a loss weight: 0 (off) or more"),
    (["data=ecthr_sample", "method.evidence_weight=0.5"], "method.evidence_weight=0.5 trains on the experts' evidence"),
    (["method.evidence_from=model"], "method.evidence_from=model names evidence with the model's view"),
    (["method.evidence_from=first"], "method.evidence_from='first': must be one of scorer, model"),
])
def test_evidence_training_where_it_cannot_be_done_is_one_message(overrides, message, tmp_path, tiny_bert_dir):
    run_dir = tmp_path / "run"
    result = run_script("train.py", *(["data=proslex_sample"] if "data=ecthr_sample" not in overrides else []),
                        f"model.pretrained={tiny_bert_dir}", *FAST_MODEL, *overrides, f"hydra.run.dir={run_dir}")
    assert result.returncode == 2 and message in result.stderr, result.stderr[-2000:]
    assert not (run_dir / "best.ckpt").exists()
