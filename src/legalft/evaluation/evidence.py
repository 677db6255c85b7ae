"""Evidence for a predicted statute from any method: the sentences of the facts that a sentence scorer, trained on
the experts' spans of the training documents, calls evidence for that statute.

Chosen by cross-validation on the training documents (``bench/evidence_selection.py``, figures in bench/README.md):
- a scorer trained on the experts' sentences finds them better than a document classifier scoring single
  sentences (the classifier's own view of which sentence triggers a section), and both beat the first sentences;
- it reads word and character n-grams, each sentence beside its neighbours (the experts mark passages, so a
  sentence between two that read as evidence is likelier to be one);
- it gives every sentence its class-balanced logistic regression calls evidence (probability above one half), at
  least one: the experts mark from 1 to over 100 sentences for a section (median 2), and the scorer's own decision
  follows them better than a fixed count. The threshold is the classifier's decision boundary, not tuned.

It needs no pass of the run's model, so encoders, LLM classifiers and classical runs give evidence alike. Saved
as numbers in the run folder's ``evidence.json`` (vocabularies, idf and weights; nothing executable) and rebuilt
from them to rescore. Files of earlier formats (1: a fixed number of sentences a section; 2: word n-grams, each
sentence alone) are read as they were written, so an earlier run's evidence does not change when it is scored
again."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from legalft.data.example import Example
from legalft.data.sentences import Sentence, split_sentences
from legalft.evaluation.grounding import sentences_of_quotes

FORMAT = 3  # 1: a fixed number of sentences a section (``sentences_per_section``); 2: word n-grams alone
NGRAMS = (1, 2)
CHAR_NGRAMS = (2, 5)  # within word boundaries
# The evidence of a document is looked for in its first characters, as many as method=classical reads of it
# (method.max_chars' default; an encoder reads fewer, max_chunks windows): a 20 MB document is given evidence in
# seconds (bench/huge_document.py), and no case of PROSLEX or FIRE 2026 (at most 33,250 characters) is cut.
EVIDENCE_CHARS = 200_000
C = 0.3  # the logistic regressions' inverse regularisation (format 2: 1.0), chosen out of fold on FIRE's cases


def vectorizer(vocabulary: dict[str, int] | None = None, analyzer: str = "word"):
    from sklearn.feature_extraction.text import TfidfVectorizer

    ngrams = NGRAMS if analyzer == "word" else CHAR_NGRAMS
    return TfidfVectorizer(analyzer=analyzer, ngram_range=ngrams, sublinear_tf=True, min_df=1 if vocabulary else 2,
                           vocabulary=vocabulary)


def with_neighbours(features):
    """Each row (a sentence of one document, in order) beside the mean of the rows before and after it."""
    import scipy.sparse as sp

    features = sp.csr_matrix(features)
    empty = sp.csr_matrix((1, features.shape[1]))
    before = sp.vstack([empty, features[:-1]]) if features.shape[0] > 1 else empty
    after = sp.vstack([features[1:], empty]) if features.shape[0] > 1 else empty
    return sp.hstack([features, 0.5 * (before + after)]).tocsr()


def called_evidence(sentences: Sequence[Sentence], logits: np.ndarray, count: int | None = None) -> list[str]:
    """The sentences whose logit for a section is above 0 (probability above one half), at least the best one, in
    document order; ``count``: exactly that many of the best (a first-format file's rule). The one rule of the span
    scorer and of a model naming its own evidence (``legalft.models.model_evidence``)."""
    order = np.argsort(-logits, kind="stable")[: count or max(1, int((logits > 0).sum()))]
    return [sentences[i].text for i in sorted(order)]


@dataclass
class EvidenceSelector:
    vectorizers: list  # word n-grams; format 3 adds character n-grams
    weights: dict[str, tuple[np.ndarray, float]]  # section -> (weight per feature, intercept)
    fixed_count: int | None = None  # a first-format file's sentences per section; None: those called evidence
    format: int = FORMAT

    def features(self, sentences: Sequence[str]):
        """One document's sentences as the scorer reads them (format 3: word and character n-grams, each sentence
        beside its neighbours; earlier formats: word n-grams)."""
        import scipy.sparse as sp

        features = sp.hstack([v.transform(sentences) for v in self.vectorizers]).tocsr()
        return with_neighbours(features) if self.format >= 3 else features

    @classmethod
    def fit(cls, examples: Sequence[Example], sections: Sequence[str], version: int = FORMAT) -> EvidenceSelector | None:
        """One logistic regression per section over the sentences of its training documents, positive where an
        expert's span for it covers the sentence; None when no training document has spans. ``version`` 2: the
        scorer of earlier releases (word n-grams, each sentence alone), for comparisons."""
        import scipy.sparse as sp
        from sklearn.linear_model import LogisticRegression

        explained = [e for e in examples if e.explanations]
        if not explained:
            return None
        sentences = {e.id: split_sentences(e.text) for e in explained}
        covered = {(e.id, label): sentences_of_quotes(spans, e.text, sentences[e.id])
                   for e in explained for label, spans in e.explanations.items()}
        texts = [s.text for e in explained for s in sentences[e.id]]
        if version not in (2, FORMAT):
            raise ValueError(f"version={version}: 2 or {FORMAT}")
        selector = cls([vectorizer().fit(texts)] + ([vectorizer(analyzer="char_wb").fit(texts)] if version >= 3 else []),
                       {}, format=version)
        features = {e.id: selector.features([s.text for s in sentences[e.id]]) for e in explained if sentences[e.id]}
        for label in sections:
            docs = [e for e in explained if label in e.labels and e.id in features]
            targets = [i in covered.get((e.id, label), ()) for e in docs for i in range(len(sentences[e.id]))]
            if 0 < sum(targets) < len(targets):
                model = LogisticRegression(C=C if version >= 3 else 1.0, max_iter=1000, class_weight="balanced").fit(
                    sp.vstack([features[e.id] for e in docs]), targets)
                selector.weights[label] = (model.coef_[0], float(model.intercept_[0]))
        return selector

    def select(self, text: str, sections: Sequence[str]) -> dict[str, list[str]]:
        """For each of ``sections`` the scorer knows, the sentences of ``text`` (of its first ``EVIDENCE_CHARS``
        characters) it calls evidence (at least its best one), in document order."""
        known = [s for s in sections if s in self.weights]
        sentences = split_sentences(text[:EVIDENCE_CHARS])
        if not known or not sentences:
            return {}
        features = self.features([s.text for s in sentences])
        return {section: called_evidence(sentences, features @ self.weights[section][0] + self.weights[section][1],
                                         self.fixed_count)
                for section in known}

    def to_json(self) -> str:
        def saved(vec) -> dict:
            return {"analyzer": vec.analyzer, "ngram_range": list(vec.ngram_range),
                    "vocabulary": {term: int(i) for term, i in vec.vocabulary_.items()},
                    "idf": [round(float(v), 6) for v in vec.idf_]}

        return json.dumps({
            "format": 1 if self.fixed_count is not None else self.format,
            **({"sentences_per_section": self.fixed_count} if self.fixed_count is not None else {}),
            **({"vectorizers": [saved(v) for v in self.vectorizers]} if self.format >= 3 else
               {"ngram_range": list(NGRAMS), "vocabulary": saved(self.vectorizers[0])["vocabulary"],
                "idf": saved(self.vectorizers[0])["idf"]}),
            "sections": {label: {"weights": [round(float(v), 6) for v in w], "intercept": round(b, 6)}
                         for label, (w, b) in self.weights.items()},
        })

    @classmethod
    def from_json(cls, text: str, where: str) -> EvidenceSelector:
        from legalft.foundation.errors import UserError

        try:
            saved = json.loads(text)
            version = saved.get("format")
            if version not in (1, 2, FORMAT):
                raise ValueError(f"format {version!r}")
            parts = saved["vectorizers"] if version >= 3 else [{**saved, "analyzer": "word"}]
            if version >= 3 and [p["analyzer"] for p in parts] != ["word", "char_wb"]:
                raise ValueError("its vectorizers are not word and character n-grams")
            vectorizers = []
            for part in parts:
                vec = vectorizer(part["vocabulary"], part["analyzer"])
                vec.idf_ = np.asarray(part["idf"], dtype=float)
                if vec.idf_.shape != (len(part["vocabulary"]),):
                    raise ValueError("its sizes do not match")
                vectorizers.append(vec)
            size = sum(len(part["vocabulary"]) for part in parts) * (2 if version >= 3 else 1)
            weights = {label: (np.asarray(node["weights"], dtype=float), float(node["intercept"]))
                       for label, node in saved["sections"].items()}
            arrays = [v.idf_ for v in vectorizers] + [w for w, _ in weights.values()]
            if any(w.shape != (size,) for w, _ in weights.values()):
                raise ValueError("its sizes do not match")
            if not all(np.isfinite(a).all() for a in arrays) or not all(np.isfinite(b) for _, b in weights.values()):
                raise ValueError("it holds numbers that are not finite")
            count = saved["sentences_per_section"] if version == 1 else None
            if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
                raise ValueError(f"sentences_per_section={count!r} is not a whole number of 1 or more")
            return cls(vectorizers, weights, count, version)
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
