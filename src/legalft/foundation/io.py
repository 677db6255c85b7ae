"""Atomic file and folder writes: a reader, or a job killed mid-write, sees the old file or the new one,
never part of one. The file or folder gets the permissions a plain write would give it (the umask's, or the replaced file's), not mkstemp's
owner-only 0600, so colleagues on a shared cluster can read results as they read everything else."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Callable


TEMP_SUFFIX = ".tmp"
PARTIAL_SUFFIX = ".partial"
# The command this process runs (train, evaluate, predict, export, ...), in the name of each temporary file and folder
# it makes, with its process id: what a killed command leaves says whose it was (``leftovers_beside``).
_command = "legalft"


def this_command(name: str) -> None:
    global _command
    _command = name


def temp_prefix(path: Path) -> str:
    return f".{path.name}.{_command}-{os.getpid()}."

# Every file and folder this process created through the functions below (and those that name what a
# library is about to create): what a command that fails on bad input may remove, and nothing else.
_created: set[Path] = set()


def note_created(path: str | os.PathLike) -> None:
    """Record ``path`` as this command's own (made now, or about to be made by a library we call)."""
    _created.add(Path(path).absolute())


def created_paths() -> frozenset[Path]:
    return frozenset(_created)


def new_command() -> None:
    """A command starts owning nothing: what an earlier command run in the same process (a sweep's job, a
    test) created is not this one's to remove."""
    _created.clear()


def make_folders(folder: str | os.PathLike) -> Path:
    """``mkdir -p``, noting each folder it made."""
    folder = Path(folder)
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    for path in missing:
        note_created(path)
    return folder


