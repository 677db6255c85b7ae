"""TF-IDF features (word and character n-grams) and a linear classifier (scikit-learn): what
``method=classical`` fits per task, and the classical side of an encoder's late fusion
(``legalft.methods.fusion``). Plain scikit-learn; nothing here knows tasks or run folders."""

from __future__ import annotations

import numpy as np

CLASSIFIERS = ("logreg", "svm")


class TfidfClassifier:
    """Word and character n-gram TF-IDF, then logistic regression (probabilities) or a linear SVM (margins
    squashed to (0, 1), the boundary at 0.5); one-vs-rest for a multi-label target. A document is read up to
    its first ``max_chars`` characters: the vectorizers list every n-gram of a document before counting
    them, about 4 strings per character, so a 30 MB document read whole costs ~8 GB
    (bench/huge_document.py)."""

    def __init__(self, classifier: str = "logreg", C: float = 1.0, word_ngrams=(1, 2), char_ngrams=(2, 5),
                 class_weight: str | None = "balanced", max_features: int | None = None,
                 max_chars: int | None = 200_000) -> None:
        self.classifier, self.C, self.class_weight, self.max_features = classifier, C, class_weight, max_features
        self.word_ngrams, self.char_ngrams, self.max_chars = tuple(word_ngrams), tuple(char_ngrams), max_chars
        self.model = None

    def pipeline(self, multi_label: bool, seed: int):
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.multiclass import OneVsRestClassifier
        from sklearn.pipeline import FeatureUnion, Pipeline
        from sklearn.svm import LinearSVC

        features = FeatureUnion([
            ("words", TfidfVectorizer(ngram_range=self.word_ngrams, sublinear_tf=True, max_features=self.max_features)),
            ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=self.char_ngrams, sublinear_tf=True,
                                      max_features=self.max_features)),
        ])
        if self.classifier == "logreg":
            linear = LogisticRegression(C=self.C, class_weight=self.class_weight, max_iter=5000, random_state=seed)
        else:
            linear = LinearSVC(C=self.C, class_weight=self.class_weight, random_state=seed)
        return Pipeline([("features", features), ("classifier", OneVsRestClassifier(linear) if multi_label else linear)])

    def fit(self, texts: list[str], targets: np.ndarray, multi_label: bool, seed: int) -> TfidfClassifier:
        self.model = self.pipeline(multi_label, seed).fit(self.cut(texts), targets)
        return self

    @property
    def classes_(self):
        return self.model.classes_

    def cut(self, texts: list[str]) -> list[str]:
        return [text[:self.max_chars] for text in texts]

    def predict_proba(self, texts: list[str]) -> np.ndarray:
        """Scores in (0, 1): a column per label (multi-label) or per class seen in training; two classes of a
        single-label target as two columns."""
        texts = self.cut(texts)
        if self.classifier == "logreg":
            return np.asarray(self.model.predict_proba(texts))
        raw = 1 / (1 + np.exp(-np.asarray(self.model.decision_function(texts))))
        return np.stack([1 - raw, raw], axis=1) if raw.ndim == 1 else raw
