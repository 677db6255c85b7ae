"""Checkpoints written to a temporary file and renamed into place: a job killed mid-save
(preemption, time limit) leaves the previous checkpoint intact instead of a truncated one."""

from __future__ import annotations

from lightning.pytorch.plugins.io import TorchCheckpointIO

from legalft.io import atomic_write


class AtomicCheckpointIO(TorchCheckpointIO):
    def save_checkpoint(self, checkpoint, path, storage_options=None) -> None:
        atomic_write(path, lambda tmp: super(AtomicCheckpointIO, self).save_checkpoint(checkpoint, tmp, storage_options))
