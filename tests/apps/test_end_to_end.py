"""train.py and evaluate.py run as a user runs them, on tiny models built in the tests."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from commands import run_script, run_scripts, two_at_a_time
from conftest import ROOT, SAMPLE, proslex_doc, write_collection
from helpers import FAST_MODEL, read_jsonl

pytestmark = pytest.mark.slow


def trained_run_command(tiny_bert_dir: Path, run_dir: Path) -> list[str]:
    return ["data=proslex_sample", f"model.pretrained={tiny_bert_dir}", *FAST_MODEL, "trainer.max_epochs=12",
            "callbacks.early_stopping.patience=12", f"hydra.run.dir={run_dir}",
            "method.fuse_classical=false"]  # the encoder alone learns the sample (tests/kit/test_encoder_fusion.py: fused)


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, tiny_bert_dir) -> Path:
    run_dir = tmp_path_factory.mktemp("runs") / "tiny_bert"
    result = run_script("train.py", *trained_run_command(tiny_bert_dir, run_dir), "checkpoints.keep_optimizer=true",
                        process=True)  # one real command; it keeps last.ckpt, the optimizer's state, to be examined
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"run folder: {run_dir}" in result.stdout and "IPC 302" in result.stdout
    return run_dir


def test_training_learns_the_sample(trained_run):
    scores = json.loads((trained_run / "metrics.json").read_text())["tasks"]["proslex_sample"]
    # predicting every statute for every document scores about 0.3 macro-F1 here
    assert scores["n"] == 35 and scores["macro_f1"] >= 0.6 and scores["micro_f1"] >= 0.6


def test_run_folder_holds_the_shared_result_format(trained_run):
    for name in ("config.yaml", "label_map.json", "thresholds.json", "checkpoints/best.ckpt", "checkpoints/last.ckpt",
                 "encoder/config.json", "encoder/tokenizer.json", "csv/metrics.csv"):
        assert (trained_run / name).exists(), name
    assert not list(trained_run.rglob("*.tmp")), "a temporary checkpoint was left behind"
    metrics = json.loads((trained_run / "metrics.json").read_text())
    run = metrics["run"]
    assert run["method"] == "encoder" and run["model"] == "minilm" and run["seed"] == 0 and run["comparable"]
    assert "fused_with" not in run and not (trained_run / "fusion.json").exists()
    assert len(run["data_fingerprint"]) == 16 and len(run["config_digest"]) == 16 and "torch" in run["versions"]
    cost = run["cost"]  # the process's own: its wall time to results and its peak memory
    assert 0 < cost["wall_seconds"] < 600 and 100 < cost["peak_memory_mb"] < 16_000 and cost["device"].startswith("cpu")
    per_label = metrics["tasks"]["proslex_sample"]["per_label"]
    assert set(per_label) == {"IPC 147", "IPC 201", "IPC 302", "IPC 376", "IPC 420", "IPC 498A", "IPC 506"}
    assert sum(s["support"] for s in per_label.values()) == sum(
        len(doc["statute"]) for p in (SAMPLE / "Test").glob("*.json") for doc in json.loads(p.read_text()).values()
    )
    predictions = read_jsonl(trained_run / "predictions.jsonl")
    assert len(predictions) == 35 and len({p["id"] for p in predictions}) == 35
    first = predictions[0]
    assert first["task"] == "proslex_sample" and isinstance(first["gold"], list) and isinstance(first["prediction"], list)
    assert set(first["scores"]) == set(per_label) and all(0 <= v <= 1 for v in first["scores"].values())
    thresholds = json.loads((trained_run / "thresholds.json").read_text())
    for p in predictions:  # predicted sets follow the tuned thresholds
        assert p["prediction"] == [label for label, s in p["scores"].items() if s >= thresholds[label]]


def test_every_predicted_statute_comes_with_sentences_of_the_facts_as_evidence(trained_run):
    """A scorer of the experts' spans (evidence.json), not the model, picks them: bench/evidence_selection.py."""
    docs = {doc_id: doc for p in (SAMPLE / "Test").glob("*.json") for doc_id, doc in json.loads(p.read_text()).items()}
    records = read_jsonl(trained_run / "predictions.jsonl")
    assert (trained_run / "evidence.json").is_file()
    for record in records:
        assert set(record.get("evidence", {})) == set(record["prediction"])
        assert all(sentence in docs[record["id"]]["fact"] for quotes in record.get("evidence", {}).values()
                   for sentence in quotes)
    scores = json.loads((trained_run / "metrics.json").read_text())["tasks"]["proslex_sample"]
    assert scores["evidence_quotes"] == scores["evidence_exact"] == sum(len(q) for r in records
                                                                         for q in r.get("evidence", {}).values())
    # the sample's spans are whole sentences with words of their statute: the scorer finds most of them
    assert scores["evidence_sections_scored"] > 20 and scores["evidence_sentence_f1"] > 0.5
    for key in ("rouge1_f", "rouge2_f", "rougeL_f", "bleu", "meteor"):
        assert 0 < scores[key] <= 1, key
    assert scores["bertscore_model"] == "roberta-large (not loaded)"  # the default, offline: said, not hidden


