"""Checkpoints written to a temporary file and renamed into place: a job killed mid-save
(preemption, time limit) leaves the previous checkpoint intact instead of a truncated one."""

from __future__ import annotations

from lightning.pytorch.plugins.io import TorchCheckpointIO

from legalft.io import atomic_write


class AtomicCheckpointIO(TorchCheckpointIO):
    def save_checkpoint(self, checkpoint, path, storage_options=None) -> None:
        atomic_write(path, lambda tmp: super(AtomicCheckpointIO, self).save_checkpoint(checkpoint, tmp, storage_options))


def trainer_plugins() -> list:
    """Atomic checkpoints; under SLURM, Lightning's cluster environment without its auto-requeue,
    because ``legalft.preemption.PreemptionCheckpoint`` handles the requeue signal at a batch boundary."""
    from lightning.pytorch.plugins.environments import SLURMEnvironment

    plugins = [AtomicCheckpointIO()]
    if SLURMEnvironment.detect():
        plugins.append(SLURMEnvironment(auto_requeue=False))
    return plugins
