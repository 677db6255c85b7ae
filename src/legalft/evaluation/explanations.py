"""Explanations (PROSLEX) scored as the PROSLEX paper scores them: ROUGE-1/2/L, BLEU, METEOR and BERTScore of
each explanation against the experts' spans for the same section (rouge-score, sacrebleu, nltk and bert-score:
none of them written here). BLEURT is not among them: its PyTorch port does not import with transformers 5 and
Google's needs TensorFlow (docs/methods.md "Explanations")."""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

import numpy as np

log = logging.getLogger(__name__)


def explanation_scores(generated: Sequence[str], references: Sequence[str], bertscore_model: str | None = None,
                       bertscore_layers: int | None = None) -> dict:
    """Mean ROUGE-1/2/L F-measures, corpus BLEU, mean METEOR and mean BERTScore F1 of ``generated`` against
    ``references`` (pairwise). ``bertscore_model`` is a hub name or a local folder (None: no BERTScore); a model
    that cannot be loaded is said in a warning and in ``bertscore_model``, and the other scores stand."""
    import sacrebleu
    from rouge_score import rouge_scorer

    if not generated:
        return {"explanations": 0}
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    rouge = [scorer.score(reference, candidate) for candidate, reference in zip(generated, references)]
    scores = {
        "explanations": len(generated),
        **{f"{name}_f": float(np.mean([r[name].fmeasure for r in rouge])) for name in ("rouge1", "rouge2", "rougeL")},
        "bleu": float(sacrebleu.corpus_bleu(list(generated), [list(references)]).score / 100),
        **meteor(generated, references),
    }
    if bertscore_model:
        scores.update(bertscore(generated, references, bertscore_model, bertscore_layers))
    return scores


def bertscore_settings(settings) -> dict:
    """``explanation_scores`` keywords from the ``explanations`` config group (None: its defaults' model)."""
    if settings is None:
        return {"bertscore_model": "roberta-large", "bertscore_layers": None}
    return {"bertscore_model": settings.get("bertscore_model"), "bertscore_layers": settings.get("bertscore_layers")}


class NoSynonyms:
    """A WordNet with no synsets: METEOR then matches exact words and stems only."""

    @staticmethod
    def synsets(*args, **kwargs) -> list:
        return []


@functools.cache
def wordnet():
    """nltk's WordNet where its data is installed (``python -m nltk.downloader wordnet``), else None."""
    from nltk.corpus import wordnet as corpus

    try:
        corpus.ensure_loaded()
        return corpus
    except LookupError:
        return None


def meteor(generated: Sequence[str], references: Sequence[str]) -> dict:
    """Mean METEOR (nltk); ``meteor_synonyms`` says whether WordNet synonyms were matched (its data is a
    separate download: without it, exact words and stems are)."""
    from nltk.tokenize import wordpunct_tokenize
    from nltk.translate.meteor_score import meteor_score

    synonyms = wordnet()
    values = [meteor_score([wordpunct_tokenize(reference)], wordpunct_tokenize(candidate),
                           wordnet=synonyms or NoSynonyms()) for candidate, reference in zip(generated, references)]
    return {"meteor": float(np.mean(values)), "meteor_synonyms": synonyms is not None}


@functools.cache
def bertscorer(model: str, layers: int | None):
    """bert-score's scorer for ``model`` at ``layers`` (bert-score's own layer for the models it knows, else the
    model's last): loaded once per process."""
    from legalft.foundation.hub import load_config

    config = load_config(model, key="explanations.bertscore_model")  # one clear message when missing, at once

    from bert_score import BERTScorer
    from bert_score.utils import model2layers

    layers = layers or model2layers.get(model) or config.num_hidden_layers
    return BERTScorer(model_type=model, num_layers=layers), layers


def bertscore(generated: Sequence[str], references: Sequence[str], model: str, layers: int | None) -> dict:
    from legalft.foundation.errors import UserError

    try:
        scorer, layers = bertscorer(model, layers)
    except UserError as err:
        log.warning("no BERTScore: %s", err)
        return {"bertscore_model": f"{model} (not loaded)"}
    precision, recall, f1 = scorer.score(list(generated), list(references))
    return {"bertscore_model": f"{model} layer {layers}", "bertscore_p": float(precision.mean()),
            "bertscore_r": float(recall.mean()), "bertscore_f": float(f1.mean())}
