"""Checks of a setting's value, for the config check before anything heavy (``legalft.apps.config_checks``) and
for the checks a method declares of its own settings (``Method.settings``): each takes a value and says whether it
is acceptable."""

from __future__ import annotations

import math
from collections.abc import Callable

Check = Callable[[object], bool]


def whole(least: int) -> Check:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= least


def number(above: float | None = None, least: float | None = None, below: float | None = None) -> Check:
    def check(v) -> bool:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return False
        return (above is None or v > above) and (least is None or v >= least) and (below is None or v < below)

    return check


def or_null(check: Check) -> Check:
    return lambda v: v is None or check(v)


def one_or_list(check: Check) -> Check:
    """One acceptable value, or a non-empty list of them (options a run chooses among)."""
    return lambda v: check(v) or (isinstance(v, (list, tuple)) and len(v) > 0 and all(check(x) for x in v))


def one_of(*choices) -> Check:
    return lambda v: v in choices


def names() -> Check:
    """A non-empty list of names, or one name (``all``)."""
    return lambda v: (isinstance(v, str) and bool(v)) or (
        isinstance(v, list) and len(v) > 0 and all(isinstance(x, str) and x for x in v))