def test_best_holds_weights_only_and_a_finished_run_rerun_scores_without_training(trained_run, tmp_path,
                                                                                  tiny_bert_dir):
    import shutil

    import torch

    best, last = trained_run / "checkpoints" / "best.ckpt", trained_run / "checkpoints" / "last.ckpt"
    assert "optimizer_states" not in torch.load(best, map_location="cpu", weights_only=True)
    assert torch.load(last, map_location="cpu", weights_only=True)["optimizer_states"]  # what a resume needs
    assert last.stat().st_size > 2 * best.stat().st_size  # Adam's two moments beside the weights

    copy = tmp_path / "run"
    shutil.copytree(trained_run, copy)
    curves = (copy / "csv" / "metrics.csv").read_text()
    scores = json.loads((copy / "metrics.json").read_text())["tasks"]
    result = run_script("train.py", *trained_run_command(tiny_bert_dir, copy), "checkpoints.keep_last=false")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "holds a finished run: its best checkpoint is scored again, nothing is retrained" in result.stdout
    assert (copy / "csv" / "metrics.csv").read_text().startswith(curves)  # not one step trained, no curve lost
    assert json.loads((copy / "metrics.json").read_text())["tasks"] == scores
    # checkpoints.keep_last=false removes what this command saved: the earlier command's last.ckpt stays
    assert (copy / "checkpoints" / "best.ckpt").is_file() and (copy / "checkpoints" / "last.ckpt").is_file()


