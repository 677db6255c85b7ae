"""A user's data is never lost, mixed or run: what a failed command removes, the run folder's lock,
run folders from someone else, damaged checkpoints, resumed logs, permissions, and settings checked
before anything is written."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from conftest import ROOT, proslex_doc, write_collection
from legalft.foundation.errors import UserError
from legalft.foundation.io import atomic_write_text
from legalft.foundation.log_files import NewLogFile
from legalft.runs.folder import RunFolder
from legalft.runs.saved_layout import config_differences
from legalft.runs.saved_config import check_rescorable, instantiate_from_run
from legalft.apps.run_guard import RunFolderGuard, leftover_temp_files, links_leading_out
from legalft.runs.lock import RunLock


def tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): (p.read_text() if p.is_file() else "/") for p in sorted(folder.rglob("*"))}


# --- what a failed command removes ------------------------------------------------------------------
def test_a_failed_command_removes_only_what_it_created(tmp_path):
    folder = tmp_path / "thesis"
    (folder / "chapter").mkdir(parents=True)
    (folder / "thesis.txt").write_text("draft")
    (folder / "chapter" / "notes.md").write_text("notes")
    guard = RunFolderGuard()
    guard.claim(folder, hydra_subdir=".hydra")
    (folder / ".hydra").mkdir()  # Hydra's record of the command
    (folder / ".hydra" / "config.yaml").write_text("seed: 0")
    atomic_write_text(folder / "chapter" / "metrics.json", "{}")
    atomic_write_text(folder / "thesis.txt", "draft, then a config")  # overwritten, but not created: it stays
    guard.undo()
    assert tree(folder) == {"chapter": "/", "chapter/notes.md": "notes", "thesis.txt": "draft, then a config"}


def test_what_the_user_saves_into_the_folder_during_a_failing_command_survives(tmp_path):
    folder = tmp_path / "thesis"
    folder.mkdir()
    guard = RunFolderGuard()
    guard.claim(folder, hydra_subdir=".hydra")
    atomic_write_text(folder / "checkpoints" / "cv" / "fold_0.json", "{}")  # the command's own, in new folders
    (folder / "checkpoints" / "last.ckpt").write_text("weights")  # a library's file in the command's folder
    (folder / "notes.txt").write_text("saved meanwhile")  # the user's, while the command runs
    (folder / "drafts" / "2024").mkdir(parents=True)
    guard.undo()
    assert tree(folder) == {"drafts": "/", "drafts/2024": "/", "notes.txt": "saved meanwhile"}


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_kept(tmp_path):
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("precious")
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / ".lock").symlink_to(elsewhere)
    with pytest.raises(UserError, match=r"\.lock is a symbolic link"):
        RunLock(folder).acquire()
    with pytest.raises(UserError, match=r"symbolic links to files outside it \(\.lock -> "):
        RunFolderGuard().claim(folder)
    assert elsewhere.read_text() == "precious"


def test_a_run_folder_whose_log_leads_outside_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere.log"
    elsewhere.write_text("precious")
    folder = tmp_path / "run"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "inside").symlink_to(folder / "sub")  # a link within the folder is harmless
    (folder / "wandb" / "offline-run-1" / "logs").mkdir(parents=True)  # W&B links its logs to its cache
    (folder / "wandb" / "offline-run-1" / "logs" / "debug.log").symlink_to(elsewhere)
    (folder / "train.log").symlink_to(elsewhere)
    assert links_leading_out(folder) == [folder / "train.log"]
    with pytest.raises(UserError, match=r"train\.log -> .*elsewhere\.log"):
        RunFolderGuard().claim(folder)
    assert elsewhere.read_text() == "precious" and not (folder / ".lock").exists()


def test_the_log_file_is_always_a_new_file(tmp_path):
    import logging

    (tmp_path / "train.log").write_text("the user's own log\n")
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("precious")
    (tmp_path / "evaluate.log").symlink_to(elsewhere)
    for name in ("train.log", "evaluate.log", "fresh.log"):
        handler = NewLogFile(str(tmp_path / name))
        handler.emit(logging.makeLogRecord({"msg": "a run's line"}))
        handler.close()
        written = Path(handler.baseFilename)
        assert written.read_text() == "a run's line\n" and not written.is_symlink()
        assert (written.name == name) == (name == "fresh.log")
    assert (tmp_path / "train.log").read_text() == "the user's own log\n" and elsewhere.read_text() == "precious"


def test_a_new_run_folder_and_the_parents_it_created_go(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    folder = tmp_path / "checkpoints" / "quickstart" / "2026-01-01"
    guard = RunFolderGuard()
    guard.claim(folder)
    NewLogFile(str(folder / "train.log")).close()  # Hydra's log file handler (conf/hydra/default.yaml)
    guard.undo()
    assert list(tmp_path.rglob("*")) == [tmp_path / "checkpoints"]  # it existed before: it stays


@pytest.mark.slow
def test_bad_input_leaves_an_existing_run_folder_as_it_was(tmp_path):
    from commands import run_script

    for script, overrides in (
        ("train.py", ["experiment=quickstart", "data.root=/nonexistent"]),
        ("evaluate.py", ["prompt=base_prompt", "model=smollm2", "data=legalbench", "data.tasks=[hearsy]"]),
    ):
        folder = tmp_path / script
        folder.mkdir()
        (folder / "thesis.txt").write_text("draft")
        log_name = script.replace(".py", ".log")
        (folder / log_name).write_text("the user's own log")  # never appended to
        result = run_script(script, *overrides, f"hydra.run.dir={folder}")
        assert result.returncode == 2 and result.stderr.startswith("error: ") and "Traceback" not in result.stderr
        message = result.stderr.splitlines()[0].removeprefix("error: ")
        assert (result.stdout + result.stderr).count(message) == 1  # said once, not also as a console log line
        assert tree(folder) == {"thesis.txt": "draft", log_name: "the user's own log"}
    (tmp_path / "empty.csv").write_text("")  # and a new run folder on bad data goes, with the parents it made
    result = run_script("train.py", "method=classical", "data=custom", f"data.train_path={tmp_path / 'empty.csv'}",
                        f"hydra.run.dir={tmp_path / 'new' / 'run'}")
    assert result.returncode == 2 and "empty.csv: empty file" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "new").exists()


# --- the lock ---------------------------------------------------------------------------------------
HOLD_LOCK = "import sys, time; from pathlib import Path; from legalft.runs.lock import RunLock; " \
            "RunLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)"


def test_a_second_process_is_refused_and_a_killed_holder_does_not_block(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match=rf"in use by another run \(host .+, PID {holder.pid}, started 20\d\d-"):
            RunLock(tmp_path).acquire()
    finally:
        holder.kill()  # SIGKILL: the kernel drops the lock with the process
        holder.wait()
    lock = RunLock(tmp_path)
    lock.acquire()
    lock.release()


def test_a_refused_command_leaves_what_the_running_holder_writes_meanwhile(tmp_path, monkeypatch):
    import legalft.apps.run_guard as run_guard

    class HolderWritesWhileWeWait(RunLock):
        def acquire(self):  # the running holder saves a checkpoint between our look at the folder and our refusal
            (tmp_path / "epoch=3.ckpt").write_text("weights")
            super().acquire()

    monkeypatch.setattr(run_guard, "RunLock", HolderWritesWhileWeWait)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match="in use by another run"):
            RunFolderGuard().claim(tmp_path)
        assert (tmp_path / "epoch=3.ckpt").read_text() == "weights"
    finally:
        holder.kill()
        holder.wait()


def test_what_the_previous_holder_wrote_before_releasing_the_lock_survives_our_failure(tmp_path, monkeypatch):
    import legalft.apps.run_guard as run_guard

    class HolderFinishesWhileWeWait(RunLock):
        def acquire(self):  # the previous run writes its metrics, then lets go of the folder, and we take it
            (tmp_path / "metrics.json").write_text("{}")
            super().acquire()

    monkeypatch.setattr(run_guard, "RunLock", HolderFinishesWhileWeWait)
    guard = RunFolderGuard()
    guard.claim(tmp_path)
    NewLogFile(str(tmp_path / "train.log")).close()
    guard.undo()  # this command fails on bad input
    assert tree(tmp_path) == {"metrics.json": "{}"}


def test_temporary_files_an_interrupted_run_left_are_named_and_kept(tmp_path, caplog):
    (tmp_path / "checkpoints").mkdir()
    stale = [tmp_path / "checkpoints" / ".best.ckpt.k2j_x9aq.tmp", tmp_path / ".metrics.json.abcd1234.tmp"]
    mine = [tmp_path / ".notes.tmp", tmp_path / "draft.tmp", tmp_path / ".x.toolongname.tmp"]
    for path in stale + mine:
        path.write_text("partial")
    with caplog.at_level("WARNING", logger="legalft.apps.run_guard"):
        assert leftover_temp_files(tmp_path) == sorted(stale)
    assert all(p.exists() for p in stale + mine)  # an earlier command's files: never this one's to delete
    assert "checkpoints/.best.ckpt.k2j_x9aq.tmp" in caplog.text and ".notes.tmp" not in caplog.text


def test_the_temporary_files_atomic_write_makes_are_the_ones_recognised_as_leftovers(tmp_path):
    from legalft.foundation.io import atomic_write, is_atomic_write_temp

    temporary = []
    atomic_write(tmp_path / "best.ckpt", lambda tmp: (temporary.append(tmp), tmp.write_text("w")))
    assert is_atomic_write_temp(temporary[0]) and not temporary[0].exists()
    assert not is_atomic_write_temp(tmp_path / "best.ckpt")


# --- run folders from someone else --------------------------------------------------------------------
@pytest.mark.parametrize("planted, key", [
    ({"data": {"_target_": "os.system", "command": "touch /tmp/owned"}}, r"data._target_='os.system'"),
    ({"data": {"_target_": "legalft.data.proslex.ProslexSource",
               "label_map": {"_target_": "builtins.exec", "source": "1"}}}, r"data.label_map._target_='builtins.exec'"),
    ({"data": {"_target_": "legalft.data.proslex.ProslexSource", "root": "${wandb_run_id:/tmp}"}}, r"data.root=.* is an interpolation"),
    ({"data": {"_target_": ["os.system"], "command": "touch /tmp/owned"}}, r"data._target_=\['os.system'\] is not one of"),
    ({"data": {"_target_": {"nested": "os.system"}}}, r"data._target_=\{'nested': 'os.system'\} is not one of"),
])
def test_a_run_folder_config_builds_only_the_projects_classes(tmp_path, planted, key):
    config = tmp_path / "config.yaml"
    with pytest.raises(UserError, match=rf"config.yaml: {key}"):
        instantiate_from_run(OmegaConf.create(planted).data, "data", config)


def test_a_run_folder_config_builds_a_data_source(tmp_path):
    write_collection(tmp_path / "Test", "a.json", {"x1": proslex_doc()})
    node = OmegaConf.create({"_target_": "legalft.data.proslex.ProslexSource", "root": str(tmp_path),
                             "label_map": {"s3": {"label": "IPC 302"}}})
    (task,) = instantiate_from_run(node, "data", tmp_path / "config.yaml").load_test()
    assert [e.id for e in task.test] == ["x1"]


@pytest.mark.parametrize("case, message", [
    ("missing", "no such folder"),
    ("not a run", r"not a run folder \(it has no config.yaml\)"),
    ("in-context", "an in-context run; it has no trained weights to rescore"),
    ("in-context, recorded method", "an in-context run; it has no trained weights to rescore"),
    ("in-context, previous release", "an in-context run; it has no trained weights to rescore"),
    ("read-only", r"read-only, and scoring writes metrics.json.*cp -r"),
    ("target is a list", r"method._target_ is a list \(\['os.system'\]\), not the name of a class"),
])
def test_folders_that_cannot_be_rescored_say_what_they_are(tmp_path, monkeypatch, case, message):
    folder = tmp_path / "run"
    if case != "missing":
        folder.mkdir()
    if case == "in-context":
        (folder / "config.yaml").write_text("incontext:\n  strategy: base_prompt\nseed: 0\n")
    if case == "in-context, recorded method":  # what evaluate.py prompt=... writes now
        (folder / "config.yaml").write_text("method:\n  _target_: legalft.methods.incontext.IncontextMethod\n"
                                            "prompt:\n  strategy: base_prompt\nseed: 0\n")
    if case == "in-context, previous release":  # where the class lived then
        (folder / "config.yaml").write_text("method:\n  _target_: legalft.incontext.runner.IncontextMethod\n"
                                            "prompt:\n  strategy: base_prompt\nseed: 0\n")
    if case == "target is a list":
        (folder / "config.yaml").write_text("method:\n  _target_: [os.system]\nseed: 0\n")
    if case == "read-only":  # tests run as root, whom chmod does not stop: the check asks os.access
        (folder / "config.yaml").write_text("trainer:\n  max_epochs: 1\n")
        monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != folder)
    with pytest.raises(UserError, match=message) as refused:
        check_rescorable(folder)
    assert folder.exists() == (case != "missing")
    assert "hydra.run.dir set to this folder" not in str(refused.value)  # never advice that would overwrite it


@pytest.mark.slow
def test_evaluate_creates_nothing_for_a_folder_it_cannot_rescore(tmp_path):
    from commands import run_script

    result = run_script("evaluate.py", f"run={tmp_path / 'nothing'}")
    assert result.returncode == 2 and "no such folder" in result.stderr and not (tmp_path / "nothing").exists()


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
    run.keep_checkpoints({"keep_best": True, "keep_last": True})  # an earlier release's key: keep_optimizer
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

# --- settings checked before anything is written ---------------------------------------------------------
@pytest.mark.parametrize("override, message", [
    ("trainer.max_epochs=abc", r"trainer.max_epochs='abc': must be a whole number of epochs"),
    ("model.max_length=32", r"windows.stride=32 must be smaller than windows.max_length=32"),
    ("windows.pooling=median", r"windows.pooling='median': must be one of max, mean, attention"),
    ("protocol.train_size=0", r"protocol.train_size=0: must be null"),
    ("method.lr=abc", r"method.lr='abc': must be a positive number"),
    ("method.lr=-0.1", r"method.lr=-0.1: must be a positive number"),
    ("seed=abc", r"seed='abc': must be a whole number"),
    ("method.head_lr=1e999", r"method.head_lr=inf: must be a positive number"),
    ("method=classical data=custom method.C=-1", r"method.C=-1: must be a positive number"),
    ("method=classical data=custom protocol.test_fraction=0", r"protocol.test_fraction=0: must be null or a fraction"),
    ("method=classical data=custom +method.classifer=svm",
     r"method.classifer: not a setting of .*\(its settings: C, .*classifier.*\)\. Did you mean method.classifier\?"),
    ("method=classical data=custom +data.txt_column=facts", r"data.txt_column: not a setting of .*Did you mean data.text_column\?"),
    ("experiment=legalbench_lora +method.regimen=pooled", r"method.regimen: .*Did you mean method.regime\?"),
])
def test_settings_of_the_wrong_kind_are_named(override, message):
    from hydra import compose, initialize_config_dir

    from legalft.configuration.resolvers import register_resolvers
    from legalft.apps.config_checks import check_config

    register_resolvers()
    *choices, override = override.split()  # groups chosen for the setting, else the quick start's
    base = choices or ["experiment=quickstart", "windows.stride=32"]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[*base, override, "paths.root_dir=/x"])
    with pytest.raises(UserError, match=message):
        check_config(cfg)


def test_every_bad_setting_is_named_in_one_message_before_a_folder_or_torch(tmp_path):
    run_dir = tmp_path / "run"
    code = ("import runpy, sys; sys.argv = ['evaluate.py', *sys.argv[1:]]\n"
            "try:\n    runpy.run_path('evaluate.py', run_name='__main__')\n"
            "finally:\n    print('HEAVY', [m for m in ('torch', 'transformers', 'lightning') if m in sys.modules])")
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-c", code, "prompt=base_prompt", "model=smollm2", "data=legalbench",
                             "data.tasks=[]", "prompt.strategy=bogus", "prompt.k=-1", "seed=-1",
                             f"hydra.run.dir={run_dir}"], cwd=ROOT, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    assert result.returncode == 2 and result.stderr.startswith("error: 4 settings need fixing:"), result.stderr
    for named in ("data.tasks=[]", "prompt.strategy='bogus': must be one of base_prompt, zero_shot, few_shot",
                  "prompt.k=-1", "seed=-1"):
        assert named in result.stderr
    assert "HEAVY []" in result.stdout and not run_dir.exists() and elapsed < 3


@pytest.mark.parametrize("limit", ["0", "-90"])
def test_a_test_row_limit_must_be_positive(limit):
    from legalft.apps.config_checks import check_config

    with pytest.raises(UserError, match=rf"protocol.limit={limit}: must be null \(every test row\)"):
        check_config(OmegaConf.create({"protocol": {"limit": int(limit)}}))


@pytest.mark.slow
def test_bad_settings_and_an_encoder_for_lora_stop_before_a_run_folder_exists(tmp_path):
    from commands import run_script

    for overrides, message in (
        (["experiment=quickstart", "trainer.max_epochs=abc"], "trainer.max_epochs='abc'"),
        (["experiment=legalbench_lora", "model=minilm", "lora.target_modules=[query,value]"],
         "model=minilm is an encoder model, not a causal LM, and LoRA runs tune causal LMs"),
    ):
        result = run_script("train.py", *overrides, f"hydra.run.dir={tmp_path / 'run'}")
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
        assert not (tmp_path / "run").exists()


def test_wandb_with_a_key_goes_offline_at_once_when_its_server_cannot_be_reached(monkeypatch, caplog):
    import socket

    from legalft.configuration.resolvers import wandb_offline

    monkeypatch.setenv("WANDB_API_KEY", "0" * 40)
    with socket.socket() as server:  # a W&B server that answers
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{server.getsockname()[1]}")
        assert wandb_offline() is False
        port = server.getsockname()[1]
    monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{port}")  # closed now
    start = time.monotonic()
    assert wandb_offline() is True and time.monotonic() - start < 5
    assert "W&B's server cannot be reached from here: this run logs to W&B offline" in caplog.text
    monkeypatch.delenv("WANDB_API_KEY")
    assert wandb_offline() is True  # no key: offline, nothing to say


# --- the hub ----------------------------------------------------------------------------------------------
def test_an_unreachable_hub_fails_at_once(monkeypatch):
    from huggingface_hub import constants

    from legalft.foundation import hub
    from legalft.models import pretrained

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "https://hub.invalid")  # a name that never resolves
    hub.hub_unreachable.cache_clear()
    try:
        start = time.monotonic()
        with pytest.raises(UserError, match="the hub is unreachable from here, and the model is not in the local cache"):
            pretrained.load_tokenizer("no-such-org/no-such-model")
        assert time.monotonic() - start < 10
    finally:
        hub.hub_unreachable.cache_clear()


# --- rescoring on the run's own training data ---------------------------------------------------------
def test_overlap_with_the_training_data_is_counted_by_task_and_text_or_document_id(tmp_path):
    from legalft.data.example import Example, TaskSpec

    proslex = TaskSpec("proslex", ("IPC 147", "IPC 302"), True)
    run = RunFolder(tmp_path)
    trained = [Example(id="a", text="The accused fled.", labels=("IPC 302",)),
               Example(id="b", text="A mob rioted.", labels=("IPC 147",))]
    assert run.overlap_with_training([(proslex, trained)]) is None  # an older run folder: not recorded
    run.write_training_data([(proslex, trained)])
    scored = [Example(id="a", text="other text", labels=("IPC 302",)),  # same document id
              Example(id="z", text="A mob rioted.", labels=("IPC 147",)),  # same text
              Example(id="y", text="New facts.", labels=("IPC 147",))]
    assert run.overlap_with_training([(proslex, scored)]) == 2
    assert json.loads(run.training_data.read_text())["tasks"]["proslex"]["ids"] == ["a", "b"]
    assert run.flag_overlap([(proslex, scored)]) == {"comparable": False, "overlap_with_training": 2}
    assert run.trained_on_exactly([(proslex, trained)]) and not run.trained_on_exactly([(proslex, trained[:1])])


def test_legalbench_row_numbers_and_other_tasks_rows_are_not_overlap(tmp_path):
    """LegalBench numbers each split's rows from 0, and one task's ids say nothing of another's."""
    from legalft.data.example import Example, TaskSpec

    hearsay = TaskSpec("hearsay", ("No", "Yes"), False, ids_name_documents=False)
    abercrombie = TaskSpec("abercrombie", ("generic", "fanciful"), False, ids_name_documents=False)
    run = RunFolder(tmp_path)
    run.write_training_data([(hearsay, [Example(id=str(i), text=f"train {i}", labels=("Yes",)) for i in range(4)]),
                             (abercrombie, [Example(id="0", text="shared text", labels=("generic",))])])
    test_hearsay = [Example(id=str(i), text=f"test {i}", labels=("No",)) for i in range(6)]
    test_abercrombie = [Example(id=str(i), text=f"mark {i}", labels=("generic",)) for i in range(3)]
    assert run.overlap_with_training([(hearsay, test_hearsay), (abercrombie, test_abercrombie)]) == 0
    assert run.flag_overlap([(hearsay, test_hearsay)]) == {}
    repeated = [Example(id="9", text="train 2", labels=("No",)), Example(id="8", text="shared text", labels=("No",))]
    assert run.overlap_with_training([(hearsay, repeated)]) == 1  # the same text in the same task only


