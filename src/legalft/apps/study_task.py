"""What a study's SLURM jobs run (slurm/study_array.sbatch, slurm/study_report.sbatch):

    python -m legalft.apps.study_task run <study.json> <group> <array task id>
    python -m legalft.apps.study_task report <study.json>
"""

import sys
from pathlib import Path

from legalft.foundation.console import run_or_exit
from legalft.study import run_report, run_task

if __name__ == "__main__":
    action, record, *rest = sys.argv[1:]
    if action == "run":
        sys.exit(run_or_exit(lambda: run_task(Path(record), rest[0], int(rest[1]))))
    sys.exit(run_or_exit(lambda: run_report(Path(record))))
