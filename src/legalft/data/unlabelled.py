"""Documents nobody has labelled, as ``predict.py`` reads them (``input=...``): a CSV, TSV or JSON Lines file with
a text column, a folder of ``.txt`` files (one document each, its file name the id), PROSLEX collection files or
FIRE 2026 JSON Lines without (or with) labels, or ``-`` for standard input, one document a line (its line number the
id). Labels in the input are not read: every example comes back with ``labels=()``.

One rule for empty documents, whatever the input: a document whose text is empty or only spaces (an empty cell, a
null, an empty file, a blank line) is never predicted; it is skipped, named in the log, and its id listed in what
the command writes beside its output."""

from __future__ import annotations

import logging
import sys
from collections import Counter
from pathlib import Path

from legalft.data.example import Example
from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)

TEXT_COLUMNS = ("text", "fact", "facts", "document", "content", "body", "input", "sentence")
ID_COLUMNS = ("id", "doc_id", "document_id", "case_id", "uid", "name")
STDIN = "-"


def read_documents(path: str, text_column: str | None = None, id_column: str | None = None,
                   stdin=None) -> tuple[list[Example], list[str]]:
    """(the documents of ``path`` in input order, the ids of the empty ones skipped); ids from ``id_column`` (else a
    common id column, else the row number from 1)."""
    if path == STDIN:
        from legalft.foundation.io import decode_utf8

        examples = from_lines(decode_utf8((stdin or sys.stdin.buffer).read(), "standard input"))
    else:
        source = Path(path)
        if source.is_dir():
            examples = from_text_files(source)
        elif not source.is_file():
            raise UserError(f"input={path}: no such file or folder. Give a CSV, TSV or JSON Lines file, a folder of "
                            ".txt files, or - for standard input.")
        elif source.suffix.lower() == ".json":
            examples = from_collection(source)
        else:
            examples = from_table(source, text_column, id_column)
    skipped = [e.id for e in examples if not e.text.strip()]
    examples = [e for e in examples if e.text.strip()]
    if skipped:
        log.warning("input=%s: %d empty document(s) skipped, not predicted: %s", path, len(skipped),
                    ", ".join(skipped[:10]) + (" ..." if len(skipped) > 10 else ""))
    if not examples:
        raise UserError(f"input={path}: no documents in it. Give at least one non-empty document.")
    counts = Counter(e.id for e in examples)
    repeated = sorted(doc_id for doc_id, n in counts.items() if n > 1)[:5]
    if repeated:
        raise UserError(f"input={path}: the ids {', '.join(map(repr, repeated))} name more than one document. Give "
                        "every document its own id (input.id_column=...), or leave the id column out to number them.")
    return examples, skipped


def unlabelled(doc_id: str, text: str, columns: dict[str, str] | None = None) -> Example:
    """An unlabelled document; its ``fields`` (what prompts fill their placeholders from) hold its text as ``text``."""
    return Example(id=doc_id, text=text, labels=(), fields={**(columns or {}), "text": text})


def from_lines(text: str) -> list[Example]:
    """A document a line, its line number the id (the newline that ends the last line starts no document)."""
    lines = text.split("\n")
    if lines and not lines[-1].strip():
        lines = lines[:-1]
    return [unlabelled(str(number), line.strip()) for number, line in enumerate(lines, start=1)]


def from_text_files(folder: Path) -> list[Example]:
    from legalft.foundation.io import read_utf8

    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() == ".txt")
    if not files:
        raise UserError(f"input={folder}: a folder without .txt files. Put one document per .txt file in it.")
    return [unlabelled(p.stem, read_utf8(p).strip()) for p in files]


def from_collection(path: Path) -> list[Example]:
    """A PROSLEX collection file: a JSON object keyed by document id, each with its ``fact``."""
    from legalft.data.proslex import read_collection

    examples = []
    for doc_id, document in read_collection(path).items():
        fact = document.get("fact") if isinstance(document, dict) else None
        fact = "" if isinstance(document, dict) and fact is None else fact
        if not isinstance(fact, str):
            raise UserError(f"{path}: document {doc_id!r} has no text under 'fact'. A .json input is a PROSLEX "
                            "collection file; give other documents as CSV, TSV or JSON Lines.")
        examples.append(unlabelled(str(doc_id), fact.strip()))
    return examples


def from_table(path: Path, text_column: str | None, id_column: str | None) -> list[Example]:
    from legalft.data.custom import DELIMITERS
    from legalft.data.table_files import read_delimited, read_json_lines

    suffix = path.suffix.lower()
    if suffix in DELIMITERS:
        header, rows = read_delimited(path, DELIMITERS[suffix])
    elif suffix == ".jsonl":
        rows = read_json_lines(path)
        header = list(dict.fromkeys(key for row in rows for key in row))
    else:
        raise UserError(f"input={path}: a {suffix or 'file without an extension'} is not read. Give a .csv, .tsv, "
                        ".jsonl (FIRE 2026's files too) or .json (PROSLEX) file, a folder of .txt files, or -.")
    text_key = column(header, text_column, TEXT_COLUMNS, "input.text_column", path, required=True)
    id_key = column(header, id_column, ID_COLUMNS, "input.id_column", path, required=False)
    examples = []
    for number, row in enumerate(rows, start=1):
        text = row.get(text_key)
        if text is None:
            text = ""  # an empty cell: skipped with the others
        if not isinstance(text, str):
            raise UserError(f"{path}: row {number}'s {text_key!r} is a {type(text).__name__}, not text. Fix the row.")
        doc_id = row.get(id_key) if id_key else None
        # every column a prompt may name (a LegalBench task's question beside its text); labels are never read
        columns = {key: value for key, value in row.items() if isinstance(value, str)}
        examples.append(unlabelled(str(doc_id) if doc_id not in (None, "") else str(number), text.strip(), columns))
    return examples


def column(header: list[str], chosen: str | None, common: tuple[str, ...], key: str, path: Path,
           required: bool) -> str | None:
    """The column ``chosen`` names, else the first of ``common`` the file has (any case)."""
    if chosen:
        if chosen not in header:
            raise UserError(f"{key}={chosen}: {path} has no such column; its columns are {', '.join(header)}.")
        return chosen
    by_case = {name.lower(): name for name in header}
    found = next((by_case[name] for name in common if name in by_case), None)
    if found is None and required:
        raise UserError(f"{path}: no text column found (looked for {', '.join(common)}); its columns are "
                        f"{', '.join(header)}. Name one with {key}=...")
    return found