def test_a_run_folder_of_an_older_release_is_checked_by_its_flat_record(tmp_path):
    from legalft.data.example import Example, TaskSpec

    run = RunFolder(tmp_path)
    run.training_data.write_text(json.dumps({"ids": ["0", "d1"], "text_sha256": []}))
    legalbench = TaskSpec("hearsay", ("No", "Yes"), False, ids_name_documents=False)
    custom = TaskSpec("custom", ("a", "b"), False)
    assert run.overlap_with_training([(legalbench, [Example(id="0", text="x", labels=("No",))])]) == 0
    assert run.overlap_with_training([(custom, [Example(id="d1", text="x", labels=("a",))])]) == 1
    run.training_data.write_text("{damaged")
    assert run.overlap_with_training([(custom, [])]) is None


# --- end to end, on a tiny BERT ---------------------------------------------------------------------------
def train_command(tiny_bert_dir: Path, run_dir: Path, *overrides: str) -> list[str]:
    from helpers import FAST_MODEL

    return [sys.executable, "train.py", "data=proslex_sample", f"model.pretrained={tiny_bert_dir}", *FAST_MODEL,
            "callbacks.early_stopping.patience=50", "trainer.enable_progress_bar=false", f"hydra.run.dir={run_dir}",
            *overrides]


