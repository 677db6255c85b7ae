"""Evidence for a predicted statute from any method: the sentences of the facts that a sentence scorer, trained on
the experts' spans of the training documents, calls evidence for that statute.

Chosen by cross-validation on PROSLEX's development data (``bench/evidence_selection.py``, figures in
bench/README.md):
- a scorer trained on the experts' sentences finds them better than a document classifier scoring single
  sentences (the classifier's own view of which sentence triggers a section), and both beat the first sentences;
- it gives every sentence its class-balanced logistic regression calls evidence (probability above one half),
  at least one. The experts mark from 1 to over 100 sentences for a section (median 2), and the
  scorer's own decision follows them: sentence F1 0.53 where a fixed two sentences a section (the training documents'
  median) scores 0.28. The threshold is the classifier's decision boundary, not tuned: an inner
  cross-validation over thresholds picks the same or -0.25 in logits, within 0.02 F1.

It needs no pass of the run's model, so encoders, LLM classifiers and classical runs give evidence alike. Saved
as numbers in the run folder's ``evidence.json`` (vocabulary, idf, weights; nothing executable) and rebuilt from
them to rescore. Files of the first format (a fixed number of sentences a section) are read as they were
written, so an earlier run's evidence does not change when it is scored again."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from legalft.data.example import Example
from legalft.data.sentences import Sentence, split_sentences
from legalft.evaluation.grounding import sentences_of_quotes

FORMAT = 2  # 1: a fixed number of sentences a section (``sentences_per_section``)
NGRAMS = (1, 2)


def vectorizer(vocabulary: dict[str, int] | None = None):
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(ngram_range=NGRAMS, sublinear_tf=True, min_df=1 if vocabulary else 2,
                           vocabulary=vocabulary)


def called_evidence(sentences: Sequence[Sentence], logits: np.ndarray, count: int | None = None) -> list[str]:
    """The sentences whose logit for a section is above 0 (probability above one half), at least the best one, in
    document order; ``count``: exactly that many of the best (a first-format file's rule). The one rule of the span
    scorer and of a model naming its own evidence (``legalft.models.model_evidence``)."""
    order = np.argsort(-logits, kind="stable")[: count or max(1, int((logits > 0).sum()))]
    return [sentences[i].text for i in sorted(order)]


@dataclass
class EvidenceSelector:
    vectorizer: object
    weights: dict[str, tuple[np.ndarray, float]]  # section -> (weight per term, intercept)
    fixed_count: int | None = None  # a first-format file's sentences per section; None: those called evidence

    @classmethod
    def fit(cls, examples: Sequence[Example], sections: Sequence[str]) -> EvidenceSelector | None:
        """One logistic regression per section over the sentences of its training documents, positive where an
        expert's span for it covers the sentence; None when no training document has spans."""
        from sklearn.linear_model import LogisticRegression

        explained = [e for e in examples if e.explanations]
        if not explained:
            return None
        sentences = {e.id: split_sentences(e.text) for e in explained}
        covered = {(e.id, label): sentences_of_quotes(spans, e.text, sentences[e.id])
                   for e in explained for label, spans in e.explanations.items()}
        vec = vectorizer().fit([s.text for e in explained for s in sentences[e.id]])
        weights = {}
        for label in sections:
            rows = [(s.text, i in covered.get((e.id, label), ())) for e in explained if label in e.labels
                    for i, s in enumerate(sentences[e.id])]
            if rows and 0 < sum(y for _, y in rows) < len(rows):
                model = LogisticRegression(max_iter=1000, class_weight="balanced").fit(
                    vec.transform([t for t, _ in rows]), [y for _, y in rows])
                weights[label] = (model.coef_[0], float(model.intercept_[0]))
        return cls(vec, weights)

    def select(self, text: str, sections: Sequence[str]) -> dict[str, list[str]]:
        """For each of ``sections`` the scorer knows, the sentences of ``text`` it calls evidence (at least its
        best one), in document order."""
        known = [s for s in sections if s in self.weights]
        sentences = split_sentences(text)
        if not known or not sentences:
            return {}
        features = self.vectorizer.transform([s.text for s in sentences])
        return {section: called_evidence(sentences, features @ self.weights[section][0] + self.weights[section][1],
                                         self.fixed_count)
                for section in known}

    def to_json(self) -> str:
        vocabulary = {term: int(i) for term, i in self.vectorizer.vocabulary_.items()}
        return json.dumps({
            "format": FORMAT if self.fixed_count is None else 1, "ngram_range": list(NGRAMS),
            **({"sentences_per_section": self.fixed_count} if self.fixed_count is not None else {}),
            "vocabulary": vocabulary, "idf": [round(float(v), 6) for v in self.vectorizer.idf_],
            "sections": {label: {"weights": [round(float(v), 6) for v in w], "intercept": round(b, 6)}
                         for label, (w, b) in self.weights.items()},
        })

    @classmethod
    def from_json(cls, text: str, where: str) -> EvidenceSelector:
        from legalft.errors import UserError

        try:
            saved = json.loads(text)
            size = len(saved["vocabulary"])
            vec = vectorizer(saved["vocabulary"])
            vec.idf_ = np.asarray(saved["idf"], dtype=float)
            weights = {label: (np.asarray(node["weights"], dtype=float), float(node["intercept"]))
                       for label, node in saved["sections"].items()}
            arrays = [vec.idf_, *(w for w, _ in weights.values())]
            if saved.get("format") not in (1, FORMAT):
                raise ValueError(f"format {saved.get('format')!r}")
            if any(a.shape != (size,) for a in arrays):
                raise ValueError("its sizes do not match")
            if not all(np.isfinite(a).all() for a in arrays) or not all(np.isfinite(b) for _, b in weights.values()):
                raise ValueError("it holds numbers that are not finite")
            count = saved["sentences_per_section"] if saved["format"] == 1 else None
            if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
                raise ValueError(f"sentences_per_section={count!r} is not a whole number of 1 or more")
            return cls(vec, weights, count)
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise UserError(f"{where}: not an evidence scorer this release reads ({err}). Restore the run's own "
                            "file, or delete it to score the run without evidence.") from None


def add_evidence(records: list[dict], examples: Sequence[Example], selector: EvidenceSelector | None,
                 settings=None) -> dict:
    """Each record (one per example, in order) gets ``evidence``: its predicted sections' best sentences; the
    returned scores are the evidence's grounding and, on sections both predicted and gold with experts' spans,
    its explanation scores against those spans (``settings``: the ``explanations`` config group)."""
    from legalft.evaluation.explanations import bertscore_settings, explanation_scores
    from legalft.evaluation.grounding import grounding_scores, predicted_sections, sections_without_evidence

    if selector is None:
        return {}
    documents, pairs = [], []
    for record, example in zip(records, examples, strict=True):
        evidence = selector.select(example.text, predicted_sections(record))
        if evidence:
            record["evidence"] = evidence
        documents.append((example.text, evidence, example.explanations))
        pairs += [(" ".join(quotes), " ".join(example.explanations[section]))
                  for section, quotes in evidence.items() if example.explanations.get(section)]
    return {**grounding_scores(documents), "evidence_missing": sections_without_evidence(records),
            **explanation_scores([p for p, _ in pairs], [r for _, r in pairs], **bertscore_settings(settings))}


# Evidence-supervised training (``method.evidence_weight``): at most this many of a document's expert sentences a
# step, and as many of its other sentences as negatives, so a riot's hundred-sentence narrative costs what a
# short document's evidence does.
MAX_EXPERT_SENTENCES = 8


def expert_sentences(example: Example, labels: Sequence[str],
                     descriptions: dict[str, str]) -> list[tuple[str, tuple[str, ...]]]:
    """(sentence, the sections it is evidence for) to train a classifier on single sentences: the sentences an
    expert's span covers (at most ``MAX_EXPERT_SENTENCES``), as many of the document's other sentences (evidence
    for nothing), and the description of each of its sections (evidence for that section); drawn with the document's
    id as the seed, so every run and fold draws the same ones. [] for a document without spans."""
    import random

    if not example.explanations:
        return []
    sentences = split_sentences(example.text)
    sections_of: dict[int, list[str]] = {}
    for label in labels:
        if label in example.labels:
            for i in sentences_of_quotes(example.explanations.get(label, ()), example.text, sentences):
                sections_of.setdefault(i, []).append(label)
    draw = random.Random(example.id)
    covered = sorted(sections_of)
    chosen = sorted(draw.sample(covered, min(len(covered), MAX_EXPERT_SENTENCES)))
    others = [i for i in range(len(sentences)) if i not in sections_of]
    negatives = sorted(draw.sample(others, min(len(others), max(len(chosen), 1))))
    pairs = [(sentences[i].text, tuple(sections_of[i])) for i in chosen]
    pairs += [(sentences[i].text, ()) for i in negatives]
    pairs += [(descriptions[label], (label,)) for label in labels if label in example.labels and descriptions.get(label)]
    return pairs