def test_evaluate_scores_the_run_on_another_test_file(trained_run, tmp_path):
    import shutil

    trained_run = shutil.copytree(trained_run, tmp_path / "run")  # rescoring rewrites the results: a copy of its own
    test_file = write_collection(tmp_path, "other_test.json", {
        "x1": proslex_doc("A crowd armed with lathis attacked the family.", ["s1"]),
        "x2": proslex_doc("The accused threatened to kill the whole family.", ["s7"]),
    })
    before = (trained_run / "metrics.json").read_text()
    result = run_script("evaluate.py", f"run={trained_run}", f"data.test_path={test_file}")
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((trained_run / "metrics.json").read_text())
    assert metrics["tasks"]["proslex_sample"]["n"] == 2
    assert [p["id"] for p in read_jsonl(trained_run / "predictions.jsonl")] == ["x1", "x2"]
    assert metrics["run"]["data_fingerprint"] != json.loads(before)["run"]["data_fingerprint"]
    # scoring the run's own test split again gives back the training-time numbers, also from a copy whose
    # config keeps the optimiser settings where earlier releases wrote them (docs/run-folders.md)
    import yaml

    previous = shutil.copytree(trained_run, tmp_path / "previous_release")
    config = yaml.safe_load((previous / "config.yaml").read_text())
    for key in ("lr", "head_lr", "weight_decay", "warmup_ratio"):
        config["model"][key] = config["method"].pop(key)
    (previous / "config.yaml").write_text(yaml.safe_dump(config))
    result = run_script("evaluate.py", f"run={previous}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((previous / "metrics.json").read_text())["tasks"] == json.loads(before)["tasks"]


def test_bad_data_path_exits_cleanly_and_leaves_no_run_folder(tmp_path, tiny_bert_dir):
    run_dir = tmp_path / "run"
    result = run_script("train.py", "data.root=/nonexistent/PROSLEX", f"model.pretrained={tiny_bert_dir}",
                        f"hydra.run.dir={run_dir}")
    assert result.returncode == 2
    assert "error: data.root: /nonexistent/PROSLEX is not a folder" in result.stderr
    assert "Traceback" not in result.stderr
    assert not run_dir.exists()


def test_unloadable_model_names_the_key(tmp_path):
    run_dir = tmp_path / "run"
    result = run_script("train.py", "data=proslex_sample", "model.pretrained=law-ai/InLegalBERT", f"hydra.run.dir={run_dir}")
    assert result.returncode == 2
    assert "model.pretrained: could not load 'law-ai/InLegalBERT'" in result.stderr and "hf download" in result.stderr
    assert not run_dir.exists()


def test_evaluate_without_a_checkpoint_says_so(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.yaml").write_text("seed: 0\n")
    result = run_script("evaluate.py", f"run={tmp_path / 'run'}")
    assert result.returncode == 2 and "no best checkpoint (checkpoints/best.ckpt)" in result.stderr
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_longformer_reads_long_windows_with_global_attention(tmp_path, tiny_longformer_dir):
    run_dir = tmp_path / "run"
    result = run_script(
        "train.py", "data=proslex_sample", "model=longformer", f"model.pretrained={tiny_longformer_dir}",
        "model.max_length=512", "windows.stride=32", "windows.max_chunks=2", "model.gradient_checkpointing=false",
        "method.lr=3e-3", "method.head_lr=3e-3", "trainer=cpu", "trainer.max_epochs=6",
        "callbacks.early_stopping.patience=6", f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    log = (run_dir / "train.log").read_text()
    assert "train split: 0 of 98 documents longer than the kept windows" in log
    scores = json.loads((run_dir / "metrics.json").read_text())["tasks"]["proslex_sample"]
    # learned something: better than predicting every statute for every document
    from legalft.evaluation.metrics import multilabel_scores

    gold = [r["gold"] for r in read_jsonl(run_dir / "predictions.jsonl")]
    labels = list(scores["per_label"])
    everything = multilabel_scores(gold, [labels] * len(gold), labels)["micro_f1"]
    assert scores["n"] == 35 and scores["micro_f1"] > everything + 0.03


def test_single_label_mode_trains_a_softmax_classifier(tmp_path, tiny_bert_dir):
    data = tmp_path / "data"
    texts = {
        "s1": "A crowd armed with lathis and spears attacked the village and beat the family.",
        "s3": "The accused struck the deceased on the head with an axe and he died on the spot.",
        "s7": "The accused threatened to kill the witness if he deposed in court.",
    }
    for split, n in (("Train", 12), ("Validation", 4), ("Test", 4)):
        write_collection(data / split, "c.json", {
            f"{split}{code}{i}": proslex_doc(f"{text} Case number {i}.", [code]) for code, text in texts.items() for i in range(n)
        })
    run_dir = tmp_path / "run"
    result = run_script(
        "train.py", f"data.root={data}", "data.multi_label=false", f"model.pretrained={tiny_bert_dir}", *FAST_MODEL,
        "trainer.max_epochs=10", "callbacks.early_stopping.patience=10", f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    scores = json.loads((run_dir / "metrics.json").read_text())["tasks"]["proslex"]
    assert scores["n"] == 12 and scores["accuracy"] >= 0.66 and "balanced_accuracy" in scores
    predictions = read_jsonl(run_dir / "predictions.jsonl")
    assert all(isinstance(p["prediction"], str) and isinstance(p["gold"], str) for p in predictions)
    assert not (run_dir / "thresholds.json").exists()


def test_debug_runs_try_a_config_in_seconds(tmp_path, tiny_bert_dir):
    """debug=fdr: one batch each way, nothing saved or scored, exit 0 (Lightning's fast_dev_run saves no
    checkpoint, which scoring would otherwise ask for); debug=limit: one short epoch, saved and scored."""
    common = ["data=proslex_sample", f"model.pretrained={tiny_bert_dir}", *FAST_MODEL]
    result = run_script("train.py", *common, "debug=fdr", f"hydra.run.dir={tmp_path / 'fdr'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "fast_dev_run: one batch trained and one validated; nothing is saved or scored" in result.stdout
    assert not (tmp_path / "fdr" / "metrics.json").exists() and not (tmp_path / "fdr" / "csv").exists()
    result = run_script("train.py", *common, "debug=limit", f"hydra.run.dir={tmp_path / 'limit'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "limit" / "metrics.json").read_text())["tasks"]["proslex_sample"]["n"] == 35
    result = run_script("train.py", *common, "debug=profiler", f"hydra.run.dir={tmp_path / 'profiler'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Profiler Report" in result.stdout + result.stderr and "run_training_batch" in result.stdout + result.stderr


def test_debug_overfit_fits_one_batch(tmp_path, tiny_bert_dir):
    """debug=overfit: the same batch for 20 epochs; the training loss falls (the model and loss can learn)."""
    import csv

    run_dir = tmp_path / "overfit"
    result = run_script("train.py", "data=proslex_sample", f"model.pretrained={tiny_bert_dir}", *FAST_MODEL,
                        "debug=overfit", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    (metrics_csv,) = run_dir.glob("csv/**/metrics.csv")
    # the validation batch is the training batch: its loss falls as the model fits it
    losses = [float(row["val/loss"]) for row in csv.DictReader(metrics_csv.open()) if row.get("val/loss")]
    assert len(losses) == 20 and losses[-1] < 0.7 * losses[0], losses


def test_a_run_records_the_commit_of_the_code_it_ran(trained_run):
    """metrics.json says which code made it: the checkout's commit (and whether src/ or conf/ had changes)."""

    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    source = json.loads((trained_run / "metrics.json").read_text())["run"]["source"]
    assert source["commit"] == head and isinstance(source["dirty"], bool)


def test_a_run_records_which_model_files_it_used(trained_run, tiny_bert_dir):
    from legalft.evaluation.run_results import model_revision

    run = json.loads((trained_run / "metrics.json").read_text())["run"]
    assert run["model_revision"] == model_revision(str(tiny_bert_dir)) and run["model_revision"].startswith("sha256:")


def test_a_models_revision_is_its_files_hash_or_its_hub_snapshot(tmp_path, monkeypatch):
    from huggingface_hub import constants

    from legalft.evaluation.run_results import model_revision

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"weights")
    before = model_revision(str(folder))
    assert before == model_revision(str(folder)) and before.startswith("sha256:")
    (folder / "model.safetensors").write_bytes(b"other weights")
    assert model_revision(str(folder)) != before
    assert model_revision(str(folder / "model.safetensors")).startswith("sha256:")  # a single file (GGUF)
    # a hub name: the commit of the snapshot in the local cache (no network)
    cache = tmp_path / "hub"
    snapshot = cache / "models--law-ai--InLegalBERT" / "snapshots" / "a1b2c3d4"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (cache / "models--law-ai--InLegalBERT" / "refs").mkdir()
    (cache / "models--law-ai--InLegalBERT" / "refs" / "main").write_text("a1b2c3d4")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert model_revision("law-ai/InLegalBERT") == "a1b2c3d4"
    assert model_revision("law-ai/never-downloaded") is None


def test_a_training_runs_wandb_run_holds_its_config_tags_metrics_and_best_checkpoint(tmp_path, tiny_bert_dir):
    """An offline W&B run of train.py: the whole composed config, tags, per-task and per-label metrics, and
    with logger.wandb.log_model=true the best checkpoint as a model artifact (Lightning's WandbLogger)."""
    from helpers import wandb_records

    run_dir = tmp_path / "run"
    common = ["data=proslex_sample", f"model.pretrained={tiny_bert_dir}", *FAST_MODEL, "trainer.max_epochs=1",
              "logger=wandb", "logger.wandb.log_model=true"]
    offline = run_script("train.py", *common, "logger.wandb.offline=true", f"hydra.run.dir={tmp_path / 'offline'}")
    assert offline.returncode == 2 and "logger.wandb.log_model=true" in offline.stderr  # said plainly, up front
    assert "W&B cannot upload" in offline.stderr and not (tmp_path / "offline").exists()
    # W&B's own offline mode under an online logger: the upload is recorded in the offline run's files
    result = run_script("train.py", *common, "logger.wandb.offline=false", f"hydra.run.dir={run_dir}",
                        env={"WANDB_MODE": "offline"})
    assert result.returncode == 0, result.stderr[-3000:]
    records = list(wandb_records(run_dir))
    tags = {t for r in records if r.WhichOneof("record_type") == "run" for t in r.run.tags}
    assert tags == {"train", "method:encoder", "data:proslex_sample", "model:minilm"}
    config = {item.key: json.loads(item.value_json) for r in records if r.WhichOneof("record_type") == "config"
              for item in r.config.update}
    assert config["config"]["trainer"]["max_epochs"] == 1 and config["config"]["datamodule"]["batch_size"]
    history = {item.key or "/".join(item.nested_key) for r in records if r.WhichOneof("record_type") == "history"
               for item in r.history.item}
    assert {"test/proslex_sample/macro_f1", "test/proslex_sample/per_label/IPC 302/f1"} <= history
    artifacts = [r.artifact for r in records if r.WhichOneof("record_type") == "artifact"]
    models = [a for a in artifacts if a.type == "model"]
    assert models and all(a.name.startswith("model-") for a in models)
    assert any(entry.path.endswith(".ckpt") for a in models for entry in a.manifest.contents)
