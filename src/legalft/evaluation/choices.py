"""How a run chooses by itself between options (the fusion or either side alone, tuned or fixed thresholds, the
best epoch or the last) and what it records of each choice.

A choice is made on held-out documents only, and only on enough of them (``method.min_choice_docs``, 100 by
default): on PROSLEX's development data one seed of the batch order moves a fine-tuned encoder's macro-F1 by
0.1, so a choice between options a few points apart made on 15 validation documents is a coin toss. With fewer
documents the run takes the option's documented prior; an option that beats the prior by less than the paired
bootstrap standard error of its margin does not displace it either. Every choice is recorded
(``metrics.json``'s ``choices``) with the evidence it was made on: ``chosen_on`` (``validation``,
``out_of_fold`` or ``prior``), ``n`` documents, every option's score, the margin and its standard error.

Options are compared by the macro-F1 of their held-out decisions pooled over the documents (each decided by
thresholds that were not tuned on it), which is what the bootstrap resamples."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

DEFAULT_MIN_DOCS = 100
RESAMPLES = 1000
WHERE = ("validation", "out_of_fold", "prior")


@dataclass(frozen=True)
class Choice:
    option: str  # what the run uses
    chosen_on: str  # validation | out_of_fold | prior
    n: int  # held-out documents the options were scored on
    prior: str  # what the run takes without enough evidence
    scores: dict[str, float]  # each option's macro-F1 on those documents (empty where none was scored)
    margin: float | None = None  # best option's score minus the prior's (or the runner-up's, when the prior is best)
    margin_se: float | None = None  # the margin's paired bootstrap standard error
    reason: str = ""  # why the prior was taken, where it was

    def to_json(self) -> dict:
        return {key: value for key, value in asdict(self).items() if value not in (None, "")}

    def describe(self) -> str:
        """The choice in a few words, for the run's summary: "fused, chosen out of fold on 159 documents:
        fused 0.68, encoder 0.62, classical 0.66"."""
        how = {"validation": f"chosen on {self.n} validation documents",
               "out_of_fold": f"chosen out of fold on {self.n} documents",
               "prior": f"the prior ({self.reason})" if self.reason else "the prior"}[self.chosen_on]
        scored = ", ".join(f"{option} {score:.2f}" for option, score in self.scores.items())
        return f"{self.option}, {how}" + (f": {scored}" if scored else "")


def macro_f1(decisions: np.ndarray, targets: np.ndarray) -> float:
    """Macro-F1 over labels of binary decisions (documents x labels), scikit-learn's ``zero_division=0``."""
    from legalft.evaluation.counts import label_counts

    return label_counts(np.asarray(targets), np.asarray(decisions), "macro_f1").value()


def bootstrap_se(first: np.ndarray, second: np.ndarray, targets: np.ndarray, resamples: int = RESAMPLES,
                 seed: int = 0) -> float:
    """Standard error of macro-F1(first) - macro-F1(second), the documents resampled with replacement (the same
    documents for both: a paired bootstrap), through per-document counts (``legalft.evaluation.counts``)."""
    from legalft.evaluation.counts import label_counts

    rng = np.random.default_rng(seed)
    n = len(targets)
    weights = rng.multinomial(n, np.full(n, 1 / n), size=resamples)  # resamples x documents
    a, b = (label_counts(np.asarray(targets), np.asarray(d), "macro_f1") for d in (first, second))
    return float(np.std(a.score(weights @ a.counts) - b.score(weights @ b.counts), ddof=1))


def choose(decisions: Mapping[str, np.ndarray], targets: np.ndarray, prior: str, chosen_on: str, min_docs: int,
           seed: int = 0) -> Choice:
    """The option to use from each option's held-out decisions on the same documents (``chosen_on``: where they
    were held out): the best by macro-F1 where there are at least ``min_docs`` documents and its margin over the
    prior is larger than that margin's standard error, else the prior. Ties go to the prior, then to the order
    of ``decisions``."""
    if chosen_on not in WHERE[:2]:
        raise ValueError(f"chosen_on={chosen_on!r}: one of {', '.join(WHERE[:2])}")
    n = len(targets)
    scores = {option: round(macro_f1(d, targets), 4) for option, d in decisions.items()}
    if n < min_docs:
        return Choice(prior, "prior", n, prior, scores,
                      reason=f"{n} held-out documents, fewer than method.min_choice_docs={min_docs}")
    order = list(decisions)
    best = max(order, key=lambda option: (scores[option], option == prior, -order.index(option)))
    if best == prior:
        others = [option for option in order if option != prior]
        if not others:
            return Choice(prior, chosen_on, n, prior, scores)
        runner_up = max(others, key=lambda option: (scores[option], -order.index(option)))
        return Choice(prior, chosen_on, n, prior, scores, round(scores[prior] - scores[runner_up], 4),
                      round(bootstrap_se(decisions[prior], decisions[runner_up], targets, seed=seed), 4))
    margin = scores[best] - scores[prior]
    se = bootstrap_se(decisions[best], decisions[prior], targets, seed=seed)
    if margin <= se:
        return Choice(prior, "prior", n, prior, scores, round(margin, 4), round(se, 4),
                      reason=f"{best} ahead by {margin:.3f}, within its standard error {se:.3f}")
    return Choice(best, chosen_on, n, prior, scores, round(margin, 4), round(se, 4))


def prior_only(prior: str, n: int, why: str) -> Choice:
    """The prior taken where no option could be scored (``why`` says why)."""
    return Choice(prior, "prior", n, prior, {}, reason=why)


def records(choices: Mapping[str, Choice]) -> dict:
    return {name: choice.to_json() for name, choice in choices.items()}


def described(choices: Mapping[str, Choice], order: Sequence[str] = ("fusion", "thresholds", "epoch")) -> str:
    return "; ".join(f"{name}: {choices[name].describe()}" for name in order if name in choices)


def inner_folds(targets: np.ndarray, seed: int, folds: int = 5):
    """Folds over held-out documents themselves (validation), so an option that tunes thresholds is scored on
    documents its thresholds were not tuned on; stratified by label sets."""
    from iterstrat.ml_stratifiers import MultilabelStratifiedKFold

    splitter = MultilabelStratifiedKFold(n_splits=max(2, min(folds, len(targets))), shuffle=True, random_state=seed)
    return [(sorted(fit), sorted(held)) for fit, held in splitter.split(np.zeros(len(targets)), targets)]


def on_validation(scores: np.ndarray, targets: np.ndarray, seed: int, tuned: bool = True) -> np.ndarray:
    """Decisions on validation documents, each by thresholds tuned on the other inner folds (or at 0.5)."""
    from legalft.evaluation.cross_validation import held_out_decisions

    return held_out_decisions(scores, inner_folds(targets, seed), targets, tuned)


def thresholds_choice(decisions, targets: np.ndarray, chosen_on: str, min_docs: int, seed: int = 0) -> Choice:
    """Thresholds tuned per label on held-out scores (the prior: a classifier trained with class weights, or a
    fusion of standardised scores, is not calibrated at 0.5) against every label at 0.5; ``decisions(tuned)``
    gives the held-out decisions of either."""
    if len(targets) < 2:
        return prior_only("tuned", len(targets), "too few held-out documents to score")
    return choose({"tuned": decisions(True), "fixed": decisions(False)}, targets, "tuned", chosen_on, min_docs, seed)
