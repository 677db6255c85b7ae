"""Where a report goes: ``out`` is claimed for the command's life (a lock beside it, so a second
report into the same ``out`` refuses at once), the report is built in a staging folder beside ``out``
and renamed into place, so that ``out`` holds a whole report or nothing new; an existing ``out`` is
replaced only when it is an earlier report of this project that holds nothing else, and only with
``report.overwrite=true``; that is checked before the report is built and again once the earlier one is
moved aside, where nothing can be added to it unseen."""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from legalft.foundation.errors import UserError
from legalft.foundation.io import folder_beside
from legalft.runs.lock import RunLock

MARKER = ".legalft-report.json"  # what a report wrote: the files it may replace, and nothing else


def contains(folder: Path, path: Path) -> bool:
    return path == folder or folder in path.parents


def check_out(out: Path, runs_pattern: str | list[str], matched: list[Path], overwrite: bool) -> None:
    """Refuse, before any work, an ``out`` that would mix with or replace anything not a report."""
    target = out.resolve()
    for folder in matched:
        folder = folder.resolve()
        if contains(folder, target) or contains(target, folder):
            raise UserError(f"out={out} overlaps {folder}, which runs={runs_pattern!r} reads: write the report "
                            "elsewhere, e.g. out=reports/<name>.")
    if not out.exists():
        return
    if not out.is_dir():
        raise UserError(f"out={out} is a file: choose a new folder for the report.")
    if not only_a_report(out, shown_as=out):
        return  # an empty folder: nothing to lose
    if not overwrite:
        raise UserError(f"out={out} holds an earlier report: set report.overwrite=true to replace it, or choose "
                        "a new folder.")


def only_a_report(folder: Path, shown_as: Path) -> bool:
    """Whether ``folder`` holds a report (False: nothing at all); refused if it holds anything the report
    did not write, an empty folder included. ``shown_as``: the ``out=`` the messages name."""
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*")}
    if not present:
        return False
    if MARKER not in present:
        raise UserError(f"out={shown_as} exists and is not a report written by report=compare: choose a new folder "
                        "(nothing was written).")
    try:
        written = set(json.loads((folder / MARKER).read_text())["files"])
    except (ValueError, KeyError, TypeError):
        raise UserError(f"out={shown_as}: its {MARKER} is damaged, so it cannot be told apart from your own files; "
                        "choose a new folder.") from None
    their_folders = {parent.as_posix() for name in written for parent in Path(name).parents if parent != Path(".")}
    foreign = sorted(present - written - their_folders - {MARKER})
    if foreign:
        raise UserError(f"out={shown_as} holds an earlier report and files it did not write "
                        f"({', '.join(foreign[:5])}): choose a new folder, or move those files out first.")
    return True


class OutLock(RunLock):
    """``.<out>.lock`` beside ``out``: a lock file, held while a report into ``out`` is built and published."""

    def __init__(self, out: Path) -> None:
        super().__init__(out.parent, f".{out.name}.lock")
        self.out = out

    def busy(self, holder: str) -> str:
        return (f"out={self.out} is being written by another report ({holder}): wait for it to finish, or choose "
                "another out.")


@contextmanager
def claimed(out: Path) -> Iterator[None]:
    """``out`` locked for the report's life; on the way out the lock file goes (when this command made it),
    and on failure the parent folders this command created (when empty)."""
    created = [p for p in out.absolute().parents if not p.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    lock = OutLock(out)
    try:  # made here (O_EXCL), or another command's: only a lock file this command made is removed after
        os.close(os.open(lock.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666))
        made_lock_file = True
    except FileExistsError:
        made_lock_file = False
    failed = True
    try:
        lock.acquire()
        yield
        failed = False
    finally:
        if lock.fd is not None:
            if made_lock_file:
                lock.path.unlink(missing_ok=True)
            lock.release()
        if failed:
            for folder in created:  # innermost first; one that holds anything stays, with its parents
                try:
                    folder.rmdir()
                except OSError:
                    break


def staging_folder(out: Path) -> Path:
    """A new folder beside ``out`` to build the report in (``out``'s parent exists: ``claimed`` made it)."""
    return folder_beside(out)


def publish(staging: Path, out: Path, overwrite: bool) -> None:
    """Mark the staged report with what it wrote, then rename it into place. ``check_out`` vetted ``out``
    before the report was built; what was put there since (another report into the same new ``out``) is
    checked again here, and the rename itself never replaces a folder that holds anything."""
    files = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
    (staging / MARKER).write_text(json.dumps({"files": files}, indent=1) + "\n")
    earlier = None
    holds_something = out.exists() and any(out.iterdir())
    if holds_something and not overwrite:
        only_a_report(out, shown_as=out)  # refuses anything else with its own message
        raise UserError(f"out={out} now holds a report another command wrote while this one was built: it is kept. "
                        "Set report.overwrite=true to replace it, or choose a new folder.")
    if holds_something:
        earlier = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".replaced"))
        os.replace(out, earlier)
        try:  # checked again now that nothing can be written into it: the report took time to build
            only_a_report(earlier, shown_as=out)
        except UserError:
            os.replace(earlier, out)  # back as it was, with what was put into it meanwhile
            raise
    try:
        os.replace(staging, out)  # replaces an empty folder in one step; fails on one that holds anything
    except OSError as err:
        if earlier is not None:
            os.replace(earlier, out)
        if err.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        raise UserError(f"out={out} was written by another command at the same moment: it is kept; choose a new "
                        "folder, or rerun with report.overwrite=true.") from None
    if earlier is not None:
        shutil.rmtree(earlier)  # an earlier report of this project, holding only its own files


def discard(staging: Path) -> None:
    """A report that failed: its staging folder, made by this command."""
    shutil.rmtree(staging, ignore_errors=True)
