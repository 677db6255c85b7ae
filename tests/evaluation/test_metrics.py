import numpy as np
import pytest

from legalft.evaluation.metrics import multilabel_scores, score_probabilities, single_label_scores, tune_thresholds

LABELS = ["A", "B", "C"]


def test_multilabel_scores_against_hand_computed_values():
    gold = [["A"], ["A", "B"], ["C"], ["B"]]
    pred = [["A"], ["A"], ["C", "B"], []]
    scores = multilabel_scores(gold, pred, LABELS)
    # exact set match: only the first document
    assert scores["n"] == 4
    assert scores["accuracy"] == pytest.approx(1 / 4)
    # A: tp 2 fp 0 fn 0 -> f1 1; B: tp 0 fp 1 fn 2 -> f1 0; C: tp 1 fp 0 fn 0 -> f1 1
    assert scores["per_label"]["A"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 2}
    assert scores["per_label"]["B"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 2}
    assert scores["per_label"]["C"]["f1"] == 1.0
    assert scores["macro_f1"] == pytest.approx(2 / 3)
    # micro: tp 3, fp 1, fn 2 -> 2*3 / (2*3 + 1 + 2)
    assert scores["micro_f1"] == pytest.approx(6 / 9)


def test_labels_outside_the_prediction_still_count_in_macro_average(caplog):
    import logging

    with caplog.at_level(logging.WARNING):
        scores = multilabel_scores([["A"], ["A"]], [["A"], ["A"]], LABELS)
    assert scores["per_label"]["C"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert scores["macro_f1"] == pytest.approx(1 / 3)
    # said, with how it is counted
    assert "B, C: no scored document has these labels: macro-F1 averages all 3 labels and counts their F1 as 0" \
        in caplog.text


def test_single_label_scores():
    scores = single_label_scores(["A", "A", "A", "B"], ["A", "A", "B", "B"], ["A", "B"])
    assert scores["accuracy"] == pytest.approx(0.75)
    assert scores["balanced_accuracy"] == pytest.approx((2 / 3 + 1) / 2)
    # A: p 1, r 2/3 -> f1 0.8; B: p 0.5 r 1 -> f1 2/3
    assert scores["macro_f1"] == pytest.approx((0.8 + 2 / 3) / 2)


def test_score_probabilities_applies_per_label_thresholds():
    probs = np.array([[0.9, 0.3], [0.2, 0.35], [0.6, 0.1]])
    targets = np.array([[1, 1], [0, 1], [1, 0]])
    assert score_probabilities(probs, targets, ["A", "B"], True)["per_label"]["B"]["recall"] == 0.0
    tuned = score_probabilities(probs, targets, ["A", "B"], True, thresholds=np.array([0.5, 0.3]))
    assert tuned["macro_f1"] == 1.0 and tuned["accuracy"] == 1.0


def test_score_probabilities_single_label_uses_argmax():
    probs = np.array([[0.2, 0.8], [0.7, 0.3]])
    assert score_probabilities(probs, np.array([1, 1]), ["A", "B"], False)["accuracy"] == 0.5


def test_tune_thresholds_picks_the_f1_maximising_cut_nearest_half():
    probs = np.array([[0.30, 0.9], [0.25, 0.8], [0.10, 0.7], [0.05, 0.1]])
    targets = np.array([[1, 1], [1, 1], [0, 1], [0, 0]])
    thresholds = tune_thresholds(probs, targets)
    # label 0: any cut in (0.10, 0.25] separates perfectly; nearest to 0.5 on the grid is 0.25
    # label 1: any cut in (0.10, 0.70] separates; nearest to 0.5 is 0.5
    assert thresholds.tolist() == [0.25, 0.5]


def test_tune_thresholds_keeps_half_for_labels_without_positives():
    assert tune_thresholds(np.array([[0.9], [0.1]]), np.array([[0], [0]])).tolist() == [0.5]


def test_the_loggers_get_each_tasks_scores_each_labels_scores_and_the_category_means():
    from legalft.evaluation.results_logging import result_metrics

    scores = {"proslex": {"n": 3, "macro_f1": 0.5, "per_label": {"IPC 302": {"precision": 1.0, "recall": 0.5,
                                                                               "f1": 2 / 3, "support": 2}}},
              "hearsay": {"n": 4, "metric": "balanced_accuracy", "balanced_accuracy": 0.75, "category": "conclusion"}}
    metrics = result_metrics(scores)
    assert metrics["test/proslex/per_label/IPC 302/f1"] == pytest.approx(2 / 3)
    assert metrics["test/proslex/per_label/IPC 302/support"] == 2.0
    assert metrics["test/hearsay/balanced_accuracy"] == 0.75 and metrics["test/category/conclusion"] == 0.75
