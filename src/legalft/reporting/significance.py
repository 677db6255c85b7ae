"""Paired significance between two methods on the same test examples, as the LegalBench paper tests
its baselines: a permutation test per task and a bootstrap interval of the difference (SciPy's
``permutation_test`` and ``bootstrap``, vectorised over resamples through per-example counts,
``counts.ItemCounts``), a correction for testing many tasks, and a paired t-test over the tasks of
a category."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

from legalft.evaluation.counts import ItemCounts

CORRECTIONS = ("holm", "bh", "none")


def paired_permutation_test(first: ItemCounts, second: ItemCounts, resamples: int = 1000,
                            seed: int = 0) -> tuple[float, float]:
    """(observed difference first - second, two-sided p-value). The null: the two methods are
    exchangeable, so each resample swaps their predictions on a random subset of the examples; with
    2^n <= resamples all swaps are enumerated (an exact test)."""
    from scipy.stats import permutation_test

    observed = first.value() - second.value()
    n = len(first.counts)
    swap_gain = (second.counts - first.counts).astype(float)  # what the first gains where the two swap
    total_first, total_second = first.counts.sum(0), second.counts.sum(0)
    if not swap_gain.any():  # the same counts on every example: every swap gives the observed difference
        return observed, 1.0

    def difference(x, y, axis=-1):
        # x holds, per example, i (the first method's prediction) or n + i (the second's, when swapped)
        swapped = (np.moveaxis(x, axis, -1) >= n).astype(float)
        gain = swapped @ swap_gain
        return first.score(total_first + gain) - second.score(total_second - gain)

    result = permutation_test((np.arange(n), np.arange(n) + n), difference, permutation_type="samples",
                              vectorized=True, n_resamples=resamples, alternative="two-sided",
                              rng=np.random.default_rng(seed))
    return observed, float(result.pvalue)


def paired_bootstrap_interval(first: ItemCounts, second: ItemCounts, resamples: int = 1000, seed: int = 0,
                              level: float = 0.95) -> tuple[float, float, str]:
    """(low, high, method) of the difference first - second over examples resampled with replacement:
    BCa, or the percentile interval where BCa is undefined (a degenerate jackknife, e.g. the methods
    differ on one example)."""
    from scipy.stats import DegenerateDataWarning, bootstrap

    observed = first.value() - second.value()
    if np.array_equal(first.counts, second.counts):
        return observed, observed, "none (identical)"
    n, k = first.counts.shape
    both_counts = np.concatenate([first.counts, second.counts], axis=1)

    def difference(index, axis=-1):
        index = np.moveaxis(index, axis, -1)
        batch = index.reshape(-1, index.shape[-1])
        # how often each example is drawn, per resample: one bincount over all resamples at once
        offsets = np.arange(len(batch))[:, None] * n
        drawn = np.bincount((batch + offsets).ravel(), minlength=len(batch) * n).reshape(len(batch), n)
        summed = (drawn @ both_counts).reshape(*index.shape[:-1], -1)
        return first.score(summed[..., :k]) - second.score(summed[..., k:])

    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", DegenerateDataWarning)
            warnings.simplefilter("error", RuntimeWarning)
            try:
                result = bootstrap((np.arange(n),), difference, vectorized=True, n_resamples=resamples,
                                   confidence_level=level, method=method, batch=max(1, 2_000_000 // max(n, 1)),
                                   rng=np.random.default_rng(seed))
            except (DegenerateDataWarning, RuntimeWarning):
                continue
        low, high = result.confidence_interval
        if np.isfinite(low) and np.isfinite(high):
            return float(low), float(high), method
    return observed, observed, "none (degenerate)"


def adjust_p_values(p_values: Sequence[float], correction: str) -> np.ndarray:
    """p-values adjusted for testing many tasks: Holm's step-down (family-wise error) or
    Benjamini-Hochberg (``scipy.stats.false_discovery_control``, false discovery rate); NaNs stay NaN."""
    from scipy.stats import false_discovery_control

    if correction not in CORRECTIONS:
        raise ValueError(f"report.correction={correction!r}: choose one of {', '.join(CORRECTIONS)}")
    p = np.asarray(p_values, dtype=float)
    adjusted = p.copy()
    valid = ~np.isnan(p)
    if correction == "none" or not valid.any():
        return adjusted
    if correction == "bh":
        adjusted[valid] = false_discovery_control(p[valid], method="bh")
        return adjusted
    # Holm: the i-th smallest of m p-values times (m - i), made monotone, capped at 1 (SciPy has no Holm)
    order = np.argsort(p[valid])
    m = len(order)
    stepped = np.minimum(1.0, np.maximum.accumulate(p[valid][order] * (m - np.arange(m))))
    values = np.empty(m)
    values[order] = stepped
    adjusted[valid] = values
    return adjusted


def t_interval(values: Sequence[float]) -> tuple[float, float] | None:
    """95% t-interval of the mean of ``values`` (None below two)."""
    if len(values) < 2:
        return None
    from scipy.stats import t

    half = float(t.ppf(0.975, len(values) - 1)) * float(np.std(values, ddof=1)) / math.sqrt(len(values))
    return float(np.mean(values)) - half, float(np.mean(values)) + half


def paired_t_test_over_tasks(first: Sequence[float], second: Sequence[float]) -> tuple[float, float]:
    """(mean difference, two-sided p) of two methods' scores on the same tasks (NaN below 2 tasks)."""
    from scipy.stats import ttest_rel

    if len(first) < 2:
        return float(np.mean(np.subtract(first, second))) if first else float("nan"), float("nan")
    differences = np.subtract(first, second)
    if np.all(differences == differences[0]):  # no spread: the t statistic is undefined
        return float(differences[0]), float("nan") if differences[0] else 1.0
    result = ttest_rel(first, second)
    return float(np.mean(differences)), float(result.pvalue)
