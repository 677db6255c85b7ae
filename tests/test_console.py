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
