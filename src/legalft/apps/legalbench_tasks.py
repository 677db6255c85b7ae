"""python -m legalft.apps.legalbench_tasks task-at 17: the name of the LegalBench catalog's 17th task, what
one job of a SLURM array over every task runs (slurm/legalbench_array.sbatch)."""

from __future__ import annotations

import argparse

from legalft.foundation.console import run_or_exit
from legalft.data.legalbench import task_at


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m legalft.apps.legalbench_tasks")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("task-at", help="the name of the catalog's i-th task").add_argument("index", type=int)
    args = parser.parse_args()
    print(run_or_exit(lambda: task_at(args.index)))


if __name__ == "__main__":
    main()
