"""What a run prints: known-harmless library notices are dropped by their own text, nothing else."""

import logging

from legalft.cli import DropMessages, UnusedPoolerReport


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("x", logging.WARNING, __file__, 1, message, None, None)


REPORT = """BertModel LOAD REPORT from: /models/minilm
Key                 | Status     |  | 
--------------------+------------+--+-
{rows}
Notes:
- UNEXPECTED:\tcan be ignored when loading from different task/architecture."""


def test_a_load_report_listing_only_the_unused_pooler_is_dropped():
    pooler = "pooler.dense.weight | UNEXPECTED |  | \npooler.dense.bias   | UNEXPECTED |  | "
    assert not UnusedPoolerReport().filter(record(REPORT.format(rows=pooler)))
    missing = pooler + "\nencoder.layer.0.attention.self.query.weight | MISSING |  | "
    assert UnusedPoolerReport().filter(record(REPORT.format(rows=missing)))  # a real problem still shows
    assert UnusedPoolerReport().filter(record("Some other warning"))


def test_only_the_named_notices_are_dropped():
    drop = DropMessages("Tip: For seamless")
    assert not drop.filter(record("💡 Tip: For seamless cloud logging, try litlogger"))
    assert drop.filter(record("GPU available: False, used: False"))


def test_progress_off_a_terminal_is_a_log_line_at_intervals(caplog):
    from legalft.progress import Progress

    now = [0.0]
    caplog.set_level(logging.INFO, logger="legalft.progress")
    progress = Progress(100, "hearsay: scoring labels", interval_s=30, step=0.25, terminal=False,
                        clock=lambda: now[0])
    for _ in range(10):  # 10 rows every 10 s
        now[0] += 10
        progress.update(10)
    lines = [r.getMessage() for r in caplog.records]
    # every 30 s (3 updates) or 25% of the rows, whichever comes first, and the last row: 30, 60, 90, 100
    assert [line.split(": ")[2].split(" rows")[0] for line in lines] == ["30/100", "60/100", "90/100", "100/100"]
    assert "30/100 rows (30%), 1.00 rows/s, 0:00:30 elapsed, ETA 0:01:10" in lines[0]
    assert lines[-1].startswith("hearsay: scoring labels: 100/100 rows (100%)") and "ETA 0:00:00" in lines[-1]
    assert not any("\r" in line for line in lines)
