"""Reading table files row by row, so that every problem is reported with its file and row: CSV and
TSV with Python's ``csv`` module (RFC 4180 quoting, as LegalBench's TSVs are written and read), JSON
Lines with ``json``, one object per line. Rows are numbered as a spreadsheet shows them below the
header (row 1 is the first data row), with the file's line where the row starts."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

from legalft.foundation.errors import UserError
from legalft.foundation.io import read_utf8

# A field may be as long as a document: long documents are cut by the methods (``method.max_chars``,
# the model's windows), not refused by the reader (the csv module's default limit is 128 KiB).
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


def read_delimited(path: Path, delimiter: str) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of a CSV or TSV file; a file without a header, a header that repeats or
    leaves a column unnamed, and a row with more or fewer fields than the header are named."""
    text = read_utf8(path)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader, None)
        if header is None or not any(cell.strip() for cell in header):
            raise UserError(f"{path}: empty file: the first line must name the columns (e.g. text,label). "
                            "Fix the file.")
        header = [cell.strip() for cell in header]
        unnamed = [i + 1 for i, cell in enumerate(header) if not cell]
        if unnamed:
            raise UserError(f"{path}: header column {unnamed[0]} has no name. Name every column.")
        repeated = sorted({c for c in header if header.count(c) > 1})
        if repeated:
            raise UserError(f"{path}: the header names {repeated} more than once. Give every column its own name.")
        rows, start = [], reader.line_num + 1
        for cells in reader:
            number = len(rows) + 1
            if not cells:  # a blank line
                start = reader.line_num + 1
                continue
            if len(cells) != len(header):
                raise UserError(f"{path}: row {number} (line {start}) has {len(cells)} fields where the header has "
                                f"{len(header)} (ragged row). Fix the file.")
            rows.append(dict(zip(header, cells)))
            start = reader.line_num + 1
    except csv.Error as err:
        raise UserError(f"{path}: line {reader.line_num}: {err}. Fix the file.") from None
    return header, rows


def read_json_lines(path: Path) -> list[dict]:
    return [row for _, row in numbered_json_lines(path)]


def numbered_json_lines(path: Path) -> list[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSON Lines file."""
    rows = []
    # split on newlines alone: str.splitlines also splits on U+2028 and other characters a JSON string may hold
    for number, line in enumerate(read_utf8(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as err:
            message = getattr(err, "msg", str(err))
            column = f" at column {err.colno}" if hasattr(err, "colno") else ""
            raise UserError(f"{path}: line {number} is not JSON ({message}{column}). Fix the line.") from None
        except RecursionError:
            raise UserError(f"{path}: line {number} nests lists or objects too deeply to read. Fix the line.") from None
        if not isinstance(row, dict):
            raise UserError(f"{path}: line {number} is a {type(row).__name__}, not an object of columns. Fix the line.")
        rows.append((number, row))
    return rows
