"""Checkpoints written to a temporary file and renamed into place: a job killed mid-save
(preemption, time limit) leaves the previous checkpoint intact instead of a truncated one. They are
read with ``weights_only=True`` (tensors and plain values only), so a checkpoint from someone else's
run folder cannot run code; and one that cannot be read is moved aside rather than blocking every rerun."""

from __future__ import annotations

import logging
import pickle
import time
from contextlib import contextmanager
from pathlib import Path

from lightning.pytorch.plugins.io import TorchCheckpointIO

from legalft.foundation.errors import UserError
from legalft.foundation.io import atomic_write

log = logging.getLogger(__name__)


@contextmanager
def refusing_code(path):
    """Loads of ``path`` with ``weights_only=True`` inside the block: a file that holds pickled objects
    other than tensors and plain values (code that would run on load) is refused with a message, not
    torch's traceback, which suggests loading it with ``weights_only=False``."""
    try:
        yield
    except pickle.UnpicklingError:
        raise UserError(f"{path}: this file holds code, not weights: it was not loaded. Use checkpoints and adapters "
                        "from runs you trust, or train the run again.") from None


# Checkpoint files this process saved: the only ones a command removes once it no longer needs them
# (checkpoints.keep_*, a scored fold's), never one an earlier command or anything else left there.
_saved: set[Path] = set()


def remove_if_saved_here(path: Path) -> bool:
    """Remove ``path`` if this process saved it; whether it did."""
    path = Path(path).absolute()
    if path not in _saved or not path.is_file():
        return False
    path.unlink()
    _saved.discard(path)
    return True


class AtomicCheckpointIO(TorchCheckpointIO):
    def save_checkpoint(self, checkpoint, path, storage_options=None) -> None:
        atomic_write(path, lambda tmp: super(AtomicCheckpointIO, self).save_checkpoint(checkpoint, tmp, storage_options))
        _saved.add(Path(path).absolute())

    def load_checkpoint(self, path, map_location=None, weights_only=None):
        with refusing_code(path):
            return super().load_checkpoint(path, map_location=map_location or (lambda storage, loc: storage),
                                           weights_only=True)


def trainer_plugins() -> list:
    """Atomic checkpoints; under SLURM, Lightning's cluster environment without its auto-requeue,
    because ``legalft.training.preemption.PreemptionCheckpoint`` handles the requeue signal at a batch boundary."""
    from lightning.pytorch.plugins.environments import SLURMEnvironment

    plugins = [AtomicCheckpointIO()]
    if SLURMEnvironment.detect():
        plugins.append(SLURMEnvironment(auto_requeue=False))
    return plugins


def readable(path: Path) -> bool:
    import torch

    if path.is_dir():  # DeepSpeed's checkpoint: a folder of shards, complete once DeepSpeed wrote its tag file
        return (path / "latest").is_file()
    try:
        torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        return True
    except Exception:  # truncated, not a zip archive, or holding objects other than tensors and plain values
        return False


def checkpoint_to_resume(last: Path) -> Path | None:
    """``last`` when it loads. One that does not (a disk filled mid-save, a copy cut short) is renamed
    ``<name>.corrupt-<time>``, kept for inspection, and said so, and the run starts over: no other
    checkpoint resumes exactly (``best.ckpt`` holds weights only)."""
    if not last.exists():
        return None
    if readable(last):
        return last
    aside = last.with_name(f"{last.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    last.rename(aside)
    log.warning("checkpoint %s cannot be read (truncated or damaged): moved aside to %s; training starts over",
                last, aside.name)
    return None


def resumed_from(resumed: Path | None) -> dict:
    """The ``resumed_from`` field of metrics.json when training resumed. Runs resume only from
    ``last.ckpt``, saved at a batch or epoch boundary with the random states, so the result is the seed's
    uninterrupted one (``exact``); when it cannot be read the run starts over."""
    return {"resumed_from": {"checkpoint": resumed.name, "exact": True}} if resumed else {}


def consolidated(deepspeed_checkpoint: Path) -> Path:
    """The one-file checkpoint beside a DeepSpeed checkpoint folder: weights gathered from the shards,
    read with ``weights_only=True`` like any other."""
    return deepspeed_checkpoint.with_name(f"{deepspeed_checkpoint.stem}.consolidated.ckpt")


def consolidate(deepspeed_checkpoint: Path) -> Path:
    """Write ``consolidated(deepspeed_checkpoint)`` with Lightning's converter. Only for a folder this run
    has just written: DeepSpeed's shards are pickles, which the converter loads in full."""
    from lightning.pytorch.utilities.deepspeed import convert_zero_checkpoint_to_fp32_state_dict

    target = consolidated(deepspeed_checkpoint)
    atomic_write(target, lambda tmp: convert_zero_checkpoint_to_fp32_state_dict(deepspeed_checkpoint, tmp))
    return target
