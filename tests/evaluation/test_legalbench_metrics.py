import pytest

from legalft.evaluation.metrics import (
    balanced_accuracy,
    contains,
    legalbench_scores,
    ssla_f1,
    stemmed_match,
    successor_liability_f1,
    within_10pct,
)
from legalft.evaluation.normalize import normalize


def test_normalize_strips_punctuation_space_and_case():
    assert normalize("  Yes.\n") == "yes"
    assert normalize("De-Facto Merger!") == "defacto merger"
    assert normalize("Authorized", stem=True) == "author"


def test_balanced_accuracy_after_normalisation():
    gold = ["Yes", "Yes", "Yes", "No"]
    generations = ["yes.", " YES", "No", "no"]
    # recall of Yes 2/3, of No 1/1
    assert balanced_accuracy(gold, generations) == pytest.approx((2 / 3 + 1) / 2)


def test_ssla_f1_paper_and_official_modes():
    gold = ["Acme Corp, John Smith"]
    identical = ["Acme Corp, John Smith"]
    assert ssla_f1(gold, identical) == 1.0
    # public code: after matching "acme corp", the still-unmatched "john smith" is counted as a false
    # positive once before it is matched itself: tp 2, fp 1 -> 4/5
    assert ssla_f1(gold, identical, official=True) == pytest.approx(0.8)
    # one right, one wrong, one missed: tp 1 fp 1 fn 1 -> 2/4 in the paper's F1
    assert ssla_f1(gold, ["Acme Corp, Jane Doe"]) == pytest.approx(0.5)
    # official: fp counted after each gold answer: 1 ("jane doe" left after acme) + 1 -> tp 1 fp 2 fn 1
    assert ssla_f1(gold, ["Acme Corp, Jane Doe"], official=True) == pytest.approx(2 / 5)


def test_successor_liability_f1_and_the_official_defect():
    gold = ["express agreement,de facto merger", "mere continuation"]
    generations = ["De facto merger and express agreement", "fraudulent conveyance"]
    # tp 2, fp 1 (fraudulent conveyance), fn 1 (mere continuation) -> 4/6
    assert successor_liability_f1(gold, generations) == pytest.approx(4 / 6)
    paper = legalbench_scores("successor_liability", "f1", gold, generations, "paper")
    assert paper["f1"] == pytest.approx(4 / 6) and paper["metric"] == "f1"
    # the public code lists the task among exact-match tasks: balanced accuracy of whole strings, here 0
    official = legalbench_scores("successor_liability", "f1", gold, generations, "official")
    assert official["metric"] == "balanced_accuracy" and official["balanced_accuracy"] == 0.0 and "f1" not in official


def test_sara_numeric_within_ten_percent():
    gold = ["$1000", "$250", "$0"]
    generations = ["The tax is $1,050.", "It is 200 dollars", "0"]
    # 1050 within 10% of 1000; 200 is 20% off; 0 vs 0.1 -> |0/0.1 - 1| = 1, wrong (as the public code)
    assert within_10pct(gold, generations) == pytest.approx(1 / 3)


def test_definition_extraction_stemmed_match():
    assert stemmed_match(["authorize,authorized", "damages"], ["Authorizes", "harm, injury"]) == pytest.approx(0.5)


def test_citation_open_containment():
    gold = ["Brown v. Board of Education"]
    assert contains(gold, ["See brown v board of education, 347 U.S. 483"]) == 1.0
    assert contains(gold, ["Plessy v. Ferguson"]) == 0.0


def test_manual_tasks_are_flagged_not_scored():
    scores = legalbench_scores("rule_qa", "manual", ["x"], ["y"])
    assert scores == {"n": 1, "metric": "manual", "manual_grading": True}


def test_bad_mode_and_length_mismatch():
    with pytest.raises(ValueError, match="metric_mode"):
        legalbench_scores("hearsay", "balanced_accuracy", ["Yes"], ["Yes"], "strict")
    with pytest.raises(ValueError, match="1 gold answers but 2 generations"):
        legalbench_scores("hearsay", "balanced_accuracy", ["Yes"], ["Yes", "No"])


def test_balanced_accuracy_equals_scikit_learn_without_its_warning():
    import warnings

    import numpy as np
    from sklearn.metrics import balanced_accuracy_score

    from legalft.evaluation.metrics import balanced_accuracy

    rng = np.random.default_rng(0)
    for _ in range(50):
        gold = list(rng.choice(["Yes", "No", "Maybe"], int(rng.integers(1, 30))))
        generations = list(rng.choice(["yes", "No.", "maybe", "I cannot tell"], len(gold)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = balanced_accuracy_score([g.lower() for g in gold], [g.lower().strip(".") for g in generations])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert balanced_accuracy(gold, generations) == expected  # bit for bit