def wait_for(condition, process, what: str, timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while not condition():
        assert process.poll() is None, f"the run ended before {what}: {process.communicate()[1][-2000:]}"
        assert time.time() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.1)


def validated_epochs(run_dir: Path) -> list[int]:
    import csv

    path = run_dir / "csv" / "metrics.csv"
    if not path.exists():
        return []
    with open(path) as f:
        return [int(r["epoch"]) for r in csv.DictReader(f) if r.get("val/loss")]


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


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, tiny_bert_dir) -> Path:
    from commands import run_script

    run_dir = tmp_path_factory.mktemp("safety") / "run"
    result = run_script("train.py", *train_command(tiny_bert_dir, run_dir, "trainer.max_epochs=2")[2:])
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


@pytest.mark.slow
def test_rescoring_a_planted_config_builds_nothing(trained_run, tmp_path):
    import shutil

    import yaml

    from commands import run_script

    copy = tmp_path / "shared_run"
    shutil.copytree(trained_run, copy)
    config = yaml.safe_load((copy / "config.yaml").read_text())
    config["datamodule"] = {"_target_": "os.system", "command": f"touch {tmp_path / 'owned'}"}
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    before = (copy / "metrics.json").read_text()
    result = run_script("evaluate.py", f"run={copy}")
    assert result.returncode == 2 and "datamodule._target_='os.system' is not one of the classes" in result.stderr
    assert not (tmp_path / "owned").exists() and (copy / "metrics.json").read_text() == before


