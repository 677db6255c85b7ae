"""The report's significance: permutation tests, bootstrap intervals, multiple-testing adjustments and item counts
against hand-computed cases, and what the report says of their resolution."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from legalft.evaluation.counts import hit_counts
from legalft.reporting.significance import adjust_p_values, paired_bootstrap_interval, paired_permutation_test, paired_t_test_over_tasks


def accuracy_counts(gold, predicted):
    return hit_counts(np.array([g == p for g, p in zip(gold, predicted)], dtype=np.int64))


def test_permutation_p_value_matches_exact_enumeration():
    gold = list("AAAAAABB")
    first = list("AAAAAABA")  # 7 of 8 right
    second = list("ABABBABA")  # 4 of 8 right; the two differ on 3 examples, all won by the first
    right_first = np.array([g == p for g, p in zip(gold, first)])
    right_second = np.array([g == p for g, p in zip(gold, second)])
    observed = right_first.mean() - right_second.mean()
    extreme = 0
    for swaps in itertools.product([False, True], repeat=len(gold)):  # all 256 relabellings
        swaps = np.array(swaps)
        a, b = np.where(swaps, right_second, right_first), np.where(swaps, right_first, right_second)
        extreme += abs(a.mean() - b.mean()) >= abs(observed) - 1e-12
    exact = extreme / 2 ** len(gold)
    difference, p = paired_permutation_test(accuracy_counts(gold, first), accuracy_counts(gold, second), resamples=4000)
    assert difference == pytest.approx(3 / 8)
    assert exact == pytest.approx(2 / 8)  # by hand: as extreme only when none or all of the 3 are swapped
    assert p == pytest.approx(exact)  # 2^8 <= 4000 resamples: SciPy enumerates every swap


def test_identical_methods_are_not_significant():
    gold = list("ABABABAB")
    counts = accuracy_counts(gold, gold)
    assert paired_permutation_test(counts, counts, resamples=200) == (0.0, 1.0)
    assert paired_bootstrap_interval(counts, counts, resamples=200) == (0.0, 0.0, "none (identical)")


def test_bootstrap_interval_equals_scipy_on_the_per_example_differences():
    """For accuracy the difference of the two means is the mean of the per-example differences, so the
    interval must be SciPy's BCa interval of that mean, drawn with the same generator."""
    from scipy.stats import bootstrap

    gold = [0, 1] * 30
    first = gold[:48] + [1 - g for g in gold[48:]]  # 48 of 60 right
    second = [1 - g for g in gold[:25]] + gold[25:]  # 35 of 60 right
    low, high, method = paired_bootstrap_interval(accuracy_counts(gold, first), accuracy_counts(gold, second),
                                                  resamples=2000, seed=3)
    per_example = np.array([(f == g) - (s == g) for g, f, s in zip(gold, first, second)], dtype=float)
    reference = bootstrap((per_example,), np.mean, n_resamples=2000, method="BCa", batch=2_000_000 // 60,
                          rng=np.random.default_rng(3)).confidence_interval
    assert method == "BCa"
    assert (low, high) == pytest.approx((reference.low, reference.high))
    assert low < 13 / 60 < high


