"""Surviving preemption and time limits: checkpoint at a batch boundary, requeue, resume exactly.

SLURM sends a signal before the time limit (``#SBATCH --signal=USR1@120``, or ``scancel
--signal=USR1``). Lightning's own auto-requeue saves inside the signal handler, which can land
mid-step, while the data loader has already prefetched the next batch; a run resumed from such a
checkpoint is close to, but not the same as, one never stopped. This callback only notes the
signal; the next batch boundary saves ``last.ckpt`` with the position in the epoch and the
random states, requeues the job and stops. The resumed run (same run folder) continues with the
very next batch and the same dropout masks, so it ends with the same weights and metrics.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import subprocess
import warnings
from collections.abc import Sequence
from pathlib import Path

import lightning as L
import numpy as np
import torch

from legalft.data.batches import ResumableBatches

log = logging.getLogger(__name__)


class Preempted(Exception):
    """Training stopped on the requeue signal after saving a checkpoint."""

    exit_code = 0  # the job goes on: requeued, it resumes from the checkpoint

    def __init__(self, checkpoint: Path, requeued: str | None) -> None:
        self.checkpoint, self.requeued = checkpoint, requeued
        where = f"job {requeued} requeued" if requeued else "not in a SLURM job: rerun train.py into the same run folder"
        super().__init__(f"stopped on the requeue signal; checkpoint {checkpoint}; {where}")


class Terminated(Preempted):
    """Training stopped on SIGTERM or SIGINT (``scancel``, a preemption without the requeue signal, Ctrl-C)
    after saving a checkpoint. The command fails (exit 128 + the signal's number, as a shell reports a
    process the signal killed), so ``--dependency=afterok`` jobs do not run on an unfinished run."""

    def __init__(self, checkpoint: Path, received: signal.Signals) -> None:
        self.checkpoint, self.requeued, self.exit_code = checkpoint, None, 128 + int(received)
        Exception.__init__(self, f"stopped on {received.name} before training finished; checkpoint {checkpoint}: "
                                 "rerun train.py into the same run folder to resume")


def slurm_job_id() -> str | None:
    """The id ``scontrol requeue`` takes: ``<array job>_<task>`` for an array task."""
    if os.environ.get("SLURM_ARRAY_JOB_ID"):
        return f"{os.environ['SLURM_ARRAY_JOB_ID']}_{os.environ['SLURM_ARRAY_TASK_ID']}"
    return os.environ.get("SLURM_JOB_ID")


def requeue_job() -> str | None:
    job = slurm_job_id()
    if job is None:
        return None
    result = subprocess.run(["scontrol", "requeue", job], capture_output=True, text=True)
    if result.returncode != 0:
        log.warning("scontrol requeue %s failed: %s", job, result.stderr.strip())
        return None
    return job


def rng_states() -> dict:
    """Random states as tensors and plain values, so checkpoints still load with ``weights_only=True``."""
    kind, keys, position, has_gauss, gauss = np.random.get_state()
    states = {
        "torch": torch.get_rng_state(),
        "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "position": int(position),
                  "has_gauss": int(has_gauss), "gauss": float(gauss)},
        "python": random.getstate(),
    }
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict) -> None:
    torch.set_rng_state(states["torch"])
    numpy_state = states["numpy"]
    np.random.set_state((numpy_state["kind"], numpy_state["keys"].numpy().astype(np.uint32), numpy_state["position"],
                         numpy_state["has_gauss"], numpy_state["gauss"]))
    random.setstate(states["python"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def gathered_from_ranks(value) -> list:
    """``value`` from every rank, in rank order (``[value]`` outside distributed training)."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return [value]
    values = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(values, value)
    return values


def outlive_signals_outside_training(signal_names: Sequence[str] = ("SIGUSR1", "SIGUSR2")) -> None:
    """The requeue signal's default action kills the process. Outside training (loading, scoring)
    there is nothing to checkpoint, so let the job use the rest of its time instead; a handler
    someone else installed (submitit's) is kept."""

    def note(signum, frame) -> None:
        log.warning("received %s outside training: nothing to checkpoint; carrying on until the time limit",
                    signal.Signals(signum).name)

    for name in signal_names:
        if signal.getsignal(signal.Signals[name]) is signal.SIG_DFL:
            signal.signal(signal.Signals[name], note)


