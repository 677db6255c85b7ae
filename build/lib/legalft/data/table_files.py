"""Reading table files row by row, so that every problem is reported with its file and row: CSV and
TSV with Python's ``csv`` module (RFC 4180 quoting, as LegalBench's TSVs are written and read), JSON
Lines with ``json``, one object per line."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from legalft.errors import UserError
from legalft.io import read_utf8


def read_delimited(path: Path, delimiter: str) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of a CSV or TSV file; a row with more or fewer fields than the header is named."""
    with io.StringIO(read_utf8(path), newline="") as f:
        reader = csv.DictReader(f, delimiter=delimiter)
        rows = []
        try:
            for row in reader:
                if None in row or None in row.values():
                    raise UserError(
                        f"{path}: row {reader.line_num} has {len(reader.fieldnames) + len(row.get(None, []))} fields "
                        f"where the header has {len(reader.fieldnames)} (ragged row). Fix the file.")
                rows.append(row)
        except csv.Error as err:
            raise UserError(f"{path}: line {reader.line_num}: {err}. Fix the file.") from None
    return list(reader.fieldnames or []), rows


def read_json_lines(path: Path) -> list[dict]:
    rows = []
    for number, line in enumerate(read_utf8(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as err:
            raise UserError(f"{path}: line {number} is not JSON ({err.msg} at column {err.colno}). Fix the line.") from None
        if not isinstance(row, dict):
            raise UserError(f"{path}: line {number} is a {type(row).__name__}, not an object of columns. Fix the line.")
        rows.append(row)
    return rows
