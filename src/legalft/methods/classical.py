"""``method=classical``: TF-IDF features (word and character n-grams) and a linear classifier
(scikit-learn, ``legalft.models.tfidf``), per task. The floor every fine-tuned or prompted result should
stand beside: seconds on a CPU, the same run folder and result files, its own column in reports.

Multi-label tasks get one classifier per label (one-vs-rest) with per-label thresholds tuned on held-out
scores: of the validation split where it holds ``method.min_choice_docs`` documents, else out of fold over the
training and validation documents, on which the final model is then fitted. ``method.C`` given as a list is
chosen on the same held-out scores (the first value is the prior), and the final model is fitted with it on
every document it may learn from (``protocol.refit``). Nothing is pickled: rescoring fits the model again from
the run's own training data (deterministic, and a run folder never holds code to load).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from legalft.data.example import Example, Task, TaskSpec
from legalft.foundation.checks import number, one_of, one_or_list, or_null, whole
from legalft.foundation.errors import UserError
from legalft.evaluation.choices import DEFAULT_MIN_DOCS
from legalft.kit.base import Exported
from legalft.kit.features import align, fitted_scorer
from legalft.kit.per_task import PerTaskMethod
from legalft.runs.context import RunContext
from legalft.models.tfidf import CLASSIFIERS, TfidfClassifier


class ClassicalMethod(PerTaskMethod):
    name = "classical"
    choice_name = "C"
    settings = {"C": (one_or_list(number(above=0)), "a positive number (the inverse regularisation strength), or a "
                                                     "list of them to choose among (the first is the prior)"),
                "classifier": (one_of(*CLASSIFIERS), f"one of {', '.join(CLASSIFIERS)}"),
                "min_choice_docs": (or_null(whole(0)), "null (the validation split, whatever its size) or a whole "
                                                       "number of documents, 0 or more")}

    def __init__(self, classifier: str = "logreg", C: float | list[float] = 1.0, word_ngrams=(1, 2), char_ngrams=(2, 5),
                 class_weight: str | None = "balanced", max_features: int | None = None,
                 max_chars: int | None = 200_000, min_choice_docs: int | None = DEFAULT_MIN_DOCS) -> None:
        if classifier not in CLASSIFIERS:
            raise UserError(f"method.classifier={classifier!r}: choose one of {', '.join(CLASSIFIERS)}.")
        self.classifier, self.min_choice_docs = classifier, min_choice_docs
        self.Cs = tuple(float(c) for c in C) if isinstance(C, Sequence) else (float(C),)  # a list: a choice
        self.model_settings = dict(classifier=classifier, word_ngrams=word_ngrams, char_ngrams=char_ngrams,
                                   class_weight=class_weight, max_features=max_features, max_chars=max_chars)

    def model_label(self, model_choice: str | None) -> str:
        return f"tfidf_{self.classifier}"  # the model config plays no part

    def run_fields(self) -> dict:
        return {"classifier": self.classifier}

    def options(self) -> dict[str, float]:
        return {f"{c:g}": c for c in self.Cs}

    def fit(self, task: Task, seed: int, option: float | None = None):
        return fitted_scorer(TfidfClassifier(C=self.Cs[0] if option is None else option, **self.model_settings), task,
                             seed=seed)

    def export(self, ctx: RunContext, folder: Path, part: str | None = None) -> Exported:
        """The final classifier, fitted again as rescoring does, as plain data (``legalft.models.tfidf``'s files:
        vocabularies, idf and weights; no pickle), which ``predict.py run=<the export>`` reads."""
        from legalft.models import tfidf

        chosen, model, thresholds, evidence = self.exportable(ctx, part)
        tfidf.save(model, folder, chosen.spec.multi_label)
        return Exported(chosen.spec, thresholds, "scikit-learn", "text-classification",
                        "# legalft.models.tfidf reads tfidf.json and tfidf.safetensors (no pickle):\n"
                        "from legalft.export.reading import classify_texts\n"
                        'classify_texts("<this folder>", ["The accused threatened ..."])', evidence)

    @classmethod
    def classify_export(cls, folder: Path, record: dict, task: TaskSpec, examples: list[Example]):
        """The export's TF-IDF classifier from its plain files (``legalft.models.tfidf``)."""
        from legalft.models.tfidf import SavedTfidf

        model = SavedTfidf(folder)
        return align(model.predict_proba([e.text for e in examples]), model, task), None
