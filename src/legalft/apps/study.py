"""Run a study (a grid of runs and the report over them) here or on SLURM, and see where it stands:

    python study.py run <study> [--jobs N | --slurm | --dry-run] [--groups G,...] [--folder DIR] [override ...]
    python study.py status <study> [--groups G,...] [--folder DIR]

An override applies to every run (key=value), or to one group's runs (group:key=value).

<study> is a file of studies/ by name (proslex_data_efficiency) or a path to a YAML file."""

import argparse

from legalft.foundation.console import run_or_exit


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], usage=__doc__.split("\n\n")[1])
    parser.add_argument("action", choices=["run", "status"])
    parser.add_argument("study")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for every run (e.g. trainer.max_epochs=1)")
    parser.add_argument("--slurm", action="store_true", help="one job array per group and a report job after them")
    parser.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                        help="an sbatch option for every job (repeatable), e.g. --sbatch=--partition=gpu")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="runs at a time here, each its own process (default 1); mind the cores and GPUs they share")
    parser.add_argument("--folder", help="the study folder (default: checkpoints/studies/<name>)")
    parser.add_argument("--groups", type=lambda text: [g for g in text.split(",") if g], metavar="G,...",
                        help="only these groups' runs (e.g. the CPU groups here, the GPU groups on a cluster)")
    parser.add_argument("--dry-run", action="store_true", help="list each run's command and check its config; run nothing")
    args = parser.parse_intermixed_args()  # options before, between or after the overrides

    import logging

    from legalft import study
    from legalft.foundation.console import console_says_each_error_once

    logging.basicConfig(level=logging.INFO, format="%(message)s")  # a study's own lines; its runs log to their folders
    console_says_each_error_once()

    def act() -> int:
        if args.action == "status":
            study.print_status(study.load_study_as_run(args.study, args.overrides, args.folder, args.groups))
            return 0
        plan = study.load_study(args.study, args.overrides, args.folder, args.groups)
        if args.dry_run:
            return study.dry_run(plan)
        return study.submit(plan, args.sbatch) if args.slurm else study.run_locally(plan, args.jobs)

    return run_or_exit(act)

