"""What the entry points share: turning a ``UserError`` into one message and a non-zero exit."""

from __future__ import annotations

import logging
import sys
from typing import Callable, TypeVar

from legalft.errors import UserError

log = logging.getLogger("legalft")
T = TypeVar("T")

EXIT_BAD_INPUT = 2


def run_or_exit(job: Callable[[], T]) -> T:
    """Run ``job``; on bad input print ``error: <message>``, remove what this command created in its run
    folder (``legalft.run_guard``), and exit with status 2."""
    from legalft.run_guard import undo_created

    try:
        return job()
    except Exception as err:
        cause = user_error_in_chain(err)
        if cause is None:
            raise
        undo_created()
        log.error("%s", cause)
        print(f"error: {cause}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT) from None


def user_error_in_chain(err: BaseException | None) -> UserError | None:
    """The UserError behind ``err``: Hydra's instantiate wraps what a constructor raises."""
    while err is not None and not isinstance(err, UserError):
        err = err.__cause__
    return err


def route_lightning_logs_to_hydra() -> None:
    """Lightning adds a console handler of its own when imported; under Hydra, whose root handler
    already prints to the console and to the run's log file, that prints every line twice."""
    import lightning  # noqa: F401  (the handler is attached on import)

    lightning_logger = logging.getLogger("lightning")
    for handler in list(lightning_logger.handlers):
        lightning_logger.removeHandler(handler)
