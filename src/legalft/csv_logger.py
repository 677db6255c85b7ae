"""Lightning's CSV logger, resumable: a run resumed after a kill keeps the rows it logged before.

Lightning's writer deletes an existing ``metrics.csv`` when it starts, so a run resumed from its
checkpoint lost the curves of every epoch before the kill. This one keeps them: at its first save it
reads the file back, keeps the rows of steps before the first step it now logs (rows the killed run
wrote after its last checkpoint are logged again by the resumed run, so they are replaced), and
writes the file anew with them.
"""

from __future__ import annotations

import csv
import os

from lightning.fabric.loggers.logger import rank_zero_experiment
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter


class KeepingExperimentWriter(ExperimentWriter):
    def __init__(self, log_dir: str) -> None:
        self.merged = False
        super().__init__(log_dir)

    def _check_log_dir_exists(self) -> None:
        pass  # Lightning's deletes metrics.csv here

    def save(self) -> None:
        if self.metrics and not self.merged:
            self.merged = True
            if os.path.isfile(self.metrics_file_path):
                first_step = min(row["step"] for row in self.metrics)
                with open(self.metrics_file_path, newline="") as file:
                    earlier = [row for row in csv.DictReader(file) if int(row["step"]) < first_step]
                os.remove(self.metrics_file_path)  # written anew below, earlier rows first
                self.metrics = [{k: v for k, v in row.items() if v != ""} for row in earlier] + self.metrics
        super().save()


class ResumableCSVLogger(CSVLogger):
    @property
    @rank_zero_experiment
    def experiment(self) -> ExperimentWriter:
        if self._experiment is None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = KeepingExperimentWriter(log_dir=self.log_dir)
        return self._experiment
