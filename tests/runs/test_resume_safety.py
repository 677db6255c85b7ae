"""Across a resume: damaged checkpoints moved aside, checkpoints kept only where saved, checkpoints that would run code
refused, logs that keep their rows, files readable as the umask says, runs killed, stopped or copied that resume or
start over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import ROOT
from legalft.foundation.errors import UserError
from legalft.runs.folder import RunFolder
from legalft.runs.saved_layout import config_differences

from run_folders import tree, train_command, wait_for, validated_epochs


# --- checkpoints, logs and configs across a resume ------------------------------------------------------
def test_an_unreadable_last_checkpoint_is_moved_aside_and_the_run_starts_over(tmp_path, caplog):
    import torch

    from legalft.training.checkpoints import checkpoint_to_resume

    last = tmp_path / "last.ckpt"
    assert checkpoint_to_resume(last) is None
    torch.save({"epoch": 2, "w": torch.ones(3)}, last)
    assert checkpoint_to_resume(last) == last
    last.write_bytes(last.read_bytes()[:100])  # a copy cut short
    assert checkpoint_to_resume(last) is None
    assert not last.exists() and len(list(tmp_path.glob("last.ckpt.corrupt-*"))) == 1
    assert "cannot be read (truncated or damaged)" in caplog.text and "training starts over" in caplog.text


def test_checkpoints_a_run_does_not_keep_are_only_those_this_command_saved(tmp_path):
    """checkpoints.keep_best=false, keep_optimizer=false: a checkpoint an earlier command left, or a file in a
    checkpoints/ folder the run did not write (a user's folder as hydra.run.dir), survives."""
    import torch

    from legalft.training.checkpoints import AtomicCheckpointIO

    run = RunFolder(tmp_path)
    earlier, foreign = run.best_checkpoint, run.checkpoints / "old_experiment" / "last.ckpt"
    foreign.parent.mkdir(parents=True)
    torch.save({"w": torch.ones(1)}, earlier)
    foreign.write_bytes(b"someone else's")
    adapter = run.checkpoints / "pooled" / "last.ckpt"
    for path in (run.last_checkpoint, adapter):
        AtomicCheckpointIO().save_checkpoint({"w": torch.ones(1)}, path)
    kept = run.checkpoints / "kept"
    for path in (kept / "last.ckpt",):
        AtomicCheckpointIO().save_checkpoint({"w": torch.ones(1)}, path)
    run.keep_checkpoints({"keep_best": True, "keep_optimizer": True})  # keeps everything
    assert run.last_checkpoint.exists() and adapter.exists()
    run.keep_checkpoints({"keep_best": False, "keep_optimizer": False})
    assert earlier.is_file() and foreign.read_bytes() == b"someone else's"
    assert not run.last_checkpoint.exists() and not adapter.exists() and not (kept / "last.ckpt").exists()
    AtomicCheckpointIO().save_checkpoint({"w": torch.ones(1)}, run.last_checkpoint)
    from legalft.runs.migrations import in_current_layout

    earlier_release = in_current_layout({"checkpoints": {"keep_best": True, "keep_last": True}})
    run.keep_checkpoints(earlier_release["checkpoints"])  # an earlier release's key: keep_optimizer
    assert earlier.is_file() and run.last_checkpoint.exists()


def test_a_checkpoint_that_would_run_code_is_not_loaded(tmp_path):
    import torch

    from legalft.training.checkpoints import AtomicCheckpointIO, checkpoint_to_resume

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'owned'}",))

    torch.save({"state_dict": {}, "evil": Payload()}, tmp_path / "last.ckpt")
    with pytest.raises(UserError, match="last.ckpt: this file holds code, not weights: it was not loaded") as err:
        AtomicCheckpointIO().load_checkpoint(tmp_path / "last.ckpt")
    assert "weights_only=False" not in str(err.value)
    assert checkpoint_to_resume(tmp_path / "last.ckpt") is None
    assert not (tmp_path / "owned").exists()


def test_resumed_csv_logs_keep_the_rows_before_the_resume(tmp_path):
    from legalft.training.csv_logger import ResumableCSVLogger

    def log(steps):
        logger = ResumableCSVLogger(str(tmp_path), name="csv", version="")
        logger.save()  # Lightning saves before any row is logged, too
        for step in steps:
            logger.log_metrics({"train/loss": 1.0 / (step + 1), "run": float(len(steps))}, step=step)
        logger.save()

    log(range(0, 6))  # killed after step 5; its last checkpoint was at step 3
    log(range(3, 8))
    with open(tmp_path / "csv" / "metrics.csv") as f:
        import csv

        rows = list(csv.DictReader(f))
    assert [int(r["step"]) for r in rows] == list(range(8))
    assert [r["run"] for r in rows] == ["6.0"] * 3 + ["5.0"] * 5  # steps 3-5 are the resumed run's

    for score in (0.5, 0.75):  # the finished run scored twice more: results are logged without a step
        logger = ResumableCSVLogger(str(tmp_path), name="csv", version="")
        logger.log_metrics({"test/macro_f1": score})
        logger.save()
    with open(tmp_path / "csv" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["step"] for r in rows if r["train/loss"]] == [str(step) for step in range(8)]  # the curves are kept
    assert [(r["step"], r["test/macro_f1"]) for r in rows if r["test/macro_f1"]] == [("7", "0.5"), ("7", "0.75")]


