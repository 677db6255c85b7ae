"""What a run prints: known-harmless library notices are dropped by their own text, nothing else."""

import logging

from legalft.foundation.console import DropMessages, UnusedPoolerReport


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
    from legalft.foundation.loop_progress import Progress

    now = [0.0]
    caplog.set_level(logging.INFO, logger="legalft.foundation.loop_progress")
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


def test_progress_over_work_done_within_a_second_is_one_line(caplog):
    from legalft.foundation.loop_progress import Progress

    now = [0.0]
    caplog.set_level(logging.INFO, logger="legalft.foundation.loop_progress")
    progress = Progress(27, "paired tests", unit="task pairs", terminal=False, clock=lambda: now[0])
    for _ in range(27):
        now[0] += 0.01
        progress.update(1)
    assert [r.getMessage().split(": ")[1].split(" task")[0] for r in caplog.records] == ["27/27"]


def test_training_progress_lines_give_batch_loss_and_eta(caplog, monkeypatch):
    """Outside a terminal (a SLURM log) training says where it is: a line per 10% of an epoch's batches."""
    import logging
    from types import SimpleNamespace

    import torch

    from legalft.training.progress import TrainingLines

    now = [0.0]
    lines = TrainingLines(interval_s=1e9, step=0.25, always=True, clock=lambda: now[0])
    trainer = SimpleNamespace(is_global_zero=True, current_epoch=0, max_epochs=2, num_training_batches=8,
                              callback_metrics={"train/loss": torch.tensor(0.5)})
    caplog.set_level(logging.INFO, logger="legalft.foundation.loop_progress")
    def train(batches):
        for batch in batches:
            lines.on_train_batch_start(trainer, None, None, batch)
            now[0] += 2.0  # 0.5 batches/s
            lines.on_train_batch_end(trainer, None, None, None, batch)

    lines.on_train_start(trainer, None)
    lines.on_train_epoch_start(trainer, None)
    train(range(8))
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 4  # batches 2, 4, 6, 8 of 8
    assert messages[0] == ("epoch 1/2: batch 2/8 (25%), loss 0.5000, 0.50 batches/s, 0:00:04 elapsed, "
                           "epoch ETA 0:00:12, run ETA 0:00:28")
    assert messages[-1].startswith("epoch 1/2: batch 8/8 (100%)") and messages[-1].endswith("run ETA 0:00:16")
    caplog.clear()
    lines.on_train_start(trainer, None)  # resumed part-way through an epoch: Lightning calls no epoch-start hook
    train(range(5, 8))
    resumed = [r.getMessage() for r in caplog.records]
    assert [m.split(",")[0] for m in resumed] == ["epoch 1/2: batch 7/8 (88%)", "epoch 1/2: batch 8/8 (100%)"]
    assert "0.50 batches/s" in resumed[0]  # its own pace, from where it resumed
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)  # on a terminal Lightning's bar says it
    on_terminal = TrainingLines()
    on_terminal.on_train_start(trainer, None)
    monkeypatch.setattr("sys.stderr.isatty", lambda: False)
    in_a_log = TrainingLines()
    in_a_log.on_train_start(trainer, None)
    assert (on_terminal.active, in_a_log.active) == (False, True)
