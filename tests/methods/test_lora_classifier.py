"""method=lora_classifier: a causal LM with a classification head on its last token, LoRA on its body."""

from __future__ import annotations

import json

import pytest
import torch

from conftest import write_legalbench_task
from commands import run_script
from helpers import read_jsonl
from helpers import write_two_label_task


def tiny_classifier(tiny_causal_lm_dir, labels, quantize="none"):
    from omegaconf import OmegaConf

    from legalft.methods.lora_classifier import new_classifier

    model_cfg = OmegaConf.create({"pretrained": str(tiny_causal_lm_dir), "dtype": "float32", "pad_token": None})
    lora_cfg = OmegaConf.create({"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"],
                                 "quantize": quantize})
    torch.manual_seed(0)
    return (*new_classifier(model_cfg, lora_cfg, labels), model_cfg, lora_cfg)


def test_window_logits_are_pooled_per_document():
    from legalft.models.llm_classifier import WindowedClassifier

    window_logits = torch.tensor([[1.0, -2.0], [3.0, -5.0], [0.5, 4.0]])

    class Fixed(torch.nn.Module):
        def forward(self, input_ids, attention_mask, use_cache):
            return type("Out", (), {"logits": window_logits})

    counts = torch.tensor([2, 1])  # the first document has two windows, the second one
    maxed = WindowedClassifier(Fixed(), "max")(None, None, counts)
    meaned = WindowedClassifier(Fixed(), "mean")(None, None, counts)
    assert maxed.tolist() == [[3.0, -2.0], [0.5, 4.0]]
    assert meaned.tolist() == [[2.0, -3.5], [0.5, 4.0]]


def test_windows_that_cannot_be_cut_are_named_before_anything_loads(tmp_path):
    from helpers import compose_train

    from legalft.apps.config_checks import check_config
    from legalft.foundation.errors import UserError

    cfg = compose_train(["experiment=legalbench_lora_classifier", "windows.max_length=32", "windows.stride=64"], tmp_path)
    assert (cfg.windows.max_length, cfg.windows.last_window) == (32, "rest")  # the causal LM's windows
    with pytest.raises(UserError, match="windows.stride=64 must be smaller than windows.max_length=32"):
        check_config(cfg)
    check_config(compose_train(["experiment=legalbench_lora_classifier", "windows.max_length=32", "windows.stride=8"],
                               tmp_path))


def test_the_head_trains_in_full_and_is_saved_and_reloaded_with_the_adapters(tiny_causal_lm_dir, tmp_path):
    """The classic failure of LLM classifiers is a head lost on save or reload (random predictions after
    reloading): the head is trainable, in the adapter file, and the reloaded model scores alike."""
    from safetensors import safe_open

    from legalft.methods.lora_classifier import load_classifier

    model, tokenizer, model_cfg, lora_cfg = tiny_classifier(tiny_causal_lm_dir, ["No", "Yes"])
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert any("score" in n for n in trainable) and any("lora_" in n for n in trainable)
    assert all("lora_" in n or "score" in n for n in trainable)  # the body stays frozen
    with torch.no_grad():  # as training would: the head moved away from its initialisation
        for name, param in model.named_parameters():
            if "score" in name and param.requires_grad:
                param.add_(torch.randn_like(param))
    model.save_pretrained(tmp_path)
    with safe_open(tmp_path / "adapter_model.safetensors", "pt") as saved:
        assert any("score" in key for key in saved.keys())
    batch = tokenizer(["statement number 3", "a longer statement number 4 here"], padding=True, return_tensors="pt")
    expected = model.eval()(**batch).logits
    reloaded, _ = load_classifier(tmp_path, model_cfg, lora_cfg, ["No", "Yes"])
    assert torch.equal(reloaded(**batch).logits, expected)
    from legalft.foundation.errors import UserError

    with pytest.raises(UserError, match="does not classify this run's 3 labels"):
        load_classifier(tmp_path, model_cfg, lora_cfg, ["a", "b", "c"])


