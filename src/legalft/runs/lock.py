"""An exclusive lock on a run folder, held for a command's whole life.

``fcntl.flock`` on ``<run folder>/.lock``: the kernel drops it when the holding process exits, however
it exits (``kill -9`` included), so a stale lock never blocks. The file itself stays and names the
last holder (host, PID, start time) for the message a second process prints. On NFS, Linux emulates
``flock`` with NFS byte-range locks, which hold across hosts only where the NFS lock service runs
(NFSv4, or NFSv3 with lockd); on a mount with ``nolock`` or ``local_lock=all`` two hosts do not see
each other's locks.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import stat
import time
from pathlib import Path

from legalft.foundation.errors import UserError

LOCK_FILE = ".lock"


class RunLock:
    def __init__(self, folder: Path, name: str = LOCK_FILE) -> None:
        self.path = Path(folder) / name
        self.fd: int | None = None

    def busy(self, holder: str) -> str:
        """The message for a second process that finds the lock held."""
        return (f"run folder {self.path.parent} is in use by another run ({holder}). Wait for it to finish, or choose "
                "another run folder (leave hydra.run.dir unset for a new one).")

    def acquire(self) -> None:
        try:  # no O_TRUNC: the holder's record stays readable; never through a link to a file elsewhere
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
        except OSError as err:
            if err.errno != errno.ELOOP:
                raise
            raise UserError(f"{self.path} is a symbolic link: the lock record would be written into the file it "
                            "points to. Remove the link, or choose another folder.") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise UserError(f"{self.path} is not a regular file: remove it, or choose another folder.")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self.holder(fd)
            os.close(fd)
            raise UserError(self.busy(holder)) from None
        record = {"host": socket.gethostname(), "pid": os.getpid(),
                  "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        self.fd = fd

    @staticmethod
    def holder(fd: int) -> str:
        try:
            record = json.loads(os.pread(fd, 4096, 0) or b"{}")
            return f"host {record['host']}, PID {record['pid']}, started {record['started']}"
        except (ValueError, KeyError, OSError):
            return "holder unknown"

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
