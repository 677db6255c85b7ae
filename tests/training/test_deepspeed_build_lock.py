"""A lock left by a DeepSpeed process killed while it compiled its CPU collectives is named, not waited on in silence."""

from __future__ import annotations

import os
import time

from legalft.training.deepspeed_strategy import STALE_BUILD_LOCK_S, stale_build_locks


def aged(path, seconds: float, now: float):
    path.parent.mkdir(parents=True)
    path.touch()
    os.utime(path, (now - seconds,) * 2)
    return path


def test_only_a_lock_older_than_a_build_takes_is_stale_in_torchs_default_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    monkeypatch.setattr("torch.utils.cpp_extension.get_default_build_root", lambda: str(tmp_path))
    now = time.time()
    old = aged(tmp_path / "py311_cpu" / "deepspeed_shm_comm" / "lock", STALE_BUILD_LOCK_S + 60, now)
    aged(tmp_path / "py312_cpu" / "deepspeed_shm_comm" / "lock", 10, now)  # a build under way
    aged(tmp_path / "py311_cpu" / "another_op" / "lock", STALE_BUILD_LOCK_S + 60, now)
    assert stale_build_locks(now) == [old]
    old.unlink()
    assert stale_build_locks(now) == []


def test_with_torch_extensions_dir_the_lock_is_looked_for_where_torch_builds_there(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    now = time.time()
    assert stale_build_locks(now) == []  # no build folder yet
    old = aged(tmp_path / "deepspeed_shm_comm" / "lock", STALE_BUILD_LOCK_S + 60, now)
    assert stale_build_locks(now) == [old]
