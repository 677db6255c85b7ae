"""Late fusion of the encoder with method=classical: standardisation, the cross-validation protocol,
when it applies, and the record a run keeps."""

from __future__ import annotations

import numpy as np
import pytest

from legalft.data.example import Example, Task, TaskSpec
from legalft.foundation.errors import UserError
from legalft.kit.fusion import Standardisation, fused_per_fold, fusion_applies, logits

rng = np.random.default_rng(0)
ENCODER = rng.uniform(0.01, 0.99, size=(40, 3))
CLASSICAL = rng.uniform(0.2, 0.6, size=(40, 3))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_a_side_on_another_scale_gets_the_same_say():
    """Standardised logits: stretching or shifting one side's logits changes nothing, so the side whose
    probabilities are more spread out does not decide alone (what averaging raw probabilities does)."""
    fused = Standardisation.fit(ENCODER, CLASSICAL).fuse(ENCODER, CLASSICAL)
    stretched = sigmoid(3 * logits(CLASSICAL) + 1)
    assert np.allclose(Standardisation.fit(ENCODER, stretched).fuse(ENCODER, stretched), fused)
    # and it is the mean of the two sides' z-scores, label by label
    z = [(logits(s) - logits(s).mean(0)) / logits(s).std(0) for s in (ENCODER, CLASSICAL)]
    assert np.allclose(fused, sigmoid((z[0] + z[1]) / 2))


def test_a_label_scored_alike_everywhere_does_not_divide_by_zero():
    flat = CLASSICAL.copy()
    flat[:, 1] = 0.3
    fused = Standardisation.fit(ENCODER, flat).fuse(ENCODER, flat)
    assert np.isfinite(fused).all()
    assert np.argsort(fused[:, 1]).tolist() == np.argsort(ENCODER[:, 1]).tolist()  # the encoder alone orders it


def test_a_fold_is_standardised_on_the_documents_it_fits_on_alone():
    fit, held = list(range(30)), list(range(30, 40))
    seen = fused_per_fold(ENCODER, CLASSICAL)
    changed = ENCODER.copy()
    changed[held] = 0.999  # whatever the held-out documents score...
    before, after = seen(fit), fused_per_fold(changed, CLASSICAL)(fit)
    assert np.allclose(before[fit], after[fit])  # ...the fitted documents' fused scores do not move
    assert not np.allclose(before[held], after[held])


def test_cross_validation_takes_a_fold_view_of_the_scores():
    from legalft.evaluation.cross_validation import cross_validated

    spec = TaskSpec(name="t", labels=("a", "b", "c"), multi_label=True)
    targets = rng.random((40, 3)) < 0.4
    pool = [Example(id=str(i), text=f"doc {i}", labels=tuple(l for l, on in zip("abc", row) if on))
            for i, row in enumerate(targets)]
    folds = [(list(range(10, 40)), list(range(10))), (list(range(10)) + list(range(20, 40)), list(range(10, 20)))]
    plain = cross_validated(pool, ENCODER, folds, spec)
    same = cross_validated(pool, lambda fit: ENCODER, folds, spec)
    assert np.array_equal(plain[0], same[0]) and plain[1] == same[1]
    asked = []
    cross_validated(pool, lambda fit: asked.append(list(fit)) or ENCODER, folds, spec)
    assert asked == [folds[0][0], folds[1][0], list(range(40))]  # each fold's fit indices, then every document


def task(multi_label=True, val=True) -> Task:
    spec = TaskSpec(name="t", labels=("a", "b"), multi_label=multi_label)
    examples = [Example(id="1", text="x", labels=("a",))]
    return Task(spec=spec, train=examples, val=examples if val else [], test=None)


def test_auto_fuses_multi_label_tasks_with_held_out_scores():
    assert fusion_applies("auto", task(), cv_folds=None)
    assert fusion_applies("auto", task(val=False), cv_folds=5)
    assert not fusion_applies("auto", task(val=False), cv_folds=None)  # nothing held out to standardise on
    assert not fusion_applies("auto", task(multi_label=False), cv_folds=5)
    assert not fusion_applies(False, task(), cv_folds=5)


