"""Checks on PROSLEX's real validation split; they run when LEGALFT_PROSLEX_DIR points at a folder
holding it as `validation/` (.ci/run sets it to ../shared/proslex)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from conftest import ROOT

pytestmark = pytest.mark.realdata
PROSLEX = Path(os.environ.get("LEGALFT_PROSLEX_DIR", "/nonexistent"))
if not (PROSLEX / "validation").is_dir():
    pytest.skip("LEGALFT_PROSLEX_DIR does not point at PROSLEX's validation split", allow_module_level=True)


def project_label_map() -> dict:
    return OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "data" / "proslex.yaml").label_map)


@pytest.fixture(scope="module")
def validation():
    from legalft.data.proslex import collection_files, read_split

    labels = {code: entry["label"] for code, entry in project_label_map().items()}
    return read_split(collection_files(PROSLEX / "validation", "data.val_path"), labels, unknown_labels="drop_label")


def test_real_validation_split_reads_with_the_stray_code_reported(caplog):
    from legalft.data.proslex import collection_files, read_split

    labels = {code: entry["label"] for code, entry in project_label_map().items()}
    files = collection_files(PROSLEX / "validation", "data.val_path")
    with caplog.at_level(logging.WARNING):
        examples = read_split(files, labels, unknown_labels="drop_label")
    assert len(files) == 7
    assert "'s34' x1" in caplog.text
    raw = sum(len(json.loads(p.read_text())) for p in files)
    assert raw == 159 and len(examples) in (158, 159)  # the s34 document is dropped only if s34 was its only code
    assert all(e.labels and set(e.labels) <= set(labels.values()) for e in examples)
    assert sum(len(e.labels) > 1 for e in examples) / len(examples) > 0.2  # about 30% carry several statutes
    # every document has spans; in 25 of them every span is another case's (in no sentence of its facts): no evidence
    assert sum(bool(e.explanations) for e in examples) == len(examples) - 25


def test_real_documents_are_chunked_not_truncated(validation):
    from transformers import AutoTokenizer

    from legalft.data.chunking import chunk_documents
    from legalft.models.pretrained import offline_minilm_path

    tokenizer = AutoTokenizer.from_pretrained(offline_minilm_path())
    texts = [e.text for e in validation]
    docs, report = chunk_documents(tokenizer, texts, max_length=512, stride=128, max_chunks=8)
    assert report.documents == len(texts)
    # a truncating 512-token encoder would lose these documents' tails; with windows most survive
    assert sum(len(d.chunks) > 1 for d in docs) > len(docs) * 0.2
    assert report.tokens_cut / report.tokens < 0.2
    assert max(d.n_tokens for d in docs) > 5000


@pytest.mark.slow
def test_train_and_evaluate_on_real_documents(tmp_path, tiny_bert_dir):
    from commands import run_script

    run_dir = tmp_path / "run"
    result = run_script(
        "train.py", f"data.train_path={PROSLEX / 'validation'}", "protocol.val_fraction=0.2",
        f"model.pretrained={tiny_bert_dir}", "model.max_length=128", "windows.stride=16", "windows.max_chunks=4",
        "trainer.max_epochs=1", f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "no test split" in (run_dir / "train.log").read_text()
    assert (run_dir / "checkpoints" / "best.ckpt").exists()
    assert json.loads((run_dir / "metrics.json").read_text())["tasks"] == {}  # what it chose, nothing scored
    # pipeline check only: these are documents the run trained on
    result = run_script("evaluate.py", f"run={run_dir}", f"data.test_path={PROSLEX / 'validation'}")
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["tasks"]["proslex"]["n"] >= 158
    assert set(metrics["tasks"]["proslex"]["per_label"]) == {e["label"] for e in project_label_map().values()}


@pytest.mark.slow
def test_the_development_data_as_fire_2026_gives_evidence_from_an_encoder_and_an_llm_and_a_valid_submission(
        tmp_path, tiny_bert_dir, tiny_causal_lm_dir, minilm_path):
    """PROSLEX's validation split converted to FIRE 2026's format (a stratified fifth held out with its sections),
    an encoder run and an LLM-classifier run on it (tiny models: the evidence comes from the scorer of the
    experts' spans), each with grounding and the paper's explanation metrics (BERTScore with a local model),
    and one of them written as a submission that validates against the test file."""
    from commands import run_script
    from legalft.data.fire2026 import write_fire_lines
    from legalft.data.proslex import read_collections
    from legalft.reporting.fire2026 import validate_file

    train, test = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    sizes = write_fire_lines(read_collections(PROSLEX / "validation"), train, test_out=test)
    common = ["data=fire2026", f"data.train_path={train}", f"data.test_path={test}", "trainer.max_epochs=1",
              f"explanations.bertscore_model={minilm_path}"]
    runs = {"encoder": [f"model.pretrained={tiny_bert_dir}", "model.max_length=64", "windows.stride=16",
                        "windows.max_chunks=2", "method.fuse_classical=false"],
            "lora_classifier": ["experiment=proslex_lora_classifier", f"model.pretrained={tiny_causal_lm_dir}",
                                "windows.max_length=64", "windows.stride=16", "windows.max_chunks=2"]}
    compared = 0  # sections, over both runs, predicted and gold with experts' spans
    for name, overrides in runs.items():
        result = run_script("train.py", *common, *overrides, f"hydra.run.dir={tmp_path / name}")
        assert result.returncode == 0, result.stderr[-3000:]
        metrics = json.loads((tmp_path / name / "metrics.json").read_text())
        scores = metrics["tasks"]["fire2026"]
        assert metrics["run"]["method"] == name and scores["n"] == sizes[test]
        records = [json.loads(line) for line in (tmp_path / name / "predictions.jsonl").read_text().splitlines()]
        assert sum(len(r["prediction"]) for r in records) > 0
        assert all(set(r.get("evidence", {})) == set(r["prediction"]) for r in records)
        assert scores["evidence_quotes"] == scores["evidence_exact"] and scores["evidence_missing"] == 0
        compared += scores["evidence_sections_scored"]
        if scores["evidence_sections_scored"]:
            assert 0 <= scores["evidence_sentence_f1"] <= 1 and 0 < scores["meteor"] <= 1
            assert scores["bertscore_model"] == f"{minilm_path} layer 6" and 0 < scores["bertscore_f"] <= 1
    assert compared > 0
    out = tmp_path / "submission.jsonl"
    report = run_script("report.py", "report=fire2026", f"runs={tmp_path / 'lora_classifier'}", f"out={out}",
                        f"report.test_path={test}")
    assert report.returncode == 0, report.stderr[-3000:]
    assert validate_file(out, str(test)) == sizes[test]
