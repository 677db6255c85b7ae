"""Generated explanations (PROSLEX) scored as the PROSLEX paper scores them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def explanation_scores(generated: Sequence[str], references: Sequence[str]) -> dict:
    """ROUGE-1/2/L F-measures (mean over pairs) and corpus BLEU of generated explanations against
    the gold spans, as the PROSLEX paper reports them (rouge-score and sacrebleu, not hand-written)."""
    import sacrebleu
    from rouge_score import rouge_scorer

    if not generated:
        return {"explanations": 0}
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    rouge = [scorer.score(reference, candidate) for candidate, reference in zip(generated, references)]
    return {
        "explanations": len(generated),
        **{f"{name}_f": float(np.mean([r[name].fmeasure for r in rouge])) for name in ("rouge1", "rouge2", "rougeL")},
        "bleu": float(sacrebleu.corpus_bleu(list(generated), [list(references)]).score / 100),
    }