def test_a_copied_run_folder_resumes():
    saved = ("paths:\n  root_dir: /home/a/proj\n  output_dir: /home/a/proj/checkpoints/q/1\n"
             "callbacks:\n  model_checkpoint:\n    dirpath: /home/a/proj/checkpoints/q/1/checkpoints\n"
             "trainer:\n  default_root_dir: /home/a/proj/checkpoints/q/1\n"
             "data:\n  root: /home/a/proj/data/samples/proslex_sample\n")
    copied = saved.replace("/home/a/proj/checkpoints/q/1", "/scratch/b/run").replace("/home/a/proj", "/scratch/b/proj")
    copied = copied.replace("output_dir: /scratch/b/proj/checkpoints/q/1", "output_dir: /scratch/b/run")
    assert config_differences(saved, copied) == []
    assert config_differences(saved, copied.replace("proslex_sample", "other")) == [
        "data.root: '<paths.root_dir>/data/samples/proslex_sample' -> '<paths.root_dir>/data/samples/other'"]


def test_results_are_readable_as_the_umask_allows(tmp_path):
    from legalft.foundation.io import atomic_write_json

    old = os.umask(0o027)
    try:
        atomic_write_json(tmp_path / "metrics.json", {"a": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "metrics.json").stat().st_mode & 0o777 == 0o640
    os.chmod(tmp_path / "metrics.json", 0o664)  # a replaced file keeps its mode, as a plain write would
    atomic_write_json(tmp_path / "metrics.json", {"a": 2})
    assert (tmp_path / "metrics.json").stat().st_mode & 0o777 == 0o664


def test_a_folder_written_atomically_appears_whole_or_not_at_all(tmp_path):
    from legalft.foundation.io import atomic_folder

    old = os.umask(0o027)
    try:
        with atomic_folder(tmp_path / "out") as partial:
            (partial / "weights").write_text("w")
            assert not (tmp_path / "out").exists()  # nothing under the final name until the block ends
    finally:
        os.umask(old)
    assert (tmp_path / "out" / "weights").read_text() == "w"
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o750  # mkdir's mode, not mkdtemp's 0700
    with pytest.raises(RuntimeError), atomic_folder(tmp_path / "failed") as partial:
        (partial / "half").write_text("h")
        raise RuntimeError
    with pytest.raises(OSError), atomic_folder(tmp_path / "out") as partial:  # never renamed over a folder with files
        (partial / "weights").write_text("other")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"] and (tmp_path / "out" / "weights").read_text() == "w"



def test_an_atomic_folder_s_files_get_the_umask_s_modes_and_its_new_parents_go_on_failure(tmp_path):
    """Libraries write owner-only files (safetensors: 0600): the folder's files get a plain write's mode; parents
    made for a folder that failed are removed, and a parent that was there stays."""
    from legalft.foundation.io import atomic_folder

    old = os.umask(0o022)
    try:
        with atomic_folder(tmp_path / "a" / "b" / "out", make_parents=True) as partial:
            (partial / "weights").write_text("w")
            (partial / "weights").chmod(0o600)
    finally:
        os.umask(old)
    assert (tmp_path / "a" / "b" / "out" / "weights").stat().st_mode & 0o777 == 0o644
    with pytest.raises(RuntimeError), atomic_folder(tmp_path / "c" / "d" / "out", make_parents=True):
        raise RuntimeError
    with pytest.raises(RuntimeError), atomic_folder(tmp_path / "a" / "new" / "out", make_parents=True):
        raise RuntimeError
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"] and sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b"]