@pytest.mark.slow
@pytest.mark.parametrize("damage, message", [
    ("pickled payload", "best.ckpt: this file holds code, not weights: it was not loaded"),
    ("another run's labels", r"best.ckpt: this checkpoint classifies 7 labels .*but the run folder's task has 8"),
])
def test_rescoring_a_foreign_checkpoint_is_refused_with_a_message(trained_run, tmp_path, damage, message):
    import shutil

    import torch

    from commands import run_script

    copy = tmp_path / "run"
    shutil.copytree(trained_run, copy)
    if damage == "pickled payload":
        class Payload:
            def __reduce__(self):
                return (os.system, (f"touch {tmp_path / 'owned'}",))

        torch.save({"state_dict": {}, "evil": Payload()}, copy / "checkpoints" / "best.ckpt")
    else:
        task = json.loads((copy / "label_map.json").read_text())
        task["labels"].append("IPC 999")
        (copy / "label_map.json").write_text(json.dumps(task))
    before = (copy / "metrics.json").read_text()
    result = run_script("evaluate.py", f"run={copy}")
    assert result.returncode == 2 and re.search(message, result.stderr), result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "weights_only=False" not in result.stderr + result.stdout
    assert not (tmp_path / "owned").exists() and (copy / "metrics.json").read_text() == before


