"""Published numbers shown beside measured ones in a report (``reporting/published_baselines.csv`` and any
``report.baselines``): as reported, never averaged with measured ones."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from legalft.foundation.errors import UserError


@dataclass(frozen=True)
class Reported:
    task: str
    metric: str
    column: str
    value: float
    source: str


def read_baselines(paths: list[str], tasks: set[str]) -> list[Reported]:
    reported = []
    for path in paths:
        if not Path(path).exists():
            raise UserError(f"report.baselines: {path} does not exist (a CSV with benchmark,task,metric,model,setting,value,source).")
        with open(path, newline="") as f:
            for i, row in enumerate(csv.DictReader(f), start=2):
                missing = [k for k in ("task", "metric", "model", "value", "source") if not row.get(k)]
                if missing:
                    raise UserError(f"{path}, line {i}: missing {', '.join(missing)}.")
                if row["task"] in tasks:
                    column = f"reported: {row['model']}" + (f" {row['setting']}" if row.get("setting") else "")
                    reported.append(Reported(row["task"], row["metric"], column, float(row["value"]), row["source"]))
    return reported