def test_asking_for_fusion_where_it_cannot_apply_says_why():
    with pytest.raises(UserError, match="fuse_classical=true: task t is single-label"):
        fusion_applies(True, task(multi_label=False), cv_folds=None)
    from legalft.methods.encoder import EncoderMethod

    check, what = EncoderMethod.settings["fuse_classical"]  # checked before anything loads
    assert what == "one of auto, true, false" and all(check(v) for v in ("auto", True, False))
    assert not any(check(v) for v in ("yes", 0, 1))  # Hydra reads fuse_classical=0 as an int, which equals False


def test_a_damaged_record_is_refused_by_name(tmp_path):
    record = Standardisation.fit(ENCODER, CLASSICAL).to_json()
    labels = ("a", "b", "c")
    assert np.allclose(Standardisation.from_json(record, labels, "f").fuse(ENCODER, CLASSICAL),
                       Standardisation.fit(ENCODER, CLASSICAL).fuse(ENCODER, CLASSICAL))
    with pytest.raises(UserError, match="fusion.json: not a fusion record of this run's 2 labels"):
        Standardisation.from_json(record, ("a", "b"), "fusion.json")
    with pytest.raises(UserError, match="fusion.json: not a fusion record"):
        Standardisation.from_json({"mean": record["mean"]}, labels, "fusion.json")


def test_the_run_names_the_option_that_predicted():
    from legalft.kit.fusion import model_label, predicted_by

    assert [model_label("minilm", option) for option in ("fused", "encoder", "classical")] == [
        "minilm+tfidf_logreg", "minilm", "tfidf_logreg"]
    assert predicted_by("minilm", "classical").startswith("tfidf_logreg alone") and "minilm did not predict" in \
        predicted_by("minilm", "classical")


def test_on_validation_a_side_that_alone_knows_the_labels_beats_a_fusion_with_noise():
    from legalft.kit.fusion import validation_choice

    rng = np.random.default_rng(0)
    spec = TaskSpec("t", ("a", "b"), multi_label=True)
    val = [Example(id=str(i), text="x", labels=(("a",), ("b",), ("a", "b"))[i % 3]) for i in range(60)]
    truth = np.array([[label in e.labels for label in spec.labels] for e in val], dtype=float)
    knows = np.clip(truth * 0.9 + 0.05, 0.01, 0.99)  # the classical side: right on every document
    noise = rng.uniform(0.01, 0.99, size=truth.shape)  # the encoder: noise
    task = Task(spec, train=[], test=None, val=val)
    choice = validation_choice(task, noise, knows, Standardisation.fit(noise, knows), min_docs=50, seed=0)
    assert (choice.option, choice.chosen_on, choice.n) == ("classical", "validation", 60)
    assert choice.scores["classical"] == 1.0 and choice.scores["fused"] < 1.0 and choice.margin > choice.margin_se
    # on fewer documents than min_docs the same evidence does not decide: the prior, the fusion
    assert validation_choice(task, noise, knows, Standardisation.fit(noise, knows), 100, 0).option == "fused"


def test_fusing_any_number_of_sides_is_the_runs_standardisation_for_two():
    """The benchmarks' fusion of several sides (legalft.kit.fusion.fused_sides) is the run's for two sides, with the
    same floor for a label scored alike everywhere."""
    from legalft.kit.fusion import Standardisation, fused_sides

    rng = np.random.default_rng(0)
    encoder, classical = rng.uniform(0.01, 0.99, (20, 3)), rng.uniform(0.01, 0.99, (20, 3))
    classical[:, 2] = 0.4  # one label alike on every document: spread 1, not a division by zero
    everything = range(20)
    assert np.allclose(fused_sides([encoder, classical], everything),
                       Standardisation.fit(encoder, classical).fuse(encoder, classical))
    three = fused_sides([encoder, classical, rng.uniform(0.01, 0.99, (20, 3))], range(10))
    assert three.shape == (20, 3) and ((0 < three) & (three < 1)).all()
