"""Studies: a grid of runs (fine-tuned, LoRA, in-context) and the report over them, in one command
(``study.py``). ``plan``: the study file and its runs; ``state``: where each run stands; ``launch``:
running them here or on SLURM."""

from legalft.study.launch import dry_run, run_locally, run_report, run_task, submit
from legalft.study.plan import PlannedRun, Study, load_study, load_study_as_run
from legalft.study.state import RunState, print_status, state_of

__all__ = ["dry_run", "PlannedRun", "RunState", "Study", "load_study", "load_study_as_run", "print_status", "run_locally", "run_report", "run_task",
           "state_of", "submit"]
