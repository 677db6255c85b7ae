"""The run's log file (``<run folder>/train.log``, ``evaluate.log``), as Hydra's ``job_logging`` file
handler (``conf/hydra/default.yaml``, ``conf/evaluate.yaml``). Hydra's own handler appends to whatever
the name holds: a user's file of that name, an earlier run's log, or the file a symbolic link points
to outside the folder. This one always creates its file: when the name is taken (by anything, a link
included) the log goes to ``<name>.<time>.log`` beside it, and the existing file is left as it was."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from legalft.foundation.io import make_folders, open_new_file


def new_log_file(path: Path) -> tuple[Path, int]:
    """``path``, or the first free ``<stem>.<time>[-n]<suffix>`` beside it, created now; and its descriptor."""
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
    candidates = [path] + [path.with_name(f"{path.stem}.{stamp}{f'-{n}' if n else ''}{path.suffix}") for n in range(100)]
    for candidate in candidates:
        try:
            return candidate, open_new_file(candidate)
        except FileExistsError:
            continue
    raise FileExistsError(f"{path}: no free name for the run's log beside it")


class NewLogFile(logging.FileHandler):
    """``filename=None``: no file (a job logging config that logs to stdout alone, e.g. report=compare's,
    where the entry point's setting of this class meets no file name); the handler then writes nothing."""

    def __init__(self, filename: str | None = None, mode: str = "a", encoding: str | None = None,
                 delay: bool = False, errors: str | None = None) -> None:
        if filename is None:
            logging.Handler.__init__(self)
            self.stream = None
            return
        make_folders(Path(filename).parent)  # noted as this command's, like the file
        path, self._fd = new_log_file(Path(filename))
        super().__init__(path, mode="a", encoding=encoding, delay=False, errors=errors)

    def emit(self, record: logging.LogRecord) -> None:
        if hasattr(self, "baseFilename"):
            super().emit(record)

    def close(self) -> None:
        if hasattr(self, "baseFilename"):
            super().close()
        else:
            logging.Handler.close(self)

    def _open(self):
        if self._fd is not None:  # the file created above; later reopenings append to the same file
            fd, self._fd = self._fd, None
            return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)
        return open(os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW), "a",
                    encoding=self.encoding, errors=self.errors)
