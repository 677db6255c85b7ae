"""Answers a server gave, on disk: a rerun, or a run resumed after a kill, sends no request that was
already answered. One SQLite file may be shared by many runs and processes (each answer is committed
as it arrives; SQLite's locking keeps concurrent writers apart)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path

from legalft.errors import UserError


def request_key(base_url: str, endpoint: str, body: dict) -> str:
    """What makes two requests the same: the endpoint and every parameter, the model name included
    (never the API key, which is a header)."""
    text = json.dumps([base_url.rstrip("/"), endpoint, body], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class RequestCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.connection = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
            self.connection.execute("PRAGMA journal_mode=WAL")  # readers never wait for the writer
            self.connection.execute(
                "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, endpoint TEXT, model TEXT, answer TEXT)")
            self.connection.commit()
        except (OSError, sqlite3.DatabaseError) as err:
            raise UserError(f"engine.cache={self.path}: cannot use it as the request cache ({err}); point "
                            "engine.cache at a new file, or set engine.cache=null to send every request.") from None
        self.lock = threading.Lock()

    def get(self, key: str) -> dict | None:
        with self.lock:
            row = self.connection.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, endpoint: str, model: str, answer: dict) -> None:
        with self.lock:
            self.connection.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)",
                                    (key, endpoint, model, json.dumps(answer)))
            self.connection.commit()

    def __len__(self) -> int:
        with self.lock:
            return self.connection.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        self.connection.close()
