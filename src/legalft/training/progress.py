"""Training progress as log lines, for logs that are not a terminal (a SLURM job's, a pipe): Lightning's
bar writes nothing a log keeps inside an epoch, so a day-long job would show no step, loss or ETA."""

from __future__ import annotations

import logging
import sys
import time

import lightning as L

from legalft.foundation.loop_progress import duration

log = logging.getLogger("legalft.foundation.loop_progress")


class TrainingLines(L.Callback):
    """A line every ``interval_s`` seconds or ``step`` of an epoch's batches: epoch, batch, the last
    training loss, batches per second, the epoch's and the run's time left. On a terminal it says
    nothing (Lightning's bar shows the same) unless ``always``."""

    def __init__(self, interval_s: float = 60.0, step: float = 0.1, always: bool = False, clock=time.monotonic) -> None:
        self.interval_s, self.step, self.always, self.clock = interval_s, step, always, clock
        self.active = False

    def on_train_start(self, trainer, pl_module) -> None:
        self.active = trainer.is_global_zero and (self.always or not sys.stderr.isatty())
        self.run_start = self.clock()
        self.epoch_start = None

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.epoch_start = None  # set at the epoch's first batch

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if self.epoch_start is None:  # a new epoch, or one resumed part-way (no epoch-start hook then)
            self.epoch_start = self.last_time = self.clock()
            self.first_batch = self.last_batch = batch_idx

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if not self.active or self.epoch_start is None:
            return
        total, done, now = trainer.num_training_batches, batch_idx + 1, self.clock()
        due = now - self.last_time >= self.interval_s or done - self.last_batch >= max(self.step * total, 1)
        if not (due or done == total):
            return
        self.last_time, self.last_batch = now, done
        rate = (done - self.first_batch) / max(now - self.epoch_start, 1e-9)
        epoch_left = (total - done) / rate
        epochs_left = (trainer.max_epochs - trainer.current_epoch - 1) if trainer.max_epochs and trainer.max_epochs > 0 else 0
        loss = trainer.callback_metrics.get("train/loss")
        log.info("epoch %d/%s: batch %d/%d (%.0f%%), %s%.2f batches/s, %s elapsed, epoch ETA %s, run ETA %s",
                 trainer.current_epoch + 1, trainer.max_epochs if trainer.max_epochs and trainer.max_epochs > 0 else "?",
                 done, total, 100 * done / max(total, 1), f"loss {float(loss):.4f}, " if loss is not None else "",
                 rate, duration(now - self.run_start), duration(epoch_left),
                 duration(epoch_left + epochs_left * total / rate))
