"""A lock left by a DeepSpeed process killed while it compiled its CPU collectives is named, not waited on in silence."""

from __future__ import annotations

import os
import time

from legalft.training.deepspeed_strategy import STALE_BUILD_LOCK_S, stale_build_locks


def test_only_a_lock_older_than_a_build_takes_is_stale(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    old = tmp_path / "py311_cpu" / "deepspeed_shm_comm" / "lock"
    fresh = tmp_path / "py312_cpu" / "deepspeed_shm_comm" / "lock"
    other = tmp_path / "py311_cpu" / "another_op" / "lock"
    for lock in (old, fresh, other):
        lock.parent.mkdir(parents=True)
        lock.touch()
    now = time.time()
    os.utime(old, (now - STALE_BUILD_LOCK_S - 60,) * 2)
    os.utime(other, (now - STALE_BUILD_LOCK_S - 60,) * 2)
    assert stale_build_locks(now) == [old]
    old.unlink()
    assert stale_build_locks(now) == []
