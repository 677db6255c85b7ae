"""Hydra's submitit SLURM launcher (hydra/launcher=slurm), with one check first: a sweep sent to SLURM
from a machine without it fails at once with a message, instead of a traceback from inside submitit."""

from __future__ import annotations

import shutil

from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher as SubmititSlurmLauncher

from legalft.foundation.errors import UserError


class SlurmLauncher(SubmititSlurmLauncher):
    def launch(self, job_overrides, initial_job_idx):
        if shutil.which("sbatch") is None:
            raise UserError(
                "hydra/launcher=slurm submits each run with sbatch, which this machine does not have: run the sweep "
                "from a SLURM login node, or leave hydra/launcher unset to run it here."
            )
        return super().launch(job_overrides, initial_job_idx)