def open_new_file(path: Path) -> int:
    """A file descriptor on ``path``, a file this call creates (``O_EXCL``: never an existing file, and
    never through a symbolic link); FileExistsError when the name is taken."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    note_created(path)
    return fd
# mkstemp puts 8 random characters between prefix and suffix.
_TEMP_NAME = re.compile(rf"^\..+\.[A-Za-z0-9_]{{8}}{re.escape(TEMP_SUFFIX)}$")


def is_atomic_write_temp(path: Path) -> bool:
    """Whether ``path`` is named as ``atomic_write``'s temporary files are: what a process killed
    mid-write leaves beside its target."""
    return _TEMP_NAME.match(path.name) is not None


def atomic_write(path: str | os.PathLike, write: Callable[[Path], None], replace: bool = True) -> None:
    """Call ``write(tmp)`` on a temporary file next to ``path``, then rename it into place. ``replace=False``: put it
    in place only if nothing is at ``path`` by then (a hard link, which fails where a file appeared after the caller
    checked), else ``FileExistsError`` and nothing of this write is left."""
    path = Path(path)
    make_folders(path.parent)
    new = not os.path.lexists(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=temp_prefix(path), suffix=TEMP_SUFFIX)
    os.close(fd)
    try:
        if path.is_file() and not path.is_symlink():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            readable_as_umask_allows(tmp)
        write(Path(tmp))
        if replace:
            os.replace(tmp, path)  # a symbolic link at ``path`` is replaced, never followed
        else:
            os.link(tmp, path, follow_symlinks=False)  # FileExistsError where anything appeared meanwhile
            Path(tmp).unlink()
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        said = out_of_space(err, path)
        if said is not err:
            raise said from None
        raise
    if new:
        note_created(path)


def mount_of(path: Path) -> Path:
    path = Path(path).absolute()
    while not os.path.ismount(path):
        path = path.parent
    return path


def out_of_space(err: BaseException, path: Path) -> BaseException:
    """``err`` as one message where the disk under ``path`` filled up (the OS's ENOSPC, or a library's own error for
    it, such as torch's failed stream write on a disk with nothing left), else ``err`` itself."""
    import errno

    from legalft.foundation.errors import UserError

    folder = Path(path).parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return err
    full = (isinstance(err, OSError) and err.errno == errno.ENOSPC) or "No space left" in str(err) or (
        isinstance(err, RuntimeError) and free < 2**20)
    if not full:
        return err
    return UserError(f"no space left writing {path} ({free / 2**20:.0f} MB free on {mount_of(folder)}): free some "
                     "space or write elsewhere, and run the command again. Nothing was half-written.")


def read_utf8(path: Path) -> str:
    """A data file's text; bytes that are not UTF-8 get a message naming the file and the byte offset. A
    leading byte-order mark (what spreadsheet programs write before "UTF-8" CSV) is not part of the text."""
    return decode_utf8(Path(path).read_bytes(), str(path))


def decode_utf8(data: bytes, where: str) -> str:
    """``data`` as text; bytes that are not UTF-8 are named by ``where``, byte offset and line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        from legalft.foundation.errors import UserError

        line = data.count(b"\n", 0, err.start) + 1
        raise UserError(f"{where}: not UTF-8 text: byte 0x{data[err.start]:02x} at offset {err.start} (line {line}): "
                        f"{err.reason}. Re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8).") from None


def current_umask() -> int:
    mask = os.umask(0)  # the only portable way to read it is to set it
    os.umask(mask)
    return mask


def readable_as_umask_allows(path: str | os.PathLike, folder: bool = False) -> None:
    """The mode ``open(path, "w")`` (or ``mkdir``) would have given it."""
    os.chmod(path, (0o777 if folder else 0o666) & ~current_umask())


def leftovers_beside(path: str | os.PathLike) -> list[Path]:
    """The temporary files and folders an earlier, killed command left beside ``path`` (named
    ``.<name>.<command>-<pid>.<random>.tmp`` or ``.partial``), named in the log and kept: this command did not make
    them, and a command removes only what it made."""
    import logging

    path = Path(path)
    if not path.parent.is_dir():
        return []
    mine = temp_prefix(path)
    found = sorted(p for p in path.parent.glob(f".{glob_escape(path.name)}.*")
                   if p.name.endswith((TEMP_SUFFIX, PARTIAL_SUFFIX)) and not p.name.startswith(mine))
    if found:
        logging.getLogger(__name__).warning(
            "%d temporary file(s) or folder(s) that a killed command left beside %s are kept: %s (each name says "
            "which command and process made it). Delete them when no command writes there.", len(found), path,
            ", ".join(p.name for p in found[:5]) + (" ..." if len(found) > 5 else ""))
    return found


def glob_escape(name: str) -> str:
    import glob

    return glob.escape(name)


def folder_beside(path: str | os.PathLike, suffix: str = PARTIAL_SUFFIX) -> Path:
    """A new, empty folder next to ``path`` (on its file system, so it can be renamed onto it), with the
    mode ``mkdir`` would give it rather than mkdtemp's owner-only 0700."""
    path = Path(path)
    folder = Path(tempfile.mkdtemp(dir=path.parent, prefix=temp_prefix(path), suffix=suffix))
    readable_as_umask_allows(folder, folder=True)
    return folder


@contextmanager
def atomic_folder(path: str | os.PathLike, make_parents: bool = False):
    """Yield a folder to fill, renamed onto ``path`` when the block ends: ``path`` appears whole or not at
    all, its files with the modes a plain write gives (libraries such as safetensors write owner-only files).
    If the block or the rename fails (OSError when ``path`` exists and is not empty), the folder, made by this
    call, is removed and the error raised; so are the missing parents ``make_parents`` created. A ``..`` in ``path``
    is read as written: ``a/new/../out`` is ``a/out``, and no ``a/new`` is made on the way."""
    path = Path(os.path.normpath(path))
    made = [parent for parent in reversed(path.parents) if not parent.exists()] if make_parents else []
    for parent in made:
        parent.mkdir()
    try:
        partial = folder_beside(path)
        try:
            yield partial
            for inner in partial.rglob("*"):
                if not inner.is_symlink():
                    readable_as_umask_allows(inner, folder=inner.is_dir())
            partial.rename(path)
            note_created(path)
        except BaseException as err:
            shutil.rmtree(partial, ignore_errors=True)
            said = out_of_space(err, path)
            if said is not err:
                raise said from None
            raise
    except BaseException:
        for parent in reversed(made):
            with suppress(OSError):
                parent.rmdir()  # only if still empty: nothing of anyone else's goes
        raise


def atomic_write_text(path: str | os.PathLike, text: str, replace: bool = True) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), replace)


def atomic_write_json(path: str | os.PathLike, obj: Any, replace: bool = True) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n", replace)


def inside(folder: str | os.PathLike, name: str, where: str) -> Path:
    """``folder``/``name``, where a file names a path of its own folder (an export's ``legalft.json``): refused,
    naming ``where``, when it resolves outside ``folder`` (``..``, an absolute path, a link leading out)."""
    from legalft.foundation.errors import UserError

    root = Path(folder).resolve()
    path = (root / str(name)).resolve()
    if not path.is_relative_to(root):
        raise UserError(f"{where}={name!r} leads outside {root}: a file of this folder names only paths inside it. "
                        "Restore the folder as it was written (export the run again).")
    return path


def atomic_write_jsonl(path: str | os.PathLike, records: list[dict]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
