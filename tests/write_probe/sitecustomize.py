"""Loaded by every Python process started with this folder on PYTHONPATH (the distributed tests' ranks):
records each file it opens for writing, or renames into place, under $LEGALFT_PROBE_WATCH, one JSON line
per event in $LEGALFT_PROBE_OUT/<pid>.jsonl, so a test can tell which rank wrote what, and how."""

import json
import os
import sys

_WATCH = os.path.abspath(os.environ.get("LEGALFT_PROBE_WATCH", "/nonexistent"))
_OUT = os.environ.get("LEGALFT_PROBE_OUT")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _record(event: str, path) -> None:
    with open(os.path.join(_OUT, f"{os.getpid()}.jsonl"), "a") as f:
        f.write(json.dumps({"event": event, "path": os.fsdecode(path), "local_rank": os.environ.get("LOCAL_RANK"),
                            "argv": sys.argv[1:]}) + "\n")


def _under_watch(path) -> bool:
    if not isinstance(path, (str, bytes, os.PathLike)):
        return False
    path = os.path.abspath(os.fsdecode(path))
    return path == _WATCH or path.startswith(_WATCH + os.sep)


def _hook(event: str, args) -> None:
    if event == "open" and _under_watch(args[0]):
        path, mode, flags = args
        if (mode and any(c in mode for c in "wax+")) or (flags or 0) & _WRITE_FLAGS:
            _record("open", path)
    elif event == "os.rename" and _under_watch(args[1]):
        _record("rename", args[1])


if os.environ.get("LEGALFT_PROBE_WATCH") and _OUT:
    sys.addaudithook(_hook)
