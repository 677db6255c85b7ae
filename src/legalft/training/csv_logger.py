"""Lightning's CSV logger, resumable: a run resumed after a kill keeps the rows it logged before.

Lightning's writer deletes an existing ``metrics.csv`` when it starts, so a run resumed from its
checkpoint lost the curves of every epoch before the kill. This one keeps them: at its first save it
keeps the file's rows of steps before the first step it now logs (rows the killed run wrote after its
last checkpoint are logged again by the resumed run, so they are replaced) and appends to them.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from lightning.fabric.loggers.logger import rank_zero_experiment
from lightning.fabric.utilities.logger import _add_prefix
from lightning.fabric.utilities.rank_zero import rank_zero_only
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter

from legalft.foundation.io import atomic_write


class KeepingExperimentWriter(ExperimentWriter):
    def __init__(self, log_dir: str) -> None:
        self.merged = False
        self.unstepped: set[int] = set()  # ids of the rows logged without a step: results, after training
        super().__init__(log_dir)

    def _check_log_dir_exists(self) -> None:
        pass  # Lightning's deletes metrics.csv here

    def log_metrics(self, metrics_dict: dict, step: int | None = None) -> None:
        """A row without a step (a run's results, ``legalft.evaluation.results_logging``) goes at the last
        step logged, after the curves, and replaces none of them: a finished run scored again keeps its curves."""
        if step is None:
            super().log_metrics(metrics_dict, self.last_step())
            self.unstepped.add(id(self.metrics[-1]))
        else:
            super().log_metrics(metrics_dict, step)

    def last_step(self) -> int:
        if self.metrics:
            return max(row["step"] for row in self.metrics)
        if not os.path.isfile(self.metrics_file_path):
            return 0
        with open(self.metrics_file_path, newline="") as file:
            return max((int(row["step"]) for row in csv.DictReader(file)), default=0)

    def save(self) -> None:
        if self.metrics and not self.merged and os.path.isfile(self.metrics_file_path):
            self.merged = True
            stepped = [row["step"] for row in self.metrics if id(row) not in self.unstepped]
            first_step = min(stepped, default=float("inf"))
            with open(self.metrics_file_path, newline="") as file:
                reader = csv.DictReader(file)
                header, earlier = list(reader.fieldnames or []), [row for row in reader if int(row["step"]) < first_step]

            def keep_earlier(tmp: Path) -> None:
                with tmp.open("w", newline="") as out:
                    writer = csv.DictWriter(out, fieldnames=header)
                    writer.writeheader()
                    writer.writerows(earlier)

            atomic_write(self.metrics_file_path, keep_earlier)
            self.metrics_keys = header  # Lightning appends to the file under this header (adding new keys)
        if self.metrics:
            self.merged = True  # only the first save with rows meets the earlier run's file
        super().save()


class ResumableCSVLogger(CSVLogger):
    @rank_zero_only
    def log_metrics(self, metrics: dict, step: int | None = None) -> None:
        if step is None:  # results: the writer places them after the curves (Lightning numbers them from 0)
            self.experiment.log_metrics(_add_prefix(metrics, self._prefix, self.LOGGER_JOIN_CHAR))
        else:
            super().log_metrics(metrics, step)

    @property
    @rank_zero_experiment
    def experiment(self) -> ExperimentWriter:
        if self._experiment is None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = KeepingExperimentWriter(log_dir=self.log_dir)
        return self._experiment
