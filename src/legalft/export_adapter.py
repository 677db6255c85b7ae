"""``python -m legalft.export_adapter RUN OUT [--adapter NAME]``: the command of earlier releases, now
``python -m legalft.export run=RUN out=OUT [adapter=NAME]`` (``legalft-export``), which it runs after saying so."""

from __future__ import annotations

import argparse
import shlex
import sys

from legalft.merged_export import export, export_merged

__all__ = ["export", "export_merged", "main"]  # the merge functions' old home


def main() -> None:
    from legalft import export as exporting
    from legalft.cli import plain_console, run_or_exit

    plain_console()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="a run folder written by train.py")
    parser.add_argument("out", help="a new folder for the exported model")
    parser.add_argument("--adapter", help="which adapter, when the run holds several (per_task regime)")
    args = parser.parse_args()
    now = shlex.join(["python", "-m", "legalft.export", f"run={args.run}", f"out={args.out}",
                      *([f"adapter={args.adapter}"] if args.adapter else [])])
    print(f"note: legalft.export_adapter is legalft.export now (legalft-export): running {now}", file=sys.stderr)
    path = run_or_exit(lambda: exporting.export(args.run, args.out, args.adapter, now))
    print(f"exported: {path}")


if __name__ == "__main__":
    main()
