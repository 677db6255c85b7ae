"""A user's data is never lost or mixed: what a failed command removes (and only that), the run folder's lock between
processes, temporary files an interrupted run left."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from legalft.apps.run_guard import RunFolderGuard, leftover_temp_files, links_leading_out
from legalft.foundation.errors import UserError
from legalft.foundation.io import atomic_write_text
from legalft.foundation.log_files import NewLogFile
from legalft.runs.lock import RunLock

from run_folders import tree


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
