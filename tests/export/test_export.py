"""legalft.export: a finished run as a folder that transformers loads with nothing else installed, with a model
card the Hub reads, and an upload tested against a stand-in for huggingface_hub's HfApi."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from commands import run_script
from conftest import ROOT
from helpers import FAST_MODEL
from helpers import CASES, folder_digest, read_only

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cls_run(tmp_path_factory, tiny_bert_dir):
    """An encoder run that reads each window's first token (what the stock heads read)."""
    run_dir = tmp_path_factory.mktemp("export") / "run"
    result = run_script("train.py", "data=proslex_sample", f"model.pretrained={tiny_bert_dir}", *FAST_MODEL,
                        "model.chunk_embedding=cls", "trainer.max_epochs=1", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    read_only(run_dir)
    return run_dir


@pytest.fixture(scope="module")
def exported(cls_run, tmp_path_factory):
    before = folder_digest(cls_run)
    out = tmp_path_factory.mktemp("exports") / "statutes"
    result = subprocess.run([sys.executable, "-m", "legalft.export", f"run={cls_run}", f"out={out}"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert folder_digest(cls_run) == before  # the run folder is only read
    return out


def test_transformers_alone_loads_it_and_gives_the_run_s_scores_on_one_window(exported, cls_run):
    """In a process that imports transformers and nothing of this project: logits equal the run's model's on
    documents that fit one window, labels named with their descriptions, multi-label."""
    script = (
        "import json, sys, torch\n"
        "from transformers import AutoModelForSequenceClassification, AutoTokenizer\n"
        f"model = AutoModelForSequenceClassification.from_pretrained({str(exported)!r}).eval()\n"
        f"tokenizer = AutoTokenizer.from_pretrained({str(exported)!r})\n"
        "texts = json.loads(sys.stdin.read())\n"
        "batch = tokenizer(texts, padding=True, truncation=True, max_length=64, return_tensors='pt')\n"
        "with torch.no_grad():\n"
        "    logits = model(**batch).logits\n"
        "print(json.dumps({'logits': logits.tolist(), 'id2label': model.config.id2label,\n"
        "                  'problem_type': model.config.problem_type,\n"
        "                  'legalft': [m for m in sys.modules if m.startswith('legalft')]}))\n")
    texts = [text[:150] for _, text in CASES]  # well inside one 64-token window
    result = subprocess.run([sys.executable, "-c", script], input=json.dumps(texts), capture_output=True, text=True,
                            timeout=600, cwd=exported.parent, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout)
    assert loaded["legalft"] == [] and loaded["problem_type"] == "multi_label_classification"
    assert loaded["id2label"]["2"] == "IPC 302: Punishment for murder"

    import torch

    from legalft.methods.encoder import load_trained_module
    from legalft.runs.folder import RunFolder
    from transformers import AutoTokenizer

    module = load_trained_module(RunFolder(cls_run)).eval()
    batch = AutoTokenizer.from_pretrained(exported)(texts, padding=True, truncation=True, max_length=64,
                                                    return_tensors="pt")
    with torch.no_grad():
        ours = module.model(batch["input_ids"], batch["attention_mask"], torch.ones(len(texts), dtype=torch.long))
    assert torch.allclose(torch.tensor(loaded["logits"]), ours, atol=1e-4)


def test_the_card_is_valid_hub_metadata_and_says_what_the_run_is(exported, cls_run):
    from huggingface_hub import ModelCard

    card = ModelCard.load(exported / "README.md")
    assert card.data.license == "other" and card.data.pipeline_tag == "text-classification"
    assert "legal" in card.data.tags and card.data.datasets == ["proslex_sample"]
    metrics = json.loads((cls_run / "metrics.json").read_text())["tasks"]["proslex_sample"]
    (result,) = card.data.eval_results[:1]
    assert result.dataset_split == "test" and result.metric_value == pytest.approx(round(metrics["macro_f1"], 4))
    for heading in ("## Training data", "## Recipe", "## How to load", "## Limits"):
        assert heading in card.text
    assert "| IPC 302 | s3 | Punishment for murder |" in card.text
    assert "transformers gives the encoder's alone" in card.text  # a fused run says its export is the encoder alone
    record = json.loads((exported / "legalft.json").read_text())
    assert record["windows"]["max_length"] == 64 and set(record["thresholds"]) == set(record["labels"])
    assert (exported / "evidence.json").is_file() and not list(exported.glob("*.pkl")) and not list(exported.glob("*.bin"))


def test_predict_reads_the_export_as_the_run_classifies(exported, cls_run, tmp_path):
    """predict.py run=<the export>: the run's windows (documents longer than one), pooling, fusion with the exported
    classical side, thresholds and evidence, without the run folder: the run's scores within 1e-4."""
    test_files = sorted((ROOT / "src/legalft/samples/proslex_sample/Test").glob("*.json"))
    documents = [{"id": key, "text": doc["fact"]} for f in test_files for key, doc in json.loads(f.read_text()).items()]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(d) + "\n" for d in documents[:12]))
    record = json.loads((exported / "legalft.json").read_text())
    assert record["fusion"]["use"] in ("fused", "classical") and (exported / "classical" / "tfidf.json").is_file()
    outputs = {}
    for name, run in (("run", cls_run), ("export", exported)):
        outputs[name] = tmp_path / f"{name}.jsonl"
        result = run_script("predict.py", f"run={run}", f"input={cases}", f"out={outputs[name]}")
        assert result.returncode == 0, result.stderr[-3000:]
    from_run, from_export = ([json.loads(line) for line in outputs[n].read_text().splitlines()] for n in ("run", "export"))
    assert max(len(d["text"]) for d in documents[:12]) > 64 * 4  # several 64-token windows
    for ours, theirs in zip(from_export, from_run):
        assert ours["scores"] == pytest.approx(theirs["scores"], abs=1e-4)
        assert ours["prediction"] == theirs["prediction"] and ours.get("evidence") == theirs.get("evidence")


def crafted(exported, tmp_path, change) -> Path:
    """A copy of the export with ``change`` made to it (a damaged or crafted one)."""
    import shutil

    copy = tmp_path / "crafted"
    shutil.copytree(exported, copy)
    change(copy)
    return copy


def edit_record(key_path: tuple, value):
    def change(folder):
        record = json.loads((folder / "legalft.json").read_text())
        node = record
        for key in key_path[:-1]:
            node = node[key]
        node[key_path[-1]] = value
        (folder / "legalft.json").write_text(json.dumps(record))
    return change


def truncated_weights(folder):
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])


