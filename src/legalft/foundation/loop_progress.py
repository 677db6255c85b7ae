"""Progress of a long loop: rows done of the total, rows per second and time left. On a terminal a
tqdm bar; otherwise (a SLURM log, a pipe) one log line every ``interval_s`` seconds or every ``step``
of the total, whichever comes first, and never a carriage return."""

from __future__ import annotations

import logging
import sys
import time

log = logging.getLogger("legalft.foundation.loop_progress")


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
    def __init__(self, total: int, what: str, unit: str = "rows", interval_s: float = 30.0, step: float = 0.05,
                 terminal: bool | None = None, clock=time.monotonic) -> None:
        self.total, self.what, self.unit = total, what, unit
        self.interval_s, self.step, self.clock = interval_s, step, clock
        self.done, self.start = 0, clock()
        self.last_time, self.last_done = self.start, 0
        self.bar = None
        if terminal if terminal is not None else sys.stderr.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=what, unit=unit.rstrip("s"), leave=False)

    def update(self, rows: int) -> None:
        self.done += rows
        if self.bar is not None:
            self.bar.update(rows)
            return
        now = self.clock()
        # a share of the work done counts once a second has passed: fast work is one line, not twenty
        due = now - self.last_time >= self.interval_s or (
            self.done - self.last_done >= self.step * self.total and now - self.last_time >= 1.0)
        if due or self.done >= self.total:
            self.last_time, self.last_done = now, self.done
            rate = self.done / max(now - self.start, 1e-9)
            left = (self.total - self.done) / rate if rate > 0 else float("inf")
            log.info("%s: %d/%d %s (%.0f%%), %.2f %s/s, %s elapsed, ETA %s", self.what, self.done, self.total,
                     self.unit, 100 * self.done / max(self.total, 1), rate, self.unit, duration(now - self.start),
                     duration(left) if left != float("inf") else "?")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
