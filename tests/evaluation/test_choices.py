"""How a run chooses between options by itself (legalft.evaluation.choices): only on enough held-out documents,
only by more than the margin's standard error, and always saying on what."""

from __future__ import annotations

import numpy as np
import pytest

from legalft.evaluation.choices import bootstrap_se, choose, macro_f1, thresholds_choice


def noisy(targets: np.ndarray, flip: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.where(rng.random(targets.shape) < flip, ~targets, targets)


@pytest.fixture
def targets():
    rng = np.random.default_rng(0)
    return rng.random((400, 4)) < 0.3


def test_macro_f1_is_scikit_learns(targets):
    from sklearn.metrics import f1_score

    decisions = noisy(targets, 0.2, 1)
    assert macro_f1(decisions, targets) == pytest.approx(f1_score(targets, decisions, average="macro", zero_division=0))


def test_a_clearly_better_option_is_chosen_and_recorded_with_its_evidence(targets):
    good, poor = noisy(targets, 0.05, 1), noisy(targets, 0.3, 2)
    choice = choose({"fused": poor, "encoder": good}, targets, prior="fused", chosen_on="out_of_fold", min_docs=100)
    assert (choice.option, choice.chosen_on, choice.n) == ("encoder", "out_of_fold", 400)
    assert choice.scores["encoder"] > choice.scores["fused"]
    assert choice.margin == pytest.approx(choice.scores["encoder"] - choice.scores["fused"], abs=1e-3)
    assert 0 < choice.margin_se < choice.margin
    assert choice.describe().startswith("encoder, chosen out of fold on 400 documents: fused 0.")


def test_too_few_documents_take_the_prior_however_the_options_score(targets):
    good, poor = noisy(targets[:40], 0.05, 1), noisy(targets[:40], 0.3, 2)
    choice = choose({"fused": poor, "encoder": good}, targets[:40], "fused", "validation", min_docs=100)
    assert (choice.option, choice.chosen_on, choice.n) == ("fused", "prior", 40)
    assert choice.scores["encoder"] > choice.scores["fused"]  # still scored, for the record
    assert "fewer than method.min_choice_docs=100" in choice.reason
    assert choose({"fused": poor, "encoder": good}, targets[:40], "fused", "validation", min_docs=0).option == "encoder"


def test_a_lead_inside_its_standard_error_keeps_the_prior(targets):
    # two options equally noisy: one leads by chance (0.025 on 150 documents), less than its standard error
    equal, lucky = noisy(targets[:150], 0.2, 1), noisy(targets[:150], 0.2, 4)
    choice = choose({"fused": equal, "encoder": lucky}, targets[:150], "fused", "out_of_fold", min_docs=100)
    assert choice.scores["encoder"] > choice.scores["fused"] and choice.margin < choice.margin_se
    assert (choice.option, choice.chosen_on) == ("fused", "prior") and "within its standard error" in choice.reason
    # the prior ahead: it stays, chosen on the documents, its lead over the runner-up recorded
    kept = choose({"fused": lucky, "encoder": equal}, targets[:150], "fused", "out_of_fold", min_docs=100)
    assert (kept.option, kept.chosen_on) == ("fused", "out_of_fold") and kept.margin > 0


def test_the_standard_error_shrinks_with_more_documents(targets):
    a, b = noisy(targets, 0.1, 1), noisy(targets, 0.2, 2)
    assert bootstrap_se(a[:100], b[:100], targets[:100]) > bootstrap_se(a, b, targets)
    assert bootstrap_se(a, a, targets) == 0


def test_thresholds_choice_scores_tuned_and_fixed_decisions(targets):
    fixed_is_better = {True: noisy(targets, 0.3, 1), False: noisy(targets, 0.02, 2)}
    choice = thresholds_choice(lambda tuned: fixed_is_better[tuned], targets, "out_of_fold", 100)
    assert choice.option == "fixed" and choice.prior == "tuned" and set(choice.scores) == {"tuned", "fixed"}
    assert thresholds_choice(lambda tuned: fixed_is_better[tuned], targets[:1], "validation", 100).chosen_on == "prior"
