"""``python -m legalft.export_adapter RUN OUT [--adapter NAME]``: the command of earlier releases, now
``python -m legalft.export run=RUN out=OUT [adapter=NAME]`` (``legalft-export``), which it runs after saying so."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

__all__ = ["export", "export_merged", "main"]


def export_merged(run_dir: str, out: str, adapter: str | None = None, command: str | None = None) -> Path:
    """The Python function of earlier releases: ``legalft.export.export``."""
    from legalft import export as exporting

    return exporting.export(run_dir, out, adapter, command)


export = export_merged


def main() -> None:
    from legalft.foundation.console import plain_console, run_or_exit

    plain_console()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="a run folder written by train.py")
    parser.add_argument("out", help="a new folder for the exported model")
    parser.add_argument("--adapter", help="which adapter, when the run holds several (per_task regime)")
    args = parser.parse_args()
    now = shlex.join(["python", "-m", "legalft.export", f"run={args.run}", f"out={args.out}",
                      *([f"adapter={args.adapter}"] if args.adapter else [])])
    print(f"note: legalft.export_adapter is legalft.export now (legalft-export): running {now}", file=sys.stderr)
    path = run_or_exit(lambda: export_merged(args.run, args.out, args.adapter, now))
    print(f"exported: {path}")


if __name__ == "__main__":
    main()