@pytest.mark.slow
def test_rescoring_on_the_runs_own_training_documents_is_not_comparable(trained_run, tmp_path):
    import shutil

    from conftest import SAMPLE
    from commands import run_script

    copy = tmp_path / "run"
    shutil.copytree(trained_run, copy)
    (copy / "metrics.json").unlink()  # as when the run had no test split: the model is named from the config
    result = run_script("evaluate.py", f"run={copy}", f"data.test_path={SAMPLE / 'Train'}")
    assert result.returncode == 0, result.stderr[-3000:]
    run = json.loads((copy / "metrics.json").read_text())["run"]
    train_docs = sum(len(json.loads(p.read_text())) for p in (SAMPLE / "Train").glob("*.json"))
    assert run["comparable"] is False and run["overlap_with_training"] == train_docs
    assert "scored examples are ones the run trained or validated on" in result.stdout + result.stderr
    from legalft.kit.fusion import model_label

    use = json.loads((copy / "fusion.json").read_text())["use"]  # the option chosen on held-out macro-F1
    assert run["model"] == model_label("minilm", use)  # named from the config's model and fusion.json


@pytest.mark.slow
def test_a_run_folder_from_before_methods_were_named_rescores(trained_run, tmp_path):
    import shutil

    import yaml

    from commands import run_script

    copy = tmp_path / "old_run"
    shutil.copytree(trained_run, copy)
    config = yaml.safe_load((copy / "config.yaml").read_text())
    assert config.pop("method")["_target_"] == "legalft.methods.encoder.EncoderMethod"
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    before = (copy / "predictions.jsonl").read_text()
    result = run_script("evaluate.py", f"run={copy}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (copy / "predictions.jsonl").read_text() == before


def test_an_incontext_run_without_a_model_says_which_to_add_and_makes_no_folder(tmp_path):
    result = subprocess.run([sys.executable, "evaluate.py", "prompt=base_prompt", "data=legalbench", "data.tasks=[hearsay]",
                             f"paths.checkpoints_dir={tmp_path / 'checkpoints'}"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == ("error: prompt=... needs a causal LM to prompt: add model=smollm2 (offline), or model=llama3_8b, "
                             "mistral_7b or qwen2_7b (from the hub).\n")
    assert not (tmp_path / "checkpoints").exists()