@pytest.mark.slow
def test_a_killed_run_copied_elsewhere_starts_over_past_a_damaged_checkpoint(tmp_path, tiny_bert_dir):
    import shutil
    import signal

    from commands import run_script

    run_dir, moved = tmp_path / "run", tmp_path / "elsewhere" / "run"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(train_command(tiny_bert_dir, run_dir, "trainer.max_epochs=5"), cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: len(validated_epochs(run_dir)) >= 2, process, "two validated epochs")
    process.send_signal(signal.SIGKILL)
    process.wait()
    shutil.copytree(run_dir, moved)
    last = moved / "checkpoints" / "last.ckpt"
    last.write_bytes(last.read_bytes()[: last.stat().st_size // 2])  # a checkpoint cut short
    stale = moved / "checkpoints" / ".best.ckpt.k2j_x9aq.tmp"  # what a kill mid-save leaves
    stale.write_bytes(b"\0" * 1000)

    result = run_script("train.py", *train_command(tiny_bert_dir, moved, "trainer.max_epochs=5")[2:])
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    assert "cannot be read (truncated or damaged): moved aside to last.ckpt.corrupt-" in output
    assert "training starts over" in output  # best.ckpt holds weights only: nothing else resumes exactly
    assert len(list((moved / "checkpoints").glob("last.ckpt.corrupt-*"))) == 1
    assert stale.read_bytes() == b"\0" * 1000  # named in the log, left for the user: this run did not write it
    assert validated_epochs(moved) == [0, 1, 2, 3, 4]  # the curves of the run that started over, none twice
    metrics = json.loads((moved / "metrics.json").read_text())
    assert metrics["tasks"]["proslex_sample"]["n"] == 35 and "resumed_from" not in metrics["run"]
    uninterrupted = tmp_path / "uninterrupted"
    assert run_script("train.py", *train_command(tiny_bert_dir, uninterrupted, "trainer.max_epochs=5")[2:]).returncode == 0
    assert json.loads((uninterrupted / "metrics.json").read_text())["tasks"] == metrics["tasks"]  # the seed's result


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_run_stopped_by_sigterm_or_sigint_fails_with_a_checkpoint_and_resumes(tmp_path, tiny_bert_dir, stop):
    from commands import run_script

    run_dir = tmp_path / "run"
    command = train_command(tiny_bert_dir, run_dir, "trainer.max_epochs=10")  # the signal lands mid-training
    process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: len(validated_epochs(run_dir)) >= 1, process, "a validated epoch")
    process.send_signal(stop)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 128 + stop, err[-3000:]  # what `afterok` and a shell read as failed
    assert f"stopped on {stop.name} before training finished" in err
    assert (run_dir / "checkpoints" / "last.ckpt").exists() and not (run_dir / "metrics.json").exists()
    result = run_script("train.py", *command[2:])
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["resumed_from"] == {"checkpoint": "last.ckpt", "exact": True}


@pytest.mark.slow
def test_a_second_run_into_a_running_run_folder_is_refused(tmp_path, tiny_bert_dir):
    from commands import run_script

    run_dir = tmp_path / "run"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    first = subprocess.Popen(train_command(tiny_bert_dir, run_dir, "trainer.max_epochs=100", "seed=0"), cwd=ROOT,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (run_dir / "config.yaml").exists(), first, "the first run's config")
        before = tree(run_dir / ".hydra")
        second = run_script("train.py", *train_command(tiny_bert_dir, run_dir, "trainer.max_epochs=100", "seed=1")[2:])
        assert second.returncode == 2 and "is in use by another run (host " in second.stderr
        assert f"PID {first.pid}, started" in second.stderr
        assert tree(run_dir / ".hydra") == before and first.poll() is None
    finally:
        first.kill()  # SIGKILL: its lock goes with it
        first.wait()
    third = run_script("train.py", *train_command(tiny_bert_dir, run_dir, "trainer.max_epochs=abc")[2:])
    assert third.returncode == 2 and "trainer.max_epochs='abc'" in third.stderr  # past the lock
    assert (run_dir / "config.yaml").exists() and tree(run_dir / ".hydra") == before  # the first run's, kept


KILLED_MID_SAVE = """
import os, runpy, signal, sys
from lightning.pytorch.plugins.io import TorchCheckpointIO

saves = []
torch_save = TorchCheckpointIO.save_checkpoint

def killed_inside_the_third_write(self, checkpoint, path, storage_options=None):
    saves.append(path)
    if len(saves) == 3:  # the second epoch's first checkpoint: half a file on disk, then the kill
        with open(path, "wb") as stream:
            stream.write(b"PK\\x03\\x04" + bytes(4096))
            stream.flush()
            os.fsync(stream.fileno())
        os.kill(os.getpid(), signal.SIGKILL)
    return torch_save(self, checkpoint, path, storage_options)

TorchCheckpointIO.save_checkpoint = killed_inside_the_third_write
sys.argv = sys.argv[1:]
runpy.run_path("train.py", run_name="__main__")
"""


@pytest.mark.slow
def test_a_kill_inside_a_checkpoint_write_leaves_the_last_one_whole_and_the_resume_reaches_the_clean_result(
        tmp_path, tiny_bert_dir):
    from commands import run_script

    run_dir, clean = tmp_path / "run", tmp_path / "clean"
    command = train_command(tiny_bert_dir, run_dir, "trainer.max_epochs=3")
    killed = subprocess.run([sys.executable, "-c", KILLED_MID_SAVE, *command[1:]], cwd=ROOT, capture_output=True,
                            text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    checkpoints = run_dir / "checkpoints"
    half_written = [p for p in checkpoints.iterdir() if p.name.endswith(".tmp")]
    assert len(half_written) == 1 and ".train-" in half_written[0].name  # named for the command that wrote it
    from legalft.training.checkpoints import readable

    assert readable(RunFolder(run_dir).last_checkpoint) and not (run_dir / "metrics.json").exists()
    resumed = run_script("train.py", *command[2:])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["resumed_from"] == {"checkpoint": "last.ckpt", "exact": True}
    assert run_script("train.py", *train_command(tiny_bert_dir, clean, "trainer.max_epochs=3")[2:]).returncode == 0
    assert json.loads((clean / "metrics.json").read_text())["tasks"] == metrics["tasks"]
