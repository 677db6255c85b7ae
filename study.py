"""Run a study (a grid of runs and the report over them) here or on SLURM, and see where it stands:

    python study.py run <study> [--slurm] [--folder DIR] [override ...]   (overrides apply to every run)
    python study.py status <study> [--folder DIR]

<study> is a file of studies/ by name (proslex_data_efficiency) or a path to a YAML file."""

import sys

from legalft.apps.study import main

if __name__ == "__main__":
    sys.exit(main())
