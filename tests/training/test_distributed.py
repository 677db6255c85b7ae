"""Distributed data parallel for real: gloo DDP on two CPU ranks, run as a user runs it, against one rank.

Every process of these runs loads tests/write_probe/sitecustomize.py, which records each file it opens
for writing or renames into place in the run folder, so the tests can tell which rank wrote what."""

from __future__ import annotations

import csv
import json
import os
import re
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import ROOT
from commands import run_script, two_at_a_time
from helpers import FAST_MODEL, read_jsonl

pytestmark = pytest.mark.slow

DDP_ON_CPU = ["trainer=ddp", "trainer.accelerator=cpu", "trainer.precision=32-true"]
# proslex_sample: 98 training documents, 12 global batches of 8 and one of 2 (split 1 + 1 over two ranks).
ENCODER_RUN = ["data=proslex_sample", *FAST_MODEL, "model.dropout=0.0", "trainer.max_epochs=3",
               "callbacks.early_stopping.patience=1"]
VALIDATION_LINE = re.compile(r"epoch (\d+) validation on rank (\d+): macro-F1 ([\d.]+), micro-F1 ([\d.]+)")


def probed_run(run_dir: Path, *overrides: str) -> dict[int, list[dict]]:
    """Run train.py into ``run_dir`` with the write probe; each process's recorded writes, by PID."""
    probe = run_dir.parent / f"{run_dir.name}-writes"
    probe.mkdir()
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "write_probe"), os.environ.get("PYTHONPATH", "")]),
           "LEGALFT_PROBE_WATCH": str(run_dir), "LEGALFT_PROBE_OUT": str(probe)}
    result = run_script("train.py", *overrides, f"hydra.run.dir={run_dir}", timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return {int(f.stem): read_jsonl(f) for f in probe.glob("*.jsonl")}


def probed_runs(*runs: tuple[Path, list[str]]) -> list[dict[int, list[dict]]]:
    """``probed_run`` for each (run folder, overrides), two at a time, in order."""
    return two_at_a_time(lambda run: probed_run(run[0], *run[1]), runs)


@pytest.fixture(scope="module")
def encoder_runs(tmp_path_factory, tiny_bert_without_dropout_dir) -> dict:
    """The same encoder fine-tune on one rank (batches of 8) and on two (4 per rank: the same global batch)."""
    root = tmp_path_factory.mktemp("ddp")
    model = f"model.pretrained={tiny_bert_without_dropout_dir}"
    one, two = probed_runs((root / "one_rank", [*ENCODER_RUN, model, "datamodule.batch_size=8"]),
                           (root / "two_ranks", [*ENCODER_RUN, model, *DDP_ON_CPU, "trainer.devices=2",
                                                 "datamodule.batch_size=4"]))
    return {"one": (root / "one_rank", one), "two": (root / "two_ranks", two)}


@pytest.fixture(scope="module")
def deepspeed_run(tmp_path_factory, tiny_bert_without_dropout_dir) -> Path:
    """The two-rank run of ``encoder_runs`` with DeepSpeed ZeRO-3 in place of DDP (CPU ranks). ZeRO-3 shards
    parameters, gradients and optimiser states, the most any stage does, so its checkpoint is the one that
    needs consolidating; ZeRO-2 is the same strategy with a smaller stage number (its config is composed
    and checked against DeepSpeed's own ZeRO config in test_cluster_configs.py)."""
    run_dir = tmp_path_factory.mktemp("deepspeed") / "zero3"
    probed_run(run_dir, *ENCODER_RUN, f"model.pretrained={tiny_bert_without_dropout_dir}", "trainer=deepspeed_zero3",
               "trainer.accelerator=cpu", "trainer.precision=32-true", "trainer.devices=2", "datamodule.batch_size=4")
    return run_dir


def test_deepspeed_zero3_on_cpu_ranks_trains_as_ddp_does_and_rescores(deepspeed_run, encoder_runs):
    run_dir, (ddp_dir, _) = deepspeed_run, encoder_runs["two"]
    assert (run_dir / "checkpoints" / "best.ckpt" / "latest").is_file()  # DeepSpeed's own checkpoint folder ...
    assert (run_dir / "checkpoints" / "best.consolidated.ckpt").is_file()  # ... and the one file scoring reads
    zero, ddp = read_jsonl(run_dir / "predictions.jsonl"), read_jsonl(ddp_dir / "predictions.jsonl")
    largest = max(abs(a["scores"][label] - b["scores"][label]) for a, b in zip(zero, ddp) for label in a["scores"])
    assert largest < 1e-3, f"probabilities differ from DDP's by up to {largest}"
    result = run_script("evaluate.py", f"run={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert read_jsonl(run_dir / "predictions.jsonl") == zero


def test_two_ranks_end_where_one_rank_does_at_the_same_global_batch(encoder_runs):
    (one_dir, _), (two_dir, _) = encoder_runs["one"], encoder_runs["two"]
    one, two = read_jsonl(one_dir / "predictions.jsonl"), read_jsonl(two_dir / "predictions.jsonl")
    assert [p["id"] for p in one] == [p["id"] for p in two] and len(one) == 35
    largest = max(abs(a["scores"][label] - b["scores"][label]) for a, b in zip(one, two) for label in a["scores"])
    # the same updates summed in another order (a gradient all-reduced over two ranks, the matrix kernels a CPU's
    # features pick): a few epochs leave float32 differences near 1e-4 on some CPUs, far below a wrong average's
    assert largest < 1e-3, f"probabilities differ by up to {largest}"
    assert json.loads((two_dir / "thresholds.json").read_text()) == json.loads((one_dir / "thresholds.json").read_text())
    assert [p["prediction"] for p in one] == [p["prediction"] for p in two]
    scores = [json.loads((d / "metrics.json").read_text())["tasks"]["proslex_sample"] for d in (one_dir, two_dir)]
    assert scores[0] == scores[1]


def validation_lines(log: Path) -> list[tuple]:
    return [m.groups() for m in VALIDATION_LINE.finditer(log.read_text())]


def test_every_rank_validates_alike_and_takes_the_same_early_stopping_decision(encoder_runs):
    run_dir, _ = encoder_runs["two"]
    rank0, rank1 = validation_lines(run_dir / "train.log"), validation_lines(run_dir / "train_ddp_process_1.log")
    assert {r for _, r, *_ in rank0} == {"0"} and {r for _, r, *_ in rank1} == {"1"}
    assert len(rank0) >= 2  # several epochs validated ...
    assert [(e, f1, micro) for e, _, f1, micro in rank0] == [(e, f1, micro) for e, _, f1, micro in rank1]
    with open(run_dir / "csv" / "metrics.csv") as f:  # ... and logged once per epoch, by rank 0
        validated = [r["epoch"] for r in csv.DictReader(f) if r.get("val/loss")]
    assert validated == [e for e, *_ in rank0]


def writers(run_dir: Path, writes: dict[int, list[dict]]) -> tuple[int, set[str]]:
    """(the PID of the one process that wrote metrics.json, what the one other process wrote) of a two-rank run."""
    by_process = {pid: {Path(w["path"]).relative_to(run_dir).as_posix() for w in events} for pid, events in writes.items()}
    main = [pid for pid, paths in by_process.items() if "metrics.json" in paths]
    assert len(main) == 1 and len(by_process) == 2, by_process
    (other,) = set(by_process) - set(main)
    return main[0], by_process[other]


def test_rank_zero_alone_writes_results_and_checkpoints_each_renamed_into_place(encoder_runs):
    run_dir, writes = encoder_runs["two"]
    main, other = writers(run_dir, writes)
    assert other == {"train_ddp_process_1.log"}  # the second rank wrote its log alone
    renamed = defaultdict(int)
    for event in writes[main]:
        path = Path(event["path"]).relative_to(run_dir).as_posix()
        if event["event"] == "rename":
            renamed[path] += 1
        else:  # results and checkpoints are never written in place, where a reader could see half a file
            assert not re.fullmatch(r"(metrics\.json|predictions\.jsonl|thresholds\.json|checkpoints/.*\.ckpt)", path)
    assert renamed["metrics.json"] == renamed["predictions.jsonl"] == renamed["thresholds.json"] == 1
    assert renamed["checkpoints/best.ckpt"] >= 1 and renamed["checkpoints/last.ckpt"] >= 1


@pytest.fixture(scope="module")
def lora_runs(tmp_path_factory, tiny_causal_lm_dir) -> dict:
    """A LoRA run on one rank (batches of 4) and on two (2 per rank), without dropout."""
    from conftest import write_legalbench_task

    root = tmp_path_factory.mktemp("ddp_lora")
    # answers of different lengths: the ranks' slices of a batch hold different numbers of answer tokens
    answers = ["Yes", "No", "Not hearsay at all", "Yes", "No", "Yes, it is hearsay", "No", "Yes", "No", "Yes"]
    rows = "".join(f"{i}\t{a}\tstatement number {i}\n" for i, a in enumerate(answers))
    tests = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tstatement number {i}\n" for i in range(20, 26))
    write_legalbench_task(root / "legalbench", "hearsay", "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + tests)
    common = ["experiment=legalbench_lora", f"model.pretrained={tiny_causal_lm_dir}", f"data.root={root / 'legalbench'}",
              "data.tasks=[hearsay]", "lora.dropout=0.0", "method.lr=1e-2", "trainer.max_epochs=2",
              "trainer.precision=32-true"]
    one, two = probed_runs((root / "one_rank", [*common, "datamodule.batch_size=4"]),
                           (root / "two_ranks", [*common, *DDP_ON_CPU, "trainer.devices=2", "datamodule.batch_size=2"]))
    return {"one": (root / "one_rank", one), "two": (root / "two_ranks", two)}


def test_two_rank_lora_trains_the_adapter_one_rank_trains(lora_runs):
    from safetensors.torch import load_file

    (one_dir, _), (two_dir, _) = lora_runs["one"], lora_runs["two"]
    one, two = (load_file(d / "adapters" / "pooled" / "adapter_model.safetensors") for d in (one_dir, two_dir))
    assert one.keys() == two.keys() and any("lora_B" in k for k in one)
    assert all(one[k].abs().sum() > 0 for k in one if "lora_B" in k)  # trained, so the comparison means something
    largest = max(((one[k] - two[k]).norm() / one[k].norm()).item() for k in one)
    assert largest < 1e-4, f"an adapter matrix differs by {largest:.1e} of its norm"
    one_rank, two_ranks = read_jsonl(one_dir / "predictions.jsonl"), read_jsonl(two_dir / "predictions.jsonl")
    assert [p["prediction"] for p in one_rank] == [p["prediction"] for p in two_ranks]
    assert all(abs(a["scores"][label] - b["scores"][label]) < 1e-3  # log-likelihoods, kept to 4 decimals
               for a, b in zip(one_rank, two_ranks) for label in a["scores"])


def test_two_rank_lora_is_scored_and_written_by_rank_zero_alone(lora_runs):
    run_dir, writes = lora_runs["two"]
    _, other = writers(run_dir, writes)
    assert other == {"train_ddp_process_1.log"}
    assert json.loads((run_dir / "metrics.json").read_text())["tasks"]["hearsay"]["n"] == 6
