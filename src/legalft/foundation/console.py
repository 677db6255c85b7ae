"""What the entry points share on the console: a ``UserError`` turned into one message and a non-zero exit, log
lines each said once, libraries' known-harmless notices silenced."""

from __future__ import annotations

import logging
import sys
from typing import Callable, TypeVar

from legalft.foundation.errors import EXIT_BAD_INPUT, UserError

log = logging.getLogger("legalft")
T = TypeVar("T")

# What this command undoes when it fails on bad input: the run folder guard's removal of what it created
# (``legalft.apps.run_guard`` sets it while it guards a folder)
_undo_on_bad_input: Callable[[], None] | None = None


def undo_on_bad_input(undo: Callable[[], None] | None) -> None:
    global _undo_on_bad_input
    _undo_on_bad_input = undo


def run_or_exit(job: Callable[[], T]) -> T:
    """Run ``job``; on bad input print ``error: <message>``, undo what this command created in its run folder
    (``undo_on_bad_input``), and exit with status 2."""
    try:
        return job()
    except Exception as err:
        cause = user_error_in_chain(err)
        if cause is None:
            raise
        if _undo_on_bad_input is not None:
            _undo_on_bad_input()
        if logging.getLogger().handlers:  # none before Hydra configures logging: Python's last resort would print it
            log.error("%s", cause, extra={FILE_ONLY: True})  # the run's log file; the console gets the line below
        print(f"error: {cause}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT) from None


def user_error_in_chain(err: BaseException | None) -> UserError | None:
    """The UserError behind ``err``: Hydra's instantiate wraps what a constructor raises."""
    while err is not None and not isinstance(err, UserError):
        err = err.__cause__
    return err


FILE_ONLY = "file_only"  # a log record's flag: for the run's log file, not the console


class NotOnConsole(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, FILE_ONLY, False)


class DropMessages(logging.Filter):
    """Drops a logger's records that contain one of ``fragments``; lets everything else through."""

    def __init__(self, *fragments: str) -> None:
        super().__init__()
        self.fragments = fragments

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(fragment in message for fragment in self.fragments)


class UnusedPoolerReport(logging.Filter):
    """transformers' load report when the only keys it lists are a checkpoint's pooler weights, which
    the encoders are loaded without on purpose (they pool windows themselves)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "LOAD REPORT" not in message:
            return True
        rows = [line.split("|") for line in message.splitlines() if line.count("|") >= 2 and "Status" not in line]
        return not rows or not all(key.strip().startswith("pooler.") and "UNEXPECTED" in status
                                   for key, status, *_ in rows)


def no_bars_outside_a_terminal() -> None:
    """Libraries' own progress bars (transformers' GGUF loading) write carriage returns into a log that
    is not a terminal. tqdm reads ``TQDM_DISABLE`` when it is imported: entry points call this first."""
    import os

    if not sys.stderr.isatty():
        os.environ.setdefault("TQDM_DISABLE", "1")


def plain_console() -> None:
    """A command without Hydra: its log lines on the console as they are, each error said once (``error:``)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    console_says_each_error_once()


def console_says_each_error_once() -> None:
    """The console's log handlers leave out what is for the run's log file alone (the ``error:`` line says it)."""
    for handler in logging.getLogger().handlers:  # once each: a sweep calls this for every job
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler) and not any(
                isinstance(f, NotOnConsole) for f in handler.filters):
            handler.addFilter(NotOnConsole())


def quiet_console() -> None:
    """What a run prints is its own progress and results. Lightning adds a console handler of its own
    when imported (under Hydra, whose root handler already prints to the console and the run's log,
    every line came twice), and a few known-harmless notices drown the run's lines: silenced here one
    by one, by their own text, so any other warning still shows."""
    import warnings

    import lightning  # noqa: F401  (the handler is attached on import)
    from transformers.utils import logging as transformers_logging

    console_says_each_error_once()
    lightning_logger = logging.getLogger("lightning")
    for handler in list(lightning_logger.handlers):
        lightning_logger.removeHandler(handler)
    # Lightning 2.6's own pytree helper, on every fit and predict; nothing a user can change
    warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated")
    # transformers 5 asks callers of a renamed property (PEFT and Lightning call it, not this project)
    warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated")
    # PEFT looks for the base model's config.json beside its weights to check for a resized vocabulary; the
    # offline SmolLM2 is a GGUF file without one, and its vocabulary is the tokenizer's
    warnings.filterwarnings("ignore", message=r"Could not find a config file in .* will assume that the vocabulary")
    # an epoch shorter than trainer.log_every_n_steps (LegalBench's few-shot train splits): the epoch-end
    # values are still logged, and legalft.training.progress says where training is
    warnings.filterwarnings("ignore", message=r"The number of training batches .* is smaller than the logging interval")
    logging.getLogger("lightning.pytorch.utilities.rank_zero").addFilter(DropMessages("Tip: For seamless"))
    # bitsandbytes looks for an optional hub kernel on AVX512-BF16 CPUs and falls back to its own
    logging.getLogger("bitsandbytes.backends.cpu.ops").addFilter(
        DropMessages("Failed to load CPU gemm_4bit_forward from kernels-community"))
    logging.getLogger("transformers.modeling_utils").addFilter(UnusedPoolerReport())
    transformers_logging.disable_progress_bar()  # "Loading weights" bars, one per model load