@pytest.mark.parametrize("change, message", [
    (edit_record(("fusion", "classical"), "../outside_classical"),
     r"legalft.json: fusion.classical='../outside_classical' leads outside"),
    (edit_record(("evidence", "file"), "/etc/passwd"), r"legalft.json: evidence.file='/etc/passwd' leads outside"),
    (edit_record(("windows", "stride"), 600), r"legalft.json: windows.stride=600 must be smaller than "),
    (edit_record(("windows", "stride"), -1), r"legalft.json: windows.stride=-1 must be a whole number"),
    (edit_record(("windows", "pooling"), "median"), r"legalft.json: windows.pooling='median' must be one of max"),
    (truncated_weights, r"not a transformers model folder, or its weights are damaged"),
])
def test_a_damaged_or_crafted_export_gets_one_message_and_reads_nothing_outside(exported, tmp_path, change, message):
    copy = crafted(exported, tmp_path, change)
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c1", "text": CASES[0][1]}) + "\n")
    result = run_script("predict.py", f"run={copy}", f"input={cases}", f"out={tmp_path / 'out.jsonl'}")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert re.search(message, result.stderr), result.stderr[-2000:]
    assert not (tmp_path / "out.jsonl").exists()


def test_task_and_out_are_checked_for_an_encoder_run_and_its_export(exported, cls_run, tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c1", "text": CASES[0][1]}) + "\n")
    wrong = run_script("predict.py", f"run={cls_run}", f"input={cases}", "task=no_such_task")
    assert wrong.returncode == 2 and "task=no_such_task: run" in wrong.stderr and "classifies proslex_sample alone" \
        in wrong.stderr
    inside = run_script("predict.py", f"run={exported}", f"input={cases}", f"out={exported}/p.jsonl", "overwrite=true")
    assert inside.returncode == 2 and "which predict.py reads and never writes" in inside.stderr
    assert not (exported / "p.jsonl").exists()


def test_an_existing_out_is_refused_and_left_as_it_was(exported, cls_run):
    before = folder_digest(exported)
    result = subprocess.run([sys.executable, "-m", "legalft.export", f"run={cls_run}", f"out={exported}"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 2 and "exists: choose a new folder" in result.stderr
    assert folder_digest(exported) == before


def test_a_mean_pooled_encoder_is_refused_by_name():
    from types import SimpleNamespace

    from legalft.foundation.errors import UserError
    from legalft.export.hf_export import stock_classifier

    module = SimpleNamespace(model=SimpleNamespace(chunk_embedding="mean"))
    with pytest.raises(UserError, match=r"run: this encoder reads each window as the mean of its tokens .* Train with "
                                        r"model.chunk_embedding=cls"):
        stock_classifier(module, ["a"], {}, True, "run")


def test_push_to_hub_uploads_the_folder_privately(exported, monkeypatch):
    import huggingface_hub

    from legalft import export
    from legalft.foundation.errors import UserError

    calls = []

    class StandIn:
        def __init__(self, token=None):
            calls.append(("token", token))

        def create_repo(self, repo_id, private, exist_ok):
            calls.append(("create", repo_id, private, exist_ok))
            return f"https://huggingface.co/{repo_id}"

        def upload_folder(self, folder_path, repo_id, commit_message):
            calls.append(("upload", sorted(p.name for p in exported.iterdir()), repo_id))

    monkeypatch.setattr(huggingface_hub, "HfApi", StandIn)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_token")
    assert export.push(exported, "me/statutes") == "https://huggingface.co/me/statutes"
    assert ("create", "me/statutes", True, True) in calls
    assert ("upload", sorted(p.name for p in exported.iterdir()), "me/statutes") in calls
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    with pytest.raises(UserError, match="no Hugging Face token"):
        export.push(exported, "me/statutes")


@pytest.mark.parametrize("failure, message", [
    ("offline", r"the Hub is switched off here \(HF_HUB_OFFLINE=1\); push it later with python -m legalft.export "),
    ("refused", r"the Hub refused the token for me/statutes \(401\): log in .* then push it later"),
    ("unreachable", r"the Hub cannot be reached \(ConnectionError\); push it later with"),
])
def test_a_failed_push_is_one_message_naming_how_to_push_the_export_alone(exported, monkeypatch, failure, message):
    import huggingface_hub
    import requests
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    from legalft import export
    from legalft.foundation.errors import UserError

    class Failing:
        def __init__(self, token=None):
            pass

        def create_repo(self, repo_id, private, exist_ok):
            if failure == "offline":
                raise OfflineModeIsEnabled("offline")
            if failure == "refused":
                response = requests.Response()
                response.status_code = 401
                raise HfHubHTTPError("401 Unauthorized", response=response)
            raise requests.ConnectionError("refused")

    monkeypatch.setattr(huggingface_hub, "HfApi", Failing)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_token")
    with pytest.raises(UserError, match=message):
        export.push(exported, "me/statutes")


def test_a_bad_repo_id_is_refused_before_anything_is_exported_and_an_export_is_pushed_alone(exported, cls_run,
                                                                                           tmp_path):
    out = tmp_path / "never"
    bad = subprocess.run([sys.executable, "-m", "legalft.export", f"run={cls_run}", f"out={out}", "push_to_hub=true",
                          "hub.repo_id=../../evil/x"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "hub.repo_id='../../evil/x' is not a Hub repository id" in bad.stderr
    assert not out.exists() and not list(tmp_path.iterdir())
    alone = subprocess.run([sys.executable, "-m", "legalft.export", f"out={exported}", "push_to_hub=true",
                            "hub.repo_id=me/statutes"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_TOKEN": "hf_token"})
    assert alone.returncode == 2 and "exported:" not in alone.stdout  # nothing exported again: the push alone
    assert "the Hub is switched off here (HF_HUB_OFFLINE=1)" in alone.stderr and "Traceback" not in alone.stderr