def test_item_counts_score_every_metric_as_the_full_metric_does():
    """A task's per-example counts give its recorded score on the full test set and, on resamples, the
    score scikit-learn or LegalBench's scorer gives the resampled examples (over the task's label
    space), without a warning."""
    import warnings

    from sklearn.preprocessing import MultiLabelBinarizer

    from legalft.evaluation.counts import label_counts
    from legalft.evaluation.metrics import item_counts, legalbench_scores, multilabel_scores, single_label_scores

    rng = np.random.default_rng(0)
    cases = []  # (name, counts, reference scorer, gold, predicted)

    def legalbench(task, metric, gold, predicted):
        cases.append((task, item_counts(task, {"metric": metric}, gold, predicted), lambda g, p, task=task, metric=metric:
                      legalbench_scores(task, metric, g, p)[metric], gold, predicted))

    gold = list(rng.choice(["Yes", "No", "Maybe"], 40))
    legalbench("hearsay", "balanced_accuracy", gold,
               [g if rng.random() < 0.7 else rng.choice(["yes", "No.", "perhaps"]) for g in gold])
    names = ["Acme Corp", "Beta LLC", "Gamma Inc"]
    gold = [", ".join(rng.choice(names, rng.integers(1, 3), replace=False)) for _ in range(30)]
    legalbench("ssla_company_defendants", "f1", gold, [g if rng.random() < 0.5 else rng.choice(names) for g in gold])
    gold = list(rng.choice(["express agreement", "de facto merger,mere continuation"], 30))
    legalbench("successor_liability", "f1", gold, [g if rng.random() < 0.6 else "none" for g in gold])
    gold = [f"${rng.integers(100, 10_000)}" for _ in range(30)]
    legalbench("sara_numeric", "within_10pct", gold, [g.strip("$") if rng.random() < 0.5 else "12" for g in gold])
    statutes = ["IPC 201", "IPC 302", "IPC 420"]
    gold = [list(rng.choice(statutes, rng.integers(1, 3), replace=False)) for _ in range(40)]
    predicted = [g if rng.random() < 0.5 else list(rng.choice(statutes, 1)) for g in gold]
    binarizer = MultiLabelBinarizer(classes=statutes)
    for metric in ("macro_f1", "micro_f1", "accuracy"):
        cases.append((f"proslex {metric}", label_counts(binarizer.fit_transform(gold), binarizer.transform(predicted),
                                                        metric),
                      lambda g, p, metric=metric: multilabel_scores(g, p, statutes)[metric], gold, predicted))
    assert item_counts("proslex", {"per_label": dict.fromkeys(statutes)}, gold, predicted).value() == pytest.approx(
        multilabel_scores(gold, predicted, statutes)["macro_f1"])
    gold = list(rng.choice(["x", "y", "z"], 40))
    predicted = [g if rng.random() < 0.6 else "y" for g in gold]
    cases.append(("custom", item_counts("custom", {}, gold, predicted),
                  lambda g, p: single_label_scores(g, p, ["x", "y", "z"])["macro_f1"], gold, predicted))

    for name, counts, reference, g, p in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the reference may warn on a resample; the counts must not (below)
            assert counts.value() == pytest.approx(reference(g, p), abs=1e-12), name
            for _ in range(20):  # small resamples, where classes go missing
                pick = rng.integers(0, len(g), 6)
                expected = reference([g[i] for i in pick], [p[i] for i in pick])
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    got = float(counts.score(counts.counts[pick].sum(0)))
                assert got == pytest.approx(expected, abs=1e-12), (name, pick)


def test_holm_and_benjamini_hochberg_by_hand():
    p = [0.01, 0.04, 0.03, float("nan"), 0.5]
    # Holm: sorted 0.01, 0.03, 0.04, 0.5 times 4, 3, 2, 1 -> 0.04, 0.09, 0.08 (raised to 0.09: monotone), 0.5
    assert adjust_p_values(p, "holm")[[0, 2, 1, 4]] == pytest.approx([0.04, 0.09, 0.09, 0.5])
    # BH: p * m / rank -> 0.04, 0.06, 0.0533, 0.5, made monotone from the top -> 0.04, 0.0533, 0.0533, 0.5
    assert adjust_p_values(p, "bh")[[0, 2, 1, 4]] == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.5])
    assert math.isnan(adjust_p_values(p, "holm")[3])
    assert adjust_p_values(p, "none")[1] == 0.04


def test_paired_t_test_over_tasks_by_hand():
    difference, p = paired_t_test_over_tasks([0.6, 0.8, 0.9], [0.5, 0.6, 0.6])  # differences 0.1, 0.2, 0.3
    assert difference == pytest.approx(0.2)
    assert p == pytest.approx(0.0742, abs=5e-4)  # t = 0.2 / (0.1 / sqrt 3) = 3.464, 2 degrees of freedom
    assert math.isnan(paired_t_test_over_tasks([0.5], [0.4])[1])


def test_too_few_resamples_for_holm_over_many_tasks_is_said():
    from legalft.reporting.marks import resolution_note

    tests = [{"method_a": "a", "method_b": "b"}] * 28
    note = resolution_note(tests, 1000, "holm")
    assert "cannot fall below 0.056" in note and "at least 1120" in note  # 28 * 2 / 1001; 2 * 28 / (R + 1) < 0.05
    assert "0.050" in resolution_note(tests, 1119, "holm") and resolution_note(tests, 1120, "holm") is None
    assert resolution_note(tests, 1000, "bh") is None


def test_an_interval_that_excludes_zero_without_an_adjusted_significance_is_explained():
    from legalft.reporting.marks import interval_disagreements

    base = {"task": "proa", "method_a": "tuned", "method_b": "prompted", "metric": "balanced_accuracy"}
    apart = {**base, "ci_low": 0.01, "ci_high": 0.12, "p_permutation": 0.03, "p_holm": 0.21}
    (note,) = interval_disagreements([apart], "holm")
    assert note.startswith("proa (tuned - prompted, balanced_accuracy): the 95% bootstrap interval [0.010, 0.120] "
                           "excludes 0 but the Holm-adjusted permutation p is 0.210")
    assert "not widened for the other tasks" in note
    agreeing = [{**apart, "p_holm": 0.01}, {**apart, "ci_low": -0.02}]  # significant; or an interval over 0
    assert interval_disagreements(agreeing, "holm") == []