def test_a_qlora_classifier_steps_on_cpu(tiny_causal_lm_dir):
    """QLoRA: the body 4-bit (bitsandbytes NF4), adapters and head learning, on any CPU."""
    model, tokenizer, _, _ = tiny_classifier(tiny_causal_lm_dir, ["No", "Yes"], quantize="nf4")
    assert any(type(m).__name__ == "Linear4bit" for m in model.modules())
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    before = {n: p.detach().clone() for n, p in params.items()}
    optimizer = torch.optim.AdamW(params.values(), lr=1e-2)
    batch = tokenizer(["statement number 3", "statement number 4"], padding=True, return_tensors="pt")
    model.train()
    for _ in range(2):
        loss = torch.nn.functional.cross_entropy(model(**batch).logits.float(), torch.tensor([0, 1]))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    moved = {n for n, p in params.items() if not torch.equal(p, before[n])}
    assert any("score" in n for n in moved) and any("lora_B" in n for n in moved)


@pytest.mark.slow
def test_a_legalbench_classifier_trains_scores_rescores_alike_and_exports(tmp_path, tiny_causal_lm_dir):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    root, run_dir = tmp_path / "legalbench", tmp_path / "run"
    write_two_label_task(root)
    result = run_script("train.py", "experiment=legalbench_lora_classifier", f"model.pretrained={tiny_causal_lm_dir}",
                        f"data.root={root}", "data.tasks=[hearsay]", "trainer.max_epochs=2", "windows.max_length=32", "windows.stride=8",
                        f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    scores = metrics["tasks"]["hearsay"]
    assert metrics["run"]["method"] == "lora_classifier" and metrics["run"]["quantize"] == "none"
    assert scores["n"] == 12 and 0.0 <= scores["balanced_accuracy"] <= 1.0
    records = read_jsonl(run_dir / "predictions.jsonl")
    assert {r["prediction"] for r in records} <= {"Yes", "No"}  # a head answers with a label, always
    assert all(abs(sum(r["scores"].values()) - 1) < 1e-5 for r in records)  # softmax over the labels
    assert (run_dir / "classifier" / "adapter_model.safetensors").exists()
    assert "method=lora_classifier" in (run_dir / "classifier" / "README.md").read_text()

    result = run_script("evaluate.py", f"run={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert read_jsonl(run_dir / "predictions.jsonl") == records  # rescored from the saved adapters and head

    from huggingface_hub import ModelCard

    from legalft.foundation.errors import UserError
    from legalft.export import export

    out = export(str(run_dir), str(tmp_path / "merged"))  # python -m legalft.export run=RUN out=OUT
    card = ModelCard.load(out / "README.md")  # the export's card, in the Hub's format, names how to load it
    assert card.data.pipeline_tag == "text-classification" and "legal" in card.data.tags
    assert "AutoModelForSequenceClassification.from_pretrained" in card.text
    merged = AutoModelForSequenceClassification.from_pretrained(out).eval()
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert merged.config.id2label == {0: "No", 1: "Yes"}
    assert merged.config.problem_type == "single_label_classification"  # softmax, for vLLM too
    texts = {f"hearsay/{i}": f"{'a hearsay statement' if i % 2 else 'a plain fact'} {i}" for i in range(40, 52)}
    by_id = {f"{r['task']}/{r['id']}": r for r in records}
    with torch.no_grad():
        for key, text in texts.items():
            probs = merged(**tokenizer(text, return_tensors="pt")).logits.softmax(-1)[0]
            assert probs[1].item() == pytest.approx(by_id[key]["scores"]["Yes"], abs=1e-4)
    with pytest.raises(UserError, match="exists"):
        export(str(run_dir), str(out))
    with pytest.raises(UserError, match="holds one model"):
        export(str(run_dir), str(tmp_path / "other"), adapter="pooled")


@pytest.mark.slow
def test_a_multi_label_classifier_tunes_thresholds_and_rescores_alike(tmp_path, tiny_causal_lm_dir):
    run_dir = tmp_path / "run"
    result = run_script("train.py", "experiment=proslex_lora_classifier", "data=proslex_sample",
                        f"model.pretrained={tiny_causal_lm_dir}", "windows.max_length=64", "windows.stride=16",
                        "windows.max_chunks=3", "trainer.max_epochs=1", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    scores = metrics["tasks"]["proslex_sample"]
    assert metrics["run"]["method"] == "lora_classifier" and scores["n"] == 35 and "macro_f1" in scores
    thresholds = json.loads((run_dir / "thresholds.json").read_text())
    assert set(thresholds) == set(json.loads((run_dir / "label_map.json").read_text())["labels"])
    records = read_jsonl(run_dir / "predictions.jsonl")
    assert all(isinstance(r["gold"], list) and set(r["prediction"]) <= set(r["scores"]) for r in records)
    # evidence for every predicted section: sentences of the facts, from the run's evidence.json
    facts = {e["id"]: e for e in records}
    assert (run_dir / "evidence.json").is_file() and any(r["prediction"] for r in records)
    assert all(set(r.get("evidence", {})) == set(r["prediction"]) for r in facts.values())
    assert scores["evidence_quotes"] == scores["evidence_exact"] > 0 and scores["evidence_missing"] == 0
    result = run_script("evaluate.py", f"run={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert read_jsonl(run_dir / "predictions.jsonl") == records
    from legalft.export import export

    out = export(str(run_dir), str(tmp_path / "merged"))
    config = json.loads((out / "config.json").read_text())
    assert config["problem_type"] == "multi_label_classification"  # sigmoid per label, for vLLM too
    assert json.loads((out / "legalft.json").read_text())["thresholds"] == pytest.approx(thresholds)


@pytest.mark.slow
def test_a_cross_validated_classifier_takes_its_thresholds_out_of_fold_and_a_requeue_retrains_nothing(
        tmp_path, tiny_causal_lm_dir):
    import numpy as np

    from legalft.evaluation.metrics import tune_thresholds

    run_dir = tmp_path / "run"
    args = ["train.py", "experiment=proslex_lora_classifier", "data=proslex_sample", "protocol.cv_folds=2",
            f"model.pretrained={tiny_causal_lm_dir}", "windows.max_length=32", "windows.stride=8", "windows.max_chunks=2",
            "trainer.max_epochs=1", f"hydra.run.dir={run_dir}"]
    result = run_script(*args)
    assert result.returncode == 0, result.stderr[-3000:]
    cv = json.loads((run_dir / "cv.json").read_text())["proslex_sample"]
    assert cv["folds"] == 2 and sum(f["n"] for f in cv["per_fold"]) == 98 + 35  # train and validation, folded
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["cv_folds"] == 2 and metrics["tasks"]["proslex_sample"]["n"] == 35

    # the final thresholds are tuned on every document's out-of-fold scores, not on a validation split
    from hydra.utils import instantiate
    from helpers import compose_train

    from legalft.evaluation.predictions import targets_of
    from legalft.kit.document_steps import one_task

    data = one_task(instantiate(compose_train(["data=proslex_sample"], tmp_path / "compose").data).load(), "lora_classifier")
    pool = data.train + data.val
    folds = [json.loads((run_dir / "checkpoints" / "cv" / f"fold_{k}.json").read_text()) for k in range(2)]
    scores = {i: p for fold in folds for i, p in zip(fold["ids"], fold["probs"])}
    assert sorted(scores) == sorted(e.id for e in pool)  # each document scored once, out of fold
    expected = tune_thresholds(np.array([scores[e.id] for e in pool]), targets_of(pool, data.spec))
    thresholds = json.loads((run_dir / "thresholds.json").read_text())
    choice = metrics["run"]["choices"]["thresholds"]  # tuned, unless every label at 0.5 did better out of fold
    assert choice["chosen_on"] in ("out_of_fold", "prior") and choice["n"] == 133
    if choice["option"] == "fixed":
        assert choice["scores"]["fixed"] - choice["scores"]["tuned"] > choice["margin_se"]
        expected = np.full(len(expected), 0.5)
    assert [thresholds[label] for label in data.spec.labels] == pytest.approx(list(expected))

    # a requeued job finds its folds and its classifier, and scores again without training
    records = read_jsonl(run_dir / "predictions.jsonl")
    result = run_script(*args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "holds the trained classifier" in result.stderr + result.stdout
    assert "fold 2 of 2: scores read from" in result.stderr + result.stdout
    assert read_jsonl(run_dir / "predictions.jsonl") == records
