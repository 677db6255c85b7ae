"""The report's figures at 2, 28 and 162 LegalBench tasks and at 1 and 3 seeds, from runs written by
a seeded fake predictor (bench/report_significance.py), for looking at them; ``--docs`` copies the
162-task, 3-seed figures into docs/figures/.

    .venv/bin/python bench/report_figures.py --out /tmp/figures [--docs]
"""

from __future__ import annotations

import argparse
import logging
import shutil
from pathlib import Path

from common import write_runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--docs", action="store_true")
    args = parser.parse_args()
    logging.disable(logging.INFO)
    from legalft.reporting.compare import compare

    for tasks in (2, 28, 162):
        for seeds in (1, 3):
            name = f"{tasks}_tasks_{seeds}_seeds"
            folders = write_runs(args.out / "runs" / name, 30, 300, tasks=tasks, seeds=seeds)
            resamples = max(1000, -(-2 * tasks * 20 // 1000) * 1000)  # enough for Holm over the tasks to reach 0.05
            report = compare([str(f) for f in folders], str(args.out / name), resamples=resamples)
            print(f"{name}: {', '.join(sorted(p.name for p in report.glob('*.png')))}")
    if args.docs:
        docs = Path(__file__).resolve().parents[1] / "docs" / "figures"
        docs.mkdir(exist_ok=True)
        for figure in (args.out / "162_tasks_3_seeds").glob("*.png"):
            shutil.copy(figure, docs / f"example_162_tasks_{figure.name}")
        print(f"copied the 162-task figures to {docs}")


if __name__ == "__main__":
    main()
