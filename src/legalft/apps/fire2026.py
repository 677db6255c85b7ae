"""FIRE 2026 Task 1 files: ``legalft-fire2026 convert`` writes PROSLEX data in the task's format (a development
copy to run the whole path on), ``legalft-fire2026 validate`` checks a submission file. Submissions themselves
are written by ``report.py report=fire2026 runs=<run> out=<file>``."""

from __future__ import annotations

import argparse
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    from legalft.foundation.console import plain_console, run_or_exit

    plain_console()
    parser = argparse.ArgumentParser(prog="legalft-fire2026", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    convert = commands.add_parser("convert", help="PROSLEX collection files as FIRE 2026 JSON Lines")
    convert.add_argument("proslex_split", type=Path, help="a PROSLEX collection file or a folder of them")
    convert.add_argument("out", type=Path, help="the JSON Lines file to write (must not exist)")
    convert.add_argument("--test-out", type=Path, help="also hold out a stratified share of the cases in this file")
    convert.add_argument("--test-fraction", type=float, default=0.2)
    convert.add_argument("--seed", type=int, default=0)
    convert.add_argument("--facts-only", action="store_true",
                         help="doc_id, doc_url and fact alone, as the organisers' test lines (the --test-out file "
                              "when there is one, else out)")
    validate = commands.add_parser("validate", help="check a submission file")
    validate.add_argument("submission", type=Path)
    validate.add_argument("--test", help="the organisers' test file: the submission must hold exactly its doc_ids")
    args = parser.parse_args(argv)

    def run() -> None:
        if args.command == "convert":
            from legalft.data.fire2026 import write_fire_lines
            from legalft.data.proslex import read_collections

            for path, n in write_fire_lines(read_collections(args.proslex_split), args.out, args.facts_only,
                                            args.test_out, args.test_fraction, args.seed).items():
                print(f"{n} cases: {path}")
        else:
            from legalft.reporting.fire2026 import validate_file

            print(f"{args.submission}: a valid submission of {validate_file(args.submission, args.test)} cases")

    run_or_exit(run)


if __name__ == "__main__":  # python -m legalft.apps.fire2026
    main()
