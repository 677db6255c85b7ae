"""A full disk gets one message, "no space left writing <file> (<n> MB free on <mount>)", and nothing half-written:
results, folders (exports) and checkpoints, on a 1 MB file system the test mounts (tmpfs; root)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from legalft.foundation.errors import UserError


@pytest.fixture
def small_disk(tmp_path):
    folder = tmp_path / "small"
    folder.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small file system needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode()[:200]}")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def test_a_result_file_on_a_full_disk_is_one_message_and_leaves_nothing(small_disk):
    from legalft.foundation.io import atomic_write_text

    (small_disk / "metrics.json").write_text("{}")  # an earlier result: kept as it was
    with pytest.raises(UserError, match=rf"no space left writing {small_disk}/metrics.json \(\d+ MB free on "
                                        rf"{small_disk}\): free some space"):
        atomic_write_text(small_disk / "metrics.json", "x" * 2_000_000)
    assert sorted(p.name for p in small_disk.iterdir()) == ["metrics.json"]
    assert (small_disk / "metrics.json").read_text() == "{}"


def test_an_export_folder_on_a_full_disk_is_one_message_and_leaves_nothing(small_disk):
    from legalft.foundation.io import atomic_folder

    with pytest.raises(UserError, match=rf"no space left writing {small_disk}/export"):
        with atomic_folder(small_disk / "export") as partial:
            (partial / "model.safetensors").write_bytes(b"0" * 2_000_000)
    assert list(small_disk.iterdir()) == []


def test_a_checkpoint_on_a_full_disk_is_one_message_and_the_previous_one_stays(small_disk):
    import torch

    from legalft.training.checkpoints import AtomicCheckpointIO

    io = AtomicCheckpointIO()
    io.save_checkpoint({"weights": torch.zeros(10)}, small_disk / "last.ckpt")
    before = (small_disk / "last.ckpt").read_bytes()
    with pytest.raises(UserError, match=rf"no space left writing {small_disk}/last.ckpt"):
        io.save_checkpoint({"weights": torch.zeros(1_000_000)}, small_disk / "last.ckpt")  # 4 MB
    assert sorted(p.name for p in small_disk.iterdir()) == ["last.ckpt"]
    assert (small_disk / "last.ckpt").read_bytes() == before
    assert torch.equal(io.load_checkpoint(small_disk / "last.ckpt")["weights"], torch.zeros(10))
