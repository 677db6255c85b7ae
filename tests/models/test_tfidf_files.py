"""legalft.models.tfidf's files: a fitted TF-IDF classifier as vocabularies (JSON), idf and weights (safetensors),
read back without scikit-learn's pickles into a model that scores exactly as the fitted pipeline does."""

from __future__ import annotations

import numpy as np
import pytest

from legalft.models.tfidf import FILES, SavedTfidf, TfidfClassifier, save

TRAIN = ["the accused hit him with a stick", "the police came at night", "murder and grievous hurt",
         "hurt by stones thrown", "theft of a cow", "cheating and forgery of deeds"] * 3
TEST = ["a stick and a cow", "forgery at night", "nothing known here", "murder by stones"]
TARGETS = {
    # label 1 is on in every training document: scikit-learn keeps a constant for it, not a linear model
    "multi-label": (True, np.array([[i % 2, 1, (i // 2) % 2] for i in range(len(TRAIN))])),
    "two classes": (False, np.array([i % 2 for i in range(len(TRAIN))])),
    "three classes": (False, np.array([i % 3 for i in range(len(TRAIN))])),
}


@pytest.mark.filterwarnings("ignore:Label 1 is present in all training examples")
@pytest.mark.parametrize("classifier", ["logreg", "svm"])
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_read_back_it_scores_as_the_fitted_pipeline(tmp_path, classifier, target):
    multi_label, targets = TARGETS[target]
    fitted = TfidfClassifier(classifier=classifier, max_chars=40).fit(TRAIN, targets, multi_label, seed=0)
    save(fitted, tmp_path, multi_label)
    saved = SavedTfidf(tmp_path)
    np.testing.assert_array_equal(saved.predict_proba(TEST), fitted.predict_proba(TEST))
    if not multi_label:  # the classes training saw, which order a single-label model's columns
        np.testing.assert_array_equal(saved.classes_, fitted.classes_)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FILES)  # nothing pickled beside them


def test_a_damaged_file_is_named_with_what_to_do(tmp_path):
    from legalft.foundation.errors import UserError

    fitted = TfidfClassifier().fit(TRAIN, TARGETS["two classes"][1], False, seed=0)
    save(fitted, tmp_path, False)
    (tmp_path / "tfidf.json").write_text('{"format": 1, "words": []}')
    with pytest.raises(UserError, match=r"tfidf.json, tfidf.safetensors\): .*Export the run again"):
        SavedTfidf(tmp_path)