class PreemptionCheckpoint(L.Callback):
    """``signal_names``: SIGUSR1 is what slurm/*.sbatch ask SLURM for; SIGUSR2 is submitit's (the
    Hydra SLURM launcher), whose own handler then requeues the sweep's job once the checkpoint is saved."""

    def __init__(self, checkpoint_path: str, signal_names: Sequence[str] = ("SIGUSR1", "SIGUSR2"),
                 requeue: bool = True, stop_signal_names: Sequence[str] = ("SIGTERM", "SIGINT")) -> None:
        self.checkpoint_path = Path(checkpoint_path)
        self.stop_signals = [signal.Signals[name] for name in stop_signal_names]
        self.signals = [signal.Signals[name] for name in signal_names] + self.stop_signals
        self.requeue = requeue
        self.received: signal.Signals | None = None
        self.epoch, self.batches_done = 0, 0  # where training is: batches done in this epoch
        self._previous_handlers: dict = {}
        self._restored: dict | None = None

    # -- the signal: only noted here; acted on at the next batch boundary ---------------------------
    def setup(self, trainer, pl_module, stage: str) -> None:
        if stage == "fit":
            self._previous_handlers = {s: signal.signal(s, self._note_signal) for s in self.signals}
            # Lightning warns that a mid-epoch checkpoint cannot resume exactly unless the data loader
            # is stateful; here the batch sampler is put back to its position instead.
            warnings.filterwarnings("ignore", message="You're resuming from a checkpoint that ended before the epoch")

    def teardown(self, trainer, pl_module, stage: str) -> None:
        if stage == "fit":
            for signum, handler in self._previous_handlers.items():
                signal.signal(signum, handler)
            self._previous_handlers = {}

    def _note_signal(self, signum, frame) -> None:
        log.info("received %s: checkpointing after the current batch", signal.Signals(signum).name)
        self.received = signal.Signals(signum)
        if self.received in self.stop_signals:  # a second one stops at once, without the checkpoint
            signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        self.epoch, self.batches_done = trainer.current_epoch, batch_idx + 1
        # Every rank must stop at the same batch: stop when any rank got the signal.
        if not trainer.strategy.reduce_boolean_decision(self.received is not None, all=False):
            return
        trainer.save_checkpoint(self.checkpoint_path)
        if self.received in self.stop_signals:
            raise Terminated(self.checkpoint_path, self.received)
        previous = self._previous_handlers.get(self.received)
        if callable(previous):  # e.g. submitit's: it requeues its job and exits
            previous(self.received, None)
        job = requeue_job() if self.requeue and trainer.is_global_zero else None
        raise Preempted(self.checkpoint_path, job)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.batches_done = 0

    # -- what a checkpoint carries, and putting it back ----------------------------------------------
    def state_dict(self) -> dict:
        # Every rank draws its own dropout masks: the checkpoint (written by rank 0) keeps each rank's state.
        return {"epoch": self.epoch, "batches_done": self.batches_done, "rng": rng_states(),
                "rank_rng": gathered_from_ranks(rng_states())}

    def load_state_dict(self, state: dict) -> None:
        self._restored = state

    def on_train_start(self, trainer, pl_module) -> None:
        # Lightning registers its SIGTERM handler after the setup hook, wrapping this one: on a SIGTERM during
        # validation, or between this callback's batch end and its own check, it ends the run with a bare
        # SystemExit (exit 0, no checkpoint). This callback's handler alone decides, at the next batch end.
        for signum in self.stop_signals:
            signal.signal(signum, self._note_signal)
        if self._restored is None:
            return
        state, self._restored = self._restored, None
        rank = trainer.global_rank
        ranks = state.get("rank_rng") or [state["rng"]]
        if len(ranks) != trainer.world_size:
            log.warning("the checkpoint was written by %d ranks and this run has %d: dropout masks will differ from "
                        "an uninterrupted run", len(ranks), trainer.world_size)
        set_rng_states(ranks[rank % len(ranks)])  # dropout continues where the stopped run left off
        sampler = getattr(trainer.train_dataloader, "batch_sampler", None)
        if state["batches_done"] and state["epoch"] == trainer.current_epoch and isinstance(sampler, ResumableBatches):
            sampler.skip = state["batches_done"]
            self.batches_done = state["batches_done"]
            log.info("resuming epoch %d after batch %d", trainer.current_epoch, state["batches_done"])
