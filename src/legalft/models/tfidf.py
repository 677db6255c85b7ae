"""TF-IDF features (word and character n-grams) and a linear classifier (scikit-learn): what
``method=classical`` fits per task, and the classical side of an encoder's late fusion
(``legalft.kit.fusion``). Plain scikit-learn; nothing here knows tasks or run folders."""

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


# What a fitted TfidfClassifier is, as plain data (``legalft.export``): the settings and both vocabularies as JSON,
# the idf weights and the linear layer as safetensors. Read back, it scores as the fitted scikit-learn pipeline does
# (tests/models/test_tfidf_files.py); nothing is unpickled.
FILES = ("tfidf.json", "tfidf.safetensors")
FORMAT = 1


def save(classifier: TfidfClassifier, folder, multi_label: bool) -> None:
    """``classifier`` (fitted) as ``tfidf.json`` and ``tfidf.safetensors`` in ``folder``."""
    import json
    from pathlib import Path

    from safetensors.numpy import save_file

    features, linear = classifier.model.named_steps["features"], classifier.model.named_steps["classifier"]
    words, chars = (dict(features.transformer_list)[part] for part in ("words", "chars"))
    coef, intercept = linear_layer(linear, classifier.classifier, multi_label)
    record = {"format": FORMAT, "classifier": classifier.classifier, "multi_label": multi_label,
              "word_ngrams": list(classifier.word_ngrams), "char_ngrams": list(classifier.char_ngrams),
              "max_chars": classifier.max_chars, "classes": [int(c) for c in np.ravel(classifier.classes_)]
              if not multi_label else None,
              "words": words.get_feature_names_out().tolist(), "chars": chars.get_feature_names_out().tolist()}
    folder = Path(folder)
    (folder / FILES[0]).write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    arrays = {"words_idf": words.idf_, "chars_idf": chars.idf_, "coef": coef, "intercept": intercept}
    # safetensors writes an array's buffer as it lies: scikit-learn's weights are often column-major
    save_file({name: np.ascontiguousarray(a, dtype=np.float64) for name, a in arrays.items()}, str(folder / FILES[1]))


def linear_layer(linear, classifier: str, multi_label: bool) -> tuple[np.ndarray, np.ndarray]:
    """(weights [outputs, features], biases) of the fitted linear step. A one-vs-rest label that training saw
    always on or always off is a constant in scikit-learn: a zero row whose bias gives that constant."""
    if not multi_label:
        return np.asarray(linear.coef_, dtype=np.float64), np.asarray(linear.intercept_, dtype=np.float64).ravel()
    rows, biases = [], []
    width = next((e.coef_.shape[1] for e in linear.estimators_ if hasattr(e, "coef_")), None)
    for estimator in linear.estimators_:
        if hasattr(estimator, "coef_"):
            rows.append(np.asarray(estimator.coef_, dtype=np.float64).ravel())
            biases.append(float(np.ravel(estimator.intercept_)[0]))
        else:  # sklearn's _ConstantPredictor: probability y_ (logreg), or margin y_ (svm, squashed later)
            constant = float(np.ravel(estimator.y_)[0])
            rows.append(np.zeros(width or 0))
            biases.append((np.inf if constant else -np.inf) if classifier == "logreg" else constant)
    return np.stack(rows), np.asarray(biases)


class SavedTfidf:
    """A TfidfClassifier read from its files: the same ``predict_proba`` and ``classes_``."""

    def __init__(self, folder) -> None:
        import json
        from pathlib import Path

        from safetensors.numpy import load_file
        from sklearn.feature_extraction.text import TfidfVectorizer

        from legalft.foundation.errors import UserError

        folder = Path(folder)
        try:
            record = json.loads((folder / FILES[0]).read_text(encoding="utf-8"))
            arrays = load_file(str(folder / FILES[1]))
            if record.get("format") != FORMAT:
                raise ValueError(f"format {record.get('format')!r}")
            self.words = TfidfVectorizer(ngram_range=tuple(record["word_ngrams"]), sublinear_tf=True,
                                         vocabulary=record["words"])
            self.chars = TfidfVectorizer(analyzer="char_wb", ngram_range=tuple(record["char_ngrams"]),
                                         sublinear_tf=True, vocabulary=record["chars"])
            self.words.idf_, self.chars.idf_ = arrays["words_idf"], arrays["chars_idf"]
            self.coef, self.intercept = arrays["coef"], arrays["intercept"]
            self.classifier, self.multi_label = record["classifier"], bool(record["multi_label"])
            self.max_chars, self.classes_ = record["max_chars"], np.asarray(record["classes"] or [])
            if self.coef.shape[1] != len(record["words"]) + len(record["chars"]):
                raise ValueError("the weights do not match the vocabularies")
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise UserError(f"{folder}: not a TF-IDF classifier legalft.export wrote ({FILES[0]}, {FILES[1]}): "
                            f"{err}. Export the run again.") from None

    def predict_proba(self, texts: list[str]) -> np.ndarray:
        import scipy.sparse as sparse

        texts = [text[:self.max_chars] for text in texts]
        features = sparse.hstack([self.words.transform(texts), self.chars.transform(texts)]).tocsr()
        with np.errstate(over="ignore"):  # a constant label's infinite bias gives exactly 0 or 1
            margins = np.asarray(features @ self.coef.T) + self.intercept
            if self.multi_label or self.classifier == "svm":
                raw = 1 / (1 + np.exp(-margins))
                two_classes = not self.multi_label and raw.shape[1] == 1
                return np.concatenate([1 - raw, raw], axis=1) if two_classes else raw
        if margins.shape[1] == 1:  # two classes: one logistic unit
            positive = 1 / (1 + np.exp(-margins))
            return np.concatenate([1 - positive, positive], axis=1)
        exp = np.exp(margins - margins.max(axis=1, keepdims=True))
        return exp / exp.sum(axis=1, keepdims=True)
