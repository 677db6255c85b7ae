"""Which sentences of the facts to give as the evidence for a predicted statute, chosen by cross-validation
on the training documents, the experts' spans the reference.

    LEGALFT_FIRE2026_DIR=../shared/fire2026 LEGALFT_PROSLEX_DIR=../shared/proslex \
        .venv/bin/python bench/evidence_selection.py [--folds 5] [--seed 0]

The training documents are FIRE 2026 Task 1's 523 cases as PROSLEX's training split (their explanation sentences
aligned to the facts, ``legalft.data.noise``) where ``LEGALFT_FIRE2026_DIR`` is set, and every selector is then
also trained on all of them and scored on PROSLEX's validation split (held out); else PROSLEX's validation split
alone, cross-validated. Documents are folded 5 ways; every selector learns from four folds and picks, for each gold section of a
held-out document, as many sentences as the span scorer gives there (its ``k``), so the selectors differ in
which sentences they pick, not in how many.
Scored by ``legalft.evaluation.grounding`` (sentence precision, recall, F1 against the experts' spans) on gold
sections, so the figures measure evidence and not section prediction. Selectors:

- ``lead``: the first k sentences (what a selector must beat);
- ``document_classifier``: a document classifier (TF-IDF, logistic regression per section, trained on the
  training folds' whole documents) scoring single sentences, as an encoder run scores them with its own head;
- ``span_scorer, median count``: the span scorer's best sentences, as many as the training folds' median number
  of expert sentences per section (2);
- ``span_scorer, word n-grams alone``: a sentence classifier per section (TF-IDF of word n-grams, logistic
  regression) trained on the training folds' sentences, positive where an expert's span for that section covers the
  sentence, giving every sentence it calls evidence (at least one): the scorer of earlier releases (format 2);
- ``span_scorer``: the same over word and character n-grams, each sentence read beside the mean of its neighbours:
  the project's ``legalft.evaluation.evidence.EvidenceSelector``, which runs use (format 3);
- ``encoder, evidence_weight=1`` (``--encoder-epochs N``; about 10 minutes a fold on 2 CPU cores at 4 epochs): the
  shipped MiniLM fine-tuned as ``method=encoder method.evidence_weight=1`` fine-tunes it (the documents, and the
  experts' sentences and the sections' descriptions read alone), naming evidence from its own model
  (``legalft.models.model_evidence``).

Needs LEGALFT_PROSLEX_DIR.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fire_and_proslex():
    """(FIRE's cases as PROSLEX's training split, PROSLEX's validation split), or None without LEGALFT_FIRE2026_DIR."""
    from common import proslex_label_map
    from legalft.data.proslex import ProslexSource

    fire = Path(os.environ.get("LEGALFT_FIRE2026_DIR", "/nonexistent")) / "task1.jsonl"
    if not fire.is_file():
        return None
    (task,) = ProslexSource(proslex_label_map(), train_path=str(fire),
                            test_path=str(Path(os.environ.get("LEGALFT_PROSLEX_DIR", "/nonexistent")) / "validation")
                            ).load()
    return task.train, task.test


def encoder_namer(train, held_out, labels, epochs: int, seed: int):
    """MiniLM fine-tuned on ``train`` with ``evidence_weight=1`` at the quick start's settings: (its own evidence
    namer, its probabilities for ``held_out``)."""
    import yaml

    from common import fine_tuned_minilm, minilm_probabilities
    from legalft.data.example import TaskSpec
    from legalft.models.model_evidence import ModelEvidence

    label_map = yaml.safe_load((ROOT / "conf" / "data" / "proslex.yaml").read_text())["label_map"]
    descriptions = {entry["label"]: entry["description"] for entry in label_map.values()}
    task = TaskSpec("proslex", tuple(labels), True, label_descriptions=descriptions)
    module, tokenizer = fine_tuned_minilm(train, task, epochs, seed, evidence_weight=1.0)
    return ModelEvidence(module.model, tokenizer, task.labels), minilm_probabilities(module, tokenizer, task, held_out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--encoder-epochs", type=int, default=0,
                        help="also fine-tune MiniLM with evidence_weight=1 for this many epochs a fold (0: not)")
    args = parser.parse_args()

    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from legalft.data.example import TaskSpec
    from legalft.evaluation.cross_validation import stratified_folds
    from legalft.evaluation.predictions import targets_of
    from legalft.models.tfidf import TfidfClassifier
    from legalft.data.sentences import split_sentences
    from legalft.evaluation.evidence import EvidenceSelector, vectorizer
    from legalft.evaluation.grounding import grounding_scores, sentences_of_quotes

    from common import proslex_development_documents

    held_out_split = fire_and_proslex()
    examples, test = held_out_split or (proslex_development_documents(), [])
    sentences = {e.id: split_sentences(e.text) for e in examples + test}
    labels = sorted({label for e in examples for label in e.labels})

    names = ["lead", "document_classifier", "span_scorer, median count", "span_scorer, word n-grams alone",
             "span_scorer"]
    results = {name: [] for name in names + (["encoder, evidence_weight=1"] if args.encoder_epochs else [])}
    spec = TaskSpec("proslex", tuple(labels), True)
    targets = targets_of(examples, spec)
    folds = stratified_folds(examples, args.folds, args.seed)  # the folds every method uses
    classified = {"classical": np.zeros(targets.shape), "encoder, evidence_weight=1": np.zeros(targets.shape)}
    held_out_results = {name: [] for name in names}
    for fold, (train_index, test_index) in enumerate([*folds, (list(range(len(examples))), None)]):
        last = test_index is None  # every training document, scored on the held-out split
        if last and not test:
            break
        train, held_out = examples if last else [examples[i] for i in train_index], \
            test if last else [examples[i] for i in test_index]

        documents_vec = vectorizer().fit([e.text for e in train])
        document_models = {}
        for label in labels:
            y = [label in e.labels for e in train]
            if 0 < sum(y) < len(y):
                document_models[label] = LogisticRegression(max_iter=1000, class_weight="balanced").fit(
                    documents_vec.transform([e.text for e in train]), y)

        span_scorer = EvidenceSelector.fit(train, labels)  # what runs use (legalft.evaluation.evidence)
        earlier = EvidenceSelector.fit(train, labels, version=2)
        counts = [len(sentences_of_quotes(spans, e.text, sentences[e.id])) for e in train
                  for spans in e.explanations.values()]
        median = max(1, round(statistics.median([c for c in counts if c])))
        fixed = EvidenceSelector(span_scorer.vectorizers, span_scorer.weights, fixed_count=median)

        def top(example, k, model=None, vec=None):
            texts = [s.text for s in sentences[example.id]]
            if model is None:
                return texts[:k]
            order = np.argsort(-model.predict_proba(vec.transform(texts))[:, 1], kind="stable")
            return [texts[i] for i in sorted(order[:k])]

        given, own = [], []
        model_namer = None
        if args.encoder_epochs and not last:  # the same model's sections too, beside classical's on the same folds
            model_namer, classified["encoder, evidence_weight=1"][test_index] = encoder_namer(
                train, held_out, labels, args.encoder_epochs, args.seed)
            classified["classical"][test_index] = TfidfClassifier().fit(
                [e.text for e in train], targets[train_index], True, args.seed).predict_proba([e.text for e in held_out])
        for name in held_out_results if last else results:
            docs = []
            for e in held_out:
                evidence = {}
                for label in e.labels:
                    chosen = span_scorer.select(e.text, [label]).get(label) or top(e, median)
                    if name == "lead":
                        evidence[label] = top(e, len(chosen))
                    elif name == "document_classifier":
                        evidence[label] = top(e, len(chosen), document_models.get(label), documents_vec)
                    elif name == "span_scorer, median count":
                        evidence[label] = fixed.select(e.text, [label]).get(label) or top(e, median)
                    elif name == "span_scorer, word n-grams alone":
                        evidence[label] = earlier.select(e.text, [label]).get(label) or top(e, median)
                    elif name == "encoder, evidence_weight=1":
                        evidence[label] = model_namer.select(e.text, [label])[label]
                        own.append(len(evidence[label]))
                    else:
                        evidence[label] = chosen
                        given.append(len(chosen))
                docs.append((e.text, evidence, e.explanations))
            (held_out_results if last else results)[name].append(grounding_scores(docs))
        print(f"{'held out' if last else f'fold {fold}'}: median count {median}, span scorer's sentences a section: mean "
              f"{statistics.mean(given):.1f}, median {statistics.median(given)}"
              + (f"; the encoder's: mean {statistics.mean(own):.1f}, median {statistics.median(own)}" if own else ""),
              file=sys.stderr)

    where = ("FIRE 2026's cases as PROSLEX's training split" if held_out_split else "PROSLEX validation split")
    print(f"{where}, {len(examples)} documents, {args.folds}-fold cross-validation, the folds of seed {args.seed};"
          " sentence-level evidence scores on gold sections, mean (sd) over folds")
    print(f"{'selector':<34}{'precision':>16}{'recall':>16}{'F1':>16}")
    for name, per_fold in results.items():
        cells = []
        for key in ("precision", "recall", "f1"):
            values = [f[f"evidence_sentence_{key}"] for f in per_fold]
            cells.append(f"{statistics.mean(values):.3f} ({statistics.stdev(values):.3f})")
        print(f"{name:<34}" + "".join(f"{c:>16}" for c in cells))
    if test:
        print(f"\ntrained on all {len(examples)}, scored on PROSLEX's validation split ({len(test)} documents, held out)")
        for name, (scores,) in held_out_results.items():
            print(f"{name:<34}" + "".join(f"{scores[f'evidence_sentence_{key}']:>16.3f}"
                                          for key in ("precision", "recall", "f1")))
    if args.encoder_epochs:
        sections(examples, spec, folds, classified)


def sections(examples, spec, folds, classified) -> None:
    """The fine-tuned model's sections on the same folds beside classical's, alone and fused (macro-F1, each
    fold decided by thresholds tuned on the other folds' out-of-fold scores)."""
    from scipy.stats import ttest_rel

    from legalft.evaluation.cross_validation import cross_validated
    from legalft.kit.fusion import fused_per_fold

    rows = {"classical": classified["classical"], "encoder, evidence_weight=1": classified["encoder, evidence_weight=1"],
            "classical + encoder, evidence_weight=1": fused_per_fold(classified["encoder, evidence_weight=1"],
                                                                     classified["classical"])}
    per_fold = {name: [f["macro_f1"] for f in cross_validated(examples, scores, folds, spec)[1]["per_fold"]]
                for name, scores in rows.items()}
    print("\nsections of the same documents, macro-F1 mean (sd) over the folds, and against classical (paired t-test)")
    for name, values in per_fold.items():
        difference = statistics.mean(values) - statistics.mean(per_fold["classical"])
        p = ttest_rel(values, per_fold["classical"]).pvalue if name != "classical" else float("nan")
        print(f"{name:<40}{statistics.mean(values):>8.3f} ({statistics.stdev(values):.3f}){difference:>+9.3f}"
              f"{p:>8.3f}")


if __name__ == "__main__":
    main()
