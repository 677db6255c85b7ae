"""A per-task method's choices (classical's C) and its final model: chosen on held-out documents like its
thresholds, then refit on every document it may learn from (protocol.refit)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from legalft.data.example import Example, Task, TaskSpec
from legalft.data.protocol import Protocol
from legalft.methods.classical import ClassicalMethod

WORDS = {"theft": "stole the wallet", "murder": "killed the victim", "fraud": "forged the cheque"}
SPEC = TaskSpec(name="crimes", labels=tuple(sorted(WORDS)), multi_label=True)


def noisy(n: int, seed: int, start: int = 0) -> list[Example]:
    """Documents whose crime words are often missing or swapped for another's, so regularisation matters."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(start, start + n):
        labels = tuple(sorted({list(WORDS)[i % 3]} | ({list(WORDS)[(i + 1) % 3]} if i % 4 == 0 else set())))
        words = [WORDS[label] if rng.random() < 0.7 else WORDS[list(WORDS)[rng.integers(3)]] for label in labels]
        filler = " ".join(f"w{rng.integers(40)}" for _ in range(8))
        out.append(Example(id=str(i), text=f"the accused {' and '.join(words)} {filler}", labels=labels))
    return out


def test_c_is_chosen_out_of_fold_on_enough_documents_and_the_final_model_fits_every_one():
    from legalft.evaluation.cross_validation import held_out_decisions
    from legalft.evaluation.choices import macro_f1
    from legalft.evaluation.predictions import targets_of

    task = Task(spec=SPEC, train=noisy(90, 0), val=noisy(10, 1, start=90), test=[])
    method = ClassicalMethod(C=[1.0, 0.01], min_choice_docs=100)
    final = method.fitted(task, seed=0)
    choice = final.choices["C"]
    pool = task.train + task.val
    folds = method.threshold_folds(pool, 0)
    targets = targets_of(pool, SPEC)
    for name, c in (("1", 1.0), ("0.01", 0.01)):  # each option scored on the decisions thresholds tuned elsewhere make
        scores = method.out_of_fold(task, pool, folds, 0, folder=None, option=c)
        assert choice.scores[name] == round(macro_f1(held_out_decisions(scores, folds, targets), targets), 4)
    assert choice.chosen_on in ("out_of_fold", "prior") and choice.n == 100 and choice.prior == "1"
    assert final.refit and final.fitted_on == 100
    too_few = ClassicalMethod(C=[1.0, 0.01], min_choice_docs=101).fitted(task, seed=0).choices["C"]
    assert too_few.option == "1" and too_few.chosen_on == "prior" and "fewer than method.min_choice_docs=101" in too_few.reason
    assert too_few.scores == {}  # no option was scored: only the prior's folds were fitted


def test_a_given_validation_split_is_chosen_on_and_learnt_from_only_where_refit_says():
    """The options and thresholds chosen on a validation split of min_choice_docs documents; the final model learns
    from it too where the protocol refits (a word only the validation documents use is learnt)."""
    val = [Example(id=f"v{i}", text=f"the accused embezzled the funds on day {i}", labels=("fraud",)) for i in range(6)]
    task = Task(spec=SPEC, train=noisy(60, 0), val=val, test=[])
    unseen = [Example(id="t", text="the accused embezzled the funds", labels=("fraud",))]
    method = ClassicalMethod(C=[1.0, 10.0], min_choice_docs=6)
    kept, refit = method.fitted(task, seed=0), method.fitted(task, seed=0, refit=True)
    assert kept.choices["C"].chosen_on in ("validation", "prior") and kept.choices["C"].n == 6
    assert kept.thresholds.tolist() == refit.thresholds.tolist() and not kept.refit and refit.refit
    assert (kept.fitted_on, refit.fitted_on) == (60, 66)
    fraud = SPEC.labels.index("fraud")
    assert refit.scorer(unseen)[0, fraud] > kept.scorer(unseen)[0, fraud] + 0.1


def test_the_protocol_refits_a_carved_validation_share_and_a_given_split_only_when_asked():
    task = Task(spec=SPEC, train=noisy(40, 0), val=[], test=[])
    carved = Protocol(val_fraction=0.25).apply(task, validation_from_train=True)
    given = replace(task, val=noisy(10, 1, start=40))
    assert carved.val_from_train and 8 <= len(carved.val) <= 12  # stratified: about a quarter
    assert Protocol().refits(carved) and not Protocol().refits(given)
    assert Protocol(refit=True).refits(given) and not Protocol(refit=False).refits(carved)
    assert not Protocol(refit=True).refits(task)  # no validation documents: nothing to refit on


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_protocol_refit_takes_auto_true_or_false(value):
    from omegaconf import OmegaConf

    from legalft.foundation.errors import UserError

    with pytest.raises(UserError, match="protocol.refit=.*: choose auto, true or false"):
        Protocol.from_config(OmegaConf.create({"refit": value}))


def test_a_saved_config_without_protocol_refit_is_read_as_the_model_chosen_on():
    from legalft.runs.migrations import in_current_layout

    saved = {"method": {"_target_": "legalft.methods.classical.ClassicalMethod"}, "protocol": {"cv_folds": None}}
    assert in_current_layout(saved)["protocol"]["refit"] is False
    older = {"method": {"_target_": "legalft.methods.classical.ClassicalMethod"}, "data": {"cv_folds": 3}}
    assert in_current_layout(older)["protocol"]["refit"] is False


def test_c_as_a_list_or_a_number_is_checked():
    from legalft.methods.classical import ClassicalMethod as Method

    check, _ = Method.settings["C"]
    assert check(1.0) and check([1, 10.0]) and not check([]) and not check([1, -1]) and not check(0)
