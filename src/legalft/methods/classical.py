"""``method=classical``: TF-IDF features (word and character n-grams) and a linear classifier
(scikit-learn), per task. The floor every fine-tuned or prompted result should stand beside:
seconds on a CPU, the same run folder and result files, its own column in reports.

Multi-label tasks get one classifier per label (one-vs-rest) with per-label thresholds tuned on
the validation split where there is one. Nothing is pickled: rescoring fits the model again from the
run's own training data (deterministic, and a run folder never holds code to load).
"""

from __future__ import annotations

import numpy as np

from legalft.data.example import Task
from legalft.errors import UserError
from legalft.methods.per_task import PerTaskMethod, align, features_of

CLASSIFIERS = ("logreg", "svm")


class ClassicalMethod(PerTaskMethod):
    name = "classical"

    def __init__(self, classifier: str = "logreg", C: float = 1.0, word_ngrams=(1, 2), char_ngrams=(2, 5),
                 class_weight: str | None = "balanced", max_features: int | None = None,
                 max_chars: int | None = 200_000) -> None:
        if classifier not in CLASSIFIERS:
            raise UserError(f"method.classifier={classifier!r}: choose one of {', '.join(CLASSIFIERS)}.")
        self.classifier, self.C, self.class_weight, self.max_features = classifier, C, class_weight, max_features
        self.word_ngrams, self.char_ngrams = tuple(word_ngrams), tuple(char_ngrams)
        self.max_chars = max_chars

    def texts(self, task: Task, examples) -> list[str]:
        """What the vectorizers read: each example's first ``max_chars`` characters. The vectorizers list
        every n-gram of a document before counting them, about 4 strings per character: a 30 MB document
        read whole costs ~8 GB (bench/huge_document.py)."""
        return [text[:self.max_chars] for text in features_of(task, examples)]

    def model_label(self, model_choice: str | None) -> str:
        return f"tfidf_{self.classifier}"  # the model config plays no part

    def run_fields(self) -> dict:
        return {"classifier": self.classifier}

    def pipeline(self, multi_label: bool, seed: int):
        from sklearn.linear_model import LogisticRegression
        from sklearn.multiclass import OneVsRestClassifier
        from sklearn.pipeline import FeatureUnion, Pipeline
        from sklearn.svm import LinearSVC
        from sklearn.feature_extraction.text import TfidfVectorizer

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

    def fit(self, task: Task, seed: int):
        from legalft.evaluation.predictions import targets_of

        spec = task.spec
        model = self.pipeline(spec.multi_label, seed).fit(self.texts(task, task.train), targets_of(task.train, spec))

        def scores(examples):
            texts = self.texts(task, examples)
            raw = model.predict_proba(texts) if self.classifier == "logreg" else model.decision_function(texts)
            if self.classifier == "svm":  # margins to (0, 1), the boundary at 0.5
                raw = 1 / (1 + np.exp(-np.asarray(raw)))
            if not spec.multi_label and raw.ndim == 1:  # two classes: the second class's score
                raw = np.stack([1 - raw, raw], axis=1)
            return align(np.asarray(raw), model, spec)

        return scores
