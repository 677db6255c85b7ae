"""Paired significance between two methods on the same test examples, as the LegalBench paper tests
its baselines: a permutation test per task (and a bootstrap interval of the difference), and a
paired t-test over the tasks of a category."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Metric = Callable[[Sequence, Sequence], float]  # (gold, predicted) -> score


def paired_permutation_test(metric: Metric, gold: Sequence, first: Sequence, second: Sequence,
                            resamples: int = 1000, seed: int = 0) -> tuple[float, float]:
    """(observed difference first - second, two-sided p-value): each resample swaps the two
    methods' predictions on a random half of the examples (the null: the methods are exchangeable)."""
    observed = metric(gold, first) - metric(gold, second)
    rng = np.random.default_rng(seed)
    extreme = 0
    for _ in range(resamples):
        swap = rng.random(len(gold)) < 0.5
        a = [s if flip else f for f, s, flip in zip(first, second, swap)]
        b = [f if flip else s for f, s, flip in zip(first, second, swap)]
        extreme += abs(metric(gold, a) - metric(gold, b)) >= abs(observed) - 1e-12
    return observed, (extreme + 1) / (resamples + 1)


def paired_bootstrap_interval(metric: Metric, gold: Sequence, first: Sequence, second: Sequence,
                              resamples: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the difference first - second over examples resampled with replacement."""
    import warnings

    rng = np.random.default_rng(seed)
    n = len(gold)
    differences = []
    with warnings.catch_warnings():  # a resample can lack a class the predictions name: expected, once per resample
        warnings.filterwarnings("ignore", message="y_pred contains classes not in y_true")
        for _ in range(resamples):
            idx = rng.integers(0, n, n)
            g = [gold[i] for i in idx]
            differences.append(metric(g, [first[i] for i in idx]) - metric(g, [second[i] for i in idx]))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(differences, [tail, 100 - tail])
    return float(low), float(high)


def paired_t_test_over_tasks(first: Sequence[float], second: Sequence[float]) -> tuple[float, float]:
    """(mean difference, two-sided p) of two methods' scores on the same tasks (NaN below 2 tasks)."""
    from scipy.stats import ttest_rel

    if len(first) < 2:
        return float(np.mean(np.subtract(first, second))) if first else float("nan"), float("nan")
    result = ttest_rel(first, second)
    return float(np.mean(np.subtract(first, second))), float(result.pvalue)
