"""Recipes a 2-core CPU can cross-validate on PROSLEX's development data, against method=classical: what the
experts' evidence spans, the section descriptions and a frozen encoder add to TF-IDF.

    LEGALFT_PROSLEX_DIR=../shared/proslex .venv/bin/python bench/proslex_recipes.py [--seeds 0 1 2]

The 159 documents of PROSLEX's validation split (the only labelled split in the development data), 5 folds per
seed stratified by label sets (``legalft.evaluation.cross_validation``, the folds every method uses), each fold
decided by thresholds tuned on the other folds' out-of-fold scores. Recipes:

- ``classical``: ``method=classical`` at its defaults (``legalft.models.tfidf``), the floor; ``classical C=10``;
- ``spans, sentences max-pooled``: a sentence classifier per section (TF-IDF, logistic regression) trained on the
  training folds' sentences, positive where an expert's span for the section covers the sentence; a document's
  score for a section is its best sentence's (multiple-instance pooling; the experts' spans supervise it);
- ``frozen MiniLM``: the shipped all-MiniLM-L6-v2's mean-pooled sentence embeddings averaged over the document,
  a logistic regression per section (C=10);
- ``section descriptions``: each sentence's cosine similarity to each section's description (MiniLM), the best
  and the mean per section, a logistic regression per section;
- ``fine-tuned MiniLM`` and ``fine-tuned MiniLM, evidence_weight=1`` (``--encoder-epochs N``, about 6.5 and
  10 minutes a fold on 2 CPU cores at 4 epochs): ``method=encoder`` at the quick start's settings, without and with
  training on the experts' sentences and the section descriptions (``method.evidence_weight``);
- ``A + B``: the late fusion the encoder uses (each side's logits standardised per label on the documents a
  fold fits on, averaged).

Prints each recipe's macro-F1 per seed and over all fold-seed pairs, its difference from classical with a
paired t-test over those pairs, and the F1 of IPC 201 and IPC 506, the weakest sections. About 5 minutes.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")


class Data:
    def __init__(self):
        import yaml

        from common import proslex_development_documents as documents
        from legalft.data.example import TaskSpec
        from legalft.data.sentences import split_sentences
        from legalft.evaluation.grounding import sentences_of_quotes
        from legalft.evaluation.predictions import targets_of

        self.examples = documents()
        label_map = yaml.safe_load((ROOT / "conf" / "data" / "proslex.yaml").read_text())["label_map"]
        self.descriptions = {entry["label"]: entry["description"] for entry in label_map.values()}
        self.labels = tuple(sorted({label for e in self.examples for label in e.labels}))
        self.spec = TaskSpec("proslex", self.labels, multi_label=True)
        self.targets = targets_of(self.examples, self.spec)
        self.sentences = {e.id: split_sentences(e.text) for e in self.examples}
        self.covered = {(e.id, label): sentences_of_quotes(spans, e.text, self.sentences[e.id])
                        for e in self.examples for label, spans in e.explanations.items()}
        self.embeddings, self.description_embeddings = embed(self)


def embed(data: Data):
    """Every sentence's and description's MiniLM embedding (mean-pooled, normalised), once."""
    import torch

    from legalft.models.pretrained import load_tokenizer, offline_minilm_path
    from transformers import AutoModel

    path = offline_minilm_path()
    tokenizer, model = load_tokenizer(path), AutoModel.from_pretrained(path).eval()

    def vectors(texts: list[str]) -> np.ndarray:
        out = []
        for start in range(0, len(texts), 64):
            batch = tokenizer(texts[start:start + 64], padding=True, truncation=True, max_length=128,
                              return_tensors="pt")
            with torch.no_grad():
                hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).float()
            out.append(torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1).numpy())
        return np.concatenate(out)

    sentences = {e.id: vectors([s.text for s in data.sentences[e.id]]) for e in data.examples}
    return sentences, vectors([data.descriptions[label] for label in data.labels])


def per_label(features_fit, features_held, targets, C: float) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    return np.stack([LogisticRegression(C=C, class_weight="balanced", max_iter=5000)
                     .fit(features_fit, targets[:, j]).predict_proba(features_held)[:, 1]
                     for j in range(targets.shape[1])], axis=1)


def recipes(data: Data):
    """name -> function (fit indices, held-out indices, seed) -> held-out scores."""
    from legalft.models.tfidf import TfidfClassifier

    texts = [e.text for e in data.examples]

    def classical(C):
        return lambda fit, held, seed: TfidfClassifier(C=C).fit([texts[i] for i in fit], data.targets[fit], True,
                                                                seed).predict_proba([texts[i] for i in held])

    def spans(fit, held, seed):
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        fitted = [data.examples[i] for i in fit]
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2).fit(
            [s.text for e in fitted for s in data.sentences[e.id]])
        rows = vectorizer.transform([s.text for e in fitted for s in data.sentences[e.id]])
        scores = np.zeros((len(held), len(data.labels)))
        for j, label in enumerate(data.labels):
            y = [k in data.covered.get((e.id, label), ()) for e in fitted for k in range(len(data.sentences[e.id]))]
            model = LogisticRegression(class_weight="balanced", max_iter=2000).fit(rows, y)
            for h, i in enumerate(held):
                sentences = [s.text for s in data.sentences[data.examples[i].id]]
                scores[h, j] = model.predict_proba(vectorizer.transform(sentences))[:, 1].max()
        return scores

    def document_vector(i):
        return data.embeddings[data.examples[i].id].mean(0)

    def similarity(i):
        cosines = data.embeddings[data.examples[i].id] @ data.description_embeddings.T
        return np.concatenate([cosines.max(0), cosines.mean(0)])

    def frozen(features, C):
        return lambda fit, held, seed: per_label(np.stack([features(i) for i in fit]),
                                                 np.stack([features(i) for i in held]), data.targets[fit], C)

    return {"classical": classical(1.0), "classical C=10": classical(10.0),
            "spans, sentences max-pooled": spans, "frozen MiniLM": frozen(document_vector, 10.0),
            "section descriptions": frozen(similarity, 1.0)}


def fine_tuned(data: Data, epochs: int, evidence_weight: float):
    from common import fine_tuned_minilm, minilm_probabilities
    from legalft.data.example import TaskSpec

    task = TaskSpec("proslex", data.labels, True, label_descriptions=data.descriptions)

    def fit_predict(fit, held, seed):
        module, tokenizer = fine_tuned_minilm([data.examples[i] for i in fit], task, epochs, seed, evidence_weight)
        return minilm_probabilities(module, tokenizer, task, [data.examples[i] for i in held])

    return fit_predict


FUSED = [("classical", "spans, sentences max-pooled"), ("classical", "frozen MiniLM"),
         ("classical", "section descriptions"), ("classical C=10", "frozen MiniLM"),
         ("classical", "frozen MiniLM", "section descriptions"),
         ("classical", "frozen MiniLM", "spans, sentences max-pooled")]


def fused(*parts: np.ndarray):
    """The framework's late fusion (``legalft.kit.fusion.fused_sides``) as each fold sees it: standardised on the
    documents it fits on."""
    from legalft.kit.fusion import fused_sides

    return lambda fit: fused_sides(parts, fit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--encoder-epochs", type=int, default=0,
                        help="also fine-tune MiniLM, without and with evidence_weight=1, this many epochs a fold")
    parser.add_argument("--only-encoders", action="store_true", help="classical and the fine-tuned encoders alone")
    parser.add_argument("--evidence-weights", type=float, nargs="+", default=[0.0, 1.0],
                        help="the fine-tuned encoders' method.evidence_weight (default: 0 and 1)")
    args = parser.parse_args()

    from scipy.stats import ttest_rel

    from legalft.evaluation.cross_validation import cross_validated, stratified_folds

    data = Data()
    candidates = recipes(data)
    fused_sets = FUSED
    if args.encoder_epochs:
        tuned = {"fine-tuned MiniLM" + (f", evidence_weight={weight:g}" if weight else ""):
                 fine_tuned(data, args.encoder_epochs, weight) for weight in args.evidence_weights}
        if args.only_encoders:
            candidates, fused_sets = {"classical": candidates["classical"]}, []
        candidates.update(tuned)
        fused_sets = fused_sets + [("classical", name) for name in tuned]
    results = {}  # recipe -> seed -> cv record
    for seed in args.seeds:
        folds = stratified_folds(data.examples, args.folds, seed)
        scores = {}
        for name, fit_predict in candidates.items():
            scores[name] = np.zeros(data.targets.shape)
            for fit, held in folds:
                scores[name][held] = fit_predict(fit, held, seed)
            results.setdefault(name, {})[seed] = cross_validated(data.examples, scores[name], folds, data.spec)[1]
            print(f"seed {seed}, {name}: macro-F1 {results[name][seed]['mean']['macro_f1']:.3f}", file=sys.stderr)
        for parts in fused_sets:
            name = " + ".join(parts)
            results.setdefault(name, {})[seed] = cross_validated(
                data.examples, fused(*(scores[p] for p in parts)), folds, data.spec)[1]
        print(f"seed {seed} done", file=sys.stderr)

    def fold_values(name, key="macro_f1"):
        return [f[key] for seed in args.seeds for f in results[name][seed]["per_fold"]]

    def label_f1(name, label):
        return statistics.mean(f["per_label"][label]["f1"] for seed in args.seeds
                               for f in results[name][seed]["per_fold"])

    floor = fold_values("classical")
    print(f"PROSLEX validation split, {len(data.examples)} documents, {args.folds} folds x seeds "
          f"{', '.join(map(str, args.seeds))}; macro-F1 mean over folds per seed, then over all "
          f"{len(floor)} fold-seed pairs; difference from classical with a paired t-test over the pairs")
    print(f"{'recipe':<58}{'per seed':>24}{'mean':>8}{'- classical':>13}{'p':>8}{'IPC 201':>9}{'IPC 506':>9}")
    for name in results:
        values = fold_values(name)
        per_seed = " ".join(f"{results[name][s]['mean']['macro_f1']:.3f}" for s in args.seeds)
        difference = statistics.mean(values) - statistics.mean(floor)
        p = ttest_rel(values, floor).pvalue if name != "classical" else float("nan")
        print(f"{name:<58}{per_seed:>24}{statistics.mean(values):>8.3f}{difference:>+13.3f}{p:>8.3f}"
              f"{label_f1(name, 'IPC 201'):>9.3f}{label_f1(name, 'IPC 506'):>9.3f}")
    for name in results:  # training on the evidence against the same recipe without it, pair by pair
        plain = re.sub(r", evidence_weight=[0-9.]+", "", name)
        if plain != name and plain in results:
            values, baseline = fold_values(name), fold_values(plain)
            print(f"{name} - {plain}: {statistics.mean(values) - statistics.mean(baseline):+.3f} macro-F1, "
                  f"ahead on {sum(v > b for v, b in zip(values, baseline))} of {len(values)} fold-seed pairs, "
                  f"paired t-test p {ttest_rel(values, baseline).pvalue:.3f}")


if __name__ == "__main__":
    main()
