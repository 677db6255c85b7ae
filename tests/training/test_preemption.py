"""Stopping on the requeue signal and resuming: the batch order, the config check, and a resumed run
ending exactly where an uninterrupted one does (here a LoRA run; tests/apps/test_slurm.py does the same
for an encoder run through SLURM's requeue)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from legalft.data import batches as batches_module
from legalft.data.batches import ResumableBatches
from legalft.foundation.errors import UserError
from legalft.runs.folder import RunFolder
from legalft.runs.saved_layout import config_differences

from conftest import ROOT


def test_batch_order_depends_on_seed_and_epoch_only():
    sampler = ResumableBatches(10, 3, seed=7)
    first = list(sampler)
    assert sorted(i for batch in first for i in batch) == list(range(10))
    assert list(ResumableBatches(10, 3, seed=7)) == first  # a new process draws the same order
    sampler.set_epoch(1)
    assert list(sampler) != first
    assert list(ResumableBatches(10, 3, seed=8)) != first
    assert len(sampler) == 4


def test_lightning_gives_every_epoch_its_own_order():
    """Lightning, not the test, tells the sampler which epoch it is: the order each epoch trains on."""
    import lightning as L
    import torch
    from torch.utils.data import DataLoader

    seen: list[list[int]] = []

    class Recorder(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(1))

        def training_step(self, batch, batch_idx):
            seen.append(batch.tolist())
            return (self.weight * batch.float()).sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.0)

    batches = ResumableBatches(12, 4, seed=0)
    loader = DataLoader(list(range(12)), batch_sampler=batches)
    L.Trainer(max_epochs=3, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
              enable_model_summary=False, use_distributed_sampler=False).fit(Recorder(), loader)
    epochs = [seen[i : i + 3] for i in range(0, 9, 3)]
    expected = []
    for epoch in range(3):
        batches.set_epoch(epoch)
        expected.append(list(batches))
    assert epochs == expected and epochs[0] != epochs[1] != epochs[2]


def test_resumed_epoch_skips_the_batches_already_trained_on():
    sampler = ResumableBatches(10, 2, seed=0, lengths=[5, 1, 9, 3, 7, 2, 8, 4, 6, 10])
    sampler.set_epoch(3)
    whole = list(sampler)
    sampler.skip = 2
    assert list(sampler) == whole[2:]
    assert list(sampler) == whole  # the skip applies to the resumed epoch only


def test_ranks_share_the_epoch_without_overlap(monkeypatch):
    per_rank = []
    for rank in range(3):
        monkeypatch.setattr(batches_module, "_rank_and_world", lambda rank=rank: (rank, 3))
        sampler = ResumableBatches(20, 2, seed=1)
        per_rank.append(list(sampler))
        assert len(per_rank[-1]) == len(sampler) == 3  # 10 batches: 3 steps on every rank, one left over
    seen = [i for batches in per_rank for batch in batches for i in batch]
    assert len(seen) == len(set(seen)) == 18


@pytest.mark.parametrize("lengths", [None, [(i * 37) % 23 + 1 for i in range(21)]])
def test_a_step_over_two_ranks_sees_the_batch_one_rank_sees_at_twice_the_batch_size(monkeypatch, lengths):
    n_items = 21  # the last global batch is short: 5 examples, split 3 + 2
    single = list(ResumableBatches(n_items, 8, seed=4, lengths=lengths))
    per_rank = []
    for rank in range(2):
        monkeypatch.setattr(batches_module, "_rank_and_world", lambda rank=rank: (rank, 2))
        sampler = ResumableBatches(n_items, 4, seed=4, lengths=lengths)
        per_rank.append(list(sampler))
        assert len(sampler) == len(single) == 3
    assert [sorted(a + b) for a, b in zip(*per_rank)] == [sorted(batch) for batch in single]


def test_config_differences_name_each_changed_key_and_ignore_paths():
    saved = "seed: 0\nmodel:\n  stride: 16\npaths:\n  root_dir: /a\nlogger:\n  csv: {}\n"
    requested = "seed: 0\nmodel:\n  stride: 32\n  pooling: max\npaths:\n  root_dir: /b\n"
    # an earlier release's window settings in the model node are compared where they are now (the windows group)
    assert config_differences(saved, requested) == ["windows.pooling: '<unset>' -> 'max'", "windows.stride: 16 -> 32"]
    assert config_differences(saved, saved) == []


def test_a_run_with_training_state_refuses_another_config(tmp_path):
    run = RunFolder(tmp_path / "run")
    run.checkpoints.mkdir(parents=True)
    run.write_config("seed: 0\nmethod:\n  lr: 0.001\n")
    run.write_config("seed: 0\nmethod:\n  lr: 0.001\n")  # the same config resumes
    with pytest.raises(UserError, match=r"method.lr: 0.001 -> 0.002"):
        run.write_config("seed: 0\nmethod:\n  lr: 0.002\n")
    assert "0.001" in run.config.read_text()


def stop_on_signal(command: list[str], checkpoint: Path, env: dict) -> None:
    """Run ``command``, send SIGUSR1 once ``checkpoint`` exists (so mid-training), expect a clean stop."""
    process = subprocess.Popen(command, cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while not checkpoint.exists() and process.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGUSR1)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-3000:]
    assert "stopped on the requeue signal" in out


def run_ok(command: list[str], env: dict) -> subprocess.CompletedProcess:
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


@pytest.mark.slow
def test_a_lora_run_resumes_its_adapter_to_the_same_result(tmp_path, tiny_causal_lm_dir):
    import torch

    from conftest import write_legalbench_task

    root = tmp_path / "legalbench"
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tstatement number {i}\n" for i in range(8))
    tests = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tstatement number {i}\n" for i in range(20, 26))
    for task in ("hearsay",):
        write_legalbench_task(root, task, "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + tests)

    def command(run_dir: Path) -> list[str]:
        return [sys.executable, "train.py", "experiment=legalbench_lora", f"model.pretrained={tiny_causal_lm_dir}",
                f"data.root={root}", "data.tasks=[hearsay]", "method.regime=per_task", "trainer.max_epochs=20",
                "datamodule.batch_size=1", "trainer.enable_progress_bar=false", "logger=none",
                f"hydra.run.dir={run_dir}"]

    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    run_ok(command(straight), ENV)
    last = stopped / "checkpoints" / "hearsay" / "last.ckpt"
    stop_on_signal(command(stopped), last, ENV)
    saved = torch.load(last, weights_only=True)["state_dict"]
    assert saved and all("lora_" in key for key in saved)  # adapter weights only, not the base model

    resumed = run_ok(command(stopped), ENV)
    assert "resuming" in resumed.stdout + resumed.stderr
    assert (stopped / "predictions.jsonl").read_text() == (straight / "predictions.jsonl").read_text()


def test_sigterm_during_training_is_this_callbacks_alone(tmp_path):
    """Lightning wraps the SIGTERM handler after the setup hook and, on its own next check (one during
    validation included), ends the run with a bare SystemExit: exit 0 and no checkpoint. From the start of
    training the callback's handler is the only one, and the original comes back at teardown."""
    from legalft.training.preemption import PreemptionCheckpoint

    original = signal.getsignal(signal.SIGTERM)
    callback = PreemptionCheckpoint(str(tmp_path / "last.ckpt"))
    callback.setup(None, None, "fit")
    signal.signal(signal.SIGTERM, lambda signum, frame: None)  # what Lightning's signal connector does next
    callback.on_train_start(None, None)
    assert signal.getsignal(signal.SIGTERM) == callback._note_signal
    callback.teardown(None, None, "fit")
    assert signal.getsignal(signal.SIGTERM) == original
