"""Answers a server gave, on disk: a rerun, or a run resumed after a kill, sends no request that was
already answered. One SQLite file may be shared by many runs and processes (each answer is committed
as it arrives; SQLite's locking keeps concurrent writers apart).

The cache only ever saves requests: a cache file that SQLite finds damaged (not a database, or damaged
pages) is moved aside (``<file>.damaged-<time>``, with its journal files), the run says so and goes on
with a new cache, sending the requests again."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path

from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)
DAMAGED_CODES = {getattr(sqlite3, "SQLITE_CORRUPT", 11), getattr(sqlite3, "SQLITE_NOTADB", 26)}


def request_key(base_url: str, endpoint: str, body: dict) -> str:
    """What makes two requests the same: the endpoint and every parameter, the model name included
    (never the API key, which is a header)."""
    text = json.dumps([base_url.rstrip("/"), endpoint, body], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def is_damage(err: sqlite3.Error) -> bool:
    """A damaged file, as opposed to a busy one ("database is locked"), which is waited for, not set aside."""
    code = getattr(err, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return code in DAMAGED_CODES
    return any(words in str(err) for words in ("malformed", "not a database"))


class RequestCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self.connection = self.connect()
            except sqlite3.DatabaseError as err:
                if not is_damage(err):
                    raise
                self.connection = self.set_aside(err, None)
        except (OSError, sqlite3.Error) as err:
            raise UserError(f"engine.cache={self.path}: cannot use it as the request cache ({err}); point "
                            "engine.cache at a new file, or set engine.cache=null to send every request.") from None

    def connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        try:
            connection.execute("PRAGMA journal_mode=WAL")  # readers never wait for the writer
            connection.execute(
                "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, endpoint TEXT, model TEXT, answer TEXT)")
            connection.commit()
            problem = connection.execute("PRAGMA quick_check").fetchone()[0]  # damaged pages, found now, not mid-run
            if problem != "ok":
                raise sqlite3.DatabaseError(f"database disk image is malformed ({problem})")
        except BaseException:
            connection.close()
            raise
        return connection

    def set_aside(self, err: Exception, connection: sqlite3.Connection | None) -> sqlite3.Connection:
        """Move the damaged file (and its journal files) aside and start a new cache at the same path."""
        if connection is not None:
            connection.close()
        aside = self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        for suffix in ("", "-wal", "-shm", "-journal"):
            part = self.path.with_name(self.path.name + suffix)
            if part.exists():
                part.rename(aside.with_name(aside.name + suffix))
        log.warning("request cache %s cannot be read (%s): moved aside to %s; a new cache is started, and requests "
                    "answered before are sent again", self.path, err, aside.name)
        return self.connect()

    def get(self, key: str) -> dict | None:
        with self.lock:
            try:
                row = self.connection.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
            except sqlite3.DatabaseError as err:
                if not is_damage(err):
                    raise
                self.connection = self.set_aside(err, self.connection)
                return None
        try:
            answer = json.loads(row[0]) if row else None
        except (TypeError, ValueError):
            return None  # an answer stored damaged is asked again
        return answer if isinstance(answer, dict) else None

    def put(self, key: str, endpoint: str, model: str, answer: dict) -> None:
        row = (key, endpoint, model, json.dumps(answer))
        with self.lock:
            try:
                self.connection.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)", row)
                self.connection.commit()
            except sqlite3.DatabaseError as err:
                if not is_damage(err):
                    raise
                self.connection = self.set_aside(err, self.connection)
                self.connection.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)", row)
                self.connection.commit()

    def __len__(self) -> int:
        with self.lock:
            return self.connection.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        self.connection.close()
