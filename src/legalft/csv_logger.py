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
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter

from legalft.io import atomic_write


class KeepingExperimentWriter(ExperimentWriter):
    def __init__(self, log_dir: str) -> None:
        self.merged = False
        super().__init__(log_dir)

    def _check_log_dir_exists(self) -> None:
        pass  # Lightning's deletes metrics.csv here

    def save(self) -> None:
        if self.metrics and not self.merged and os.path.isfile(self.metrics_file_path):
            self.merged = True
            first_step = min(row["step"] for row in self.metrics)
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
    @property
    @rank_zero_experiment
    def experiment(self) -> ExperimentWriter:
        if self._experiment is None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = KeepingExperimentWriter(log_dir=self.log_dir)
        return self._experiment
