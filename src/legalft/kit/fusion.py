"""Late fusion of a fine-tuned encoder with ``method=classical`` (``method.fuse_classical``), for
multi-label tasks: each side's per-label logits are standardised on scores of documents that side
did not train on, averaged with equal weights, and mapped back to (0, 1) for the thresholds.

Why standardise: the class-balanced logistic regression and the encoder's sigmoid head put their
probabilities on different scales, so averaging raw probabilities lets whichever is more confident
decide. Why equal weights: a weight would be one more thing chosen on held-out labels. On PROSLEX
the two make different errors (README, "Fine-tuned against classical").

The classical side is refitted, never pickled: rescoring fits it again on the run's own training
documents (deterministic for a seed), as ``method=classical`` does.

Fusion does not always help: the run chooses the fusion, the encoder alone or the classical side alone by
their held-out macro-F1 (out of fold when cross-validated, else on the validation split), on enough documents
only and by more than the margin's standard error, else it keeps the fusion (``legalft.evaluation.choices``);
it predicts with that one and records the choice (``fusion.json``'s ``use`` and ``choice``, the results'
``fusion_choice`` and ``choices``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from legalft.data.example import Example, Task
from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)

SIDES = ("encoder", "classical")
CHOICES = ("fused", *SIDES)  # in the order ties are broken
# What a run predicts with when it cannot choose on enough held-out documents: on PROSLEX's development data
# (5-fold cross-validation, two seeds) the fusion was ahead of the encoder alone at both seeds, and of classical
# on their mean (bench/README.md, "Fine-tuned against classical").
PRIOR = "fused"

def with_choice(choice: str, stats: "Standardisation") -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """(encoder scores, classical scores) -> the chosen option's scores."""
    return {"fused": stats.fuse, "encoder": lambda encoder, classical: encoder,
            "classical": lambda encoder, classical: classical}[choice]


def classical_alone(choice: str) -> bool:
    """Whether the option predicts with the classical side alone: the model's scores play no part."""
    return choice == SIDES[1]


def model_label(encoder_model: str, choice: str) -> str:
    """What a run's results name as its model: the option that made its predictions."""
    return {"fused": f"{encoder_model}+tfidf_logreg", "encoder": encoder_model, "classical": "tfidf_logreg"}[choice]


def predicted_by(encoder_model: str, choice: str) -> str:
    """What the run's summary says predicted: never an encoder run's name alone where the classical side did."""
    return {"fused": f"{encoder_model} fused with tfidf_logreg", "encoder": encoder_model,
            "classical": f"tfidf_logreg alone (the classical side of the fusion; {encoder_model} did not predict)"}[choice]


def fusion_applies(setting, task: Task, cv_folds) -> bool:
    """``auto``: a multi-label task whose run has held-out scores to standardise on (a validation split,
    or cross-validation's out-of-fold scores). ``true`` insists on it; ``false`` is the encoder alone (the setting's
    kind is the encoder's ``Method.settings``, checked before anything loads)."""
    possible = task.spec.multi_label and bool(cv_folds or task.val)
    if setting is True and not possible:
        raise UserError(f"method.fuse_classical=true: task {task.spec.name} is "
                        f"{'multi-label' if task.spec.multi_label else 'single-label'} with "
                        f"{'a' if task.val else 'no'} validation split; fusion needs a multi-label task and held-out "
                        "scores to standardise on (a validation split, or protocol.cv_folds=K). Set "
                        "method.fuse_classical=auto or false.")
    return possible and setting is not False


def logits(probs: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(probs, dtype=float), 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def standardising(side_logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(per-label mean, per-label standard deviation) of one side's logits over held-out documents; a label scored
    alike on every document would divide by zero: it counts as spread 1."""
    spread = side_logits.std(0)
    return side_logits.mean(0), np.where(spread > 1e-6, spread, 1.0)


def fused_sides(parts: Sequence[np.ndarray], fit: Sequence[int]) -> np.ndarray:
    """The late fusion of any number of sides' probabilities, each side's logits standardised on the documents
    ``fit`` indexes: what ``Standardisation`` does for a run's two sides (benchmarks fuse more)."""
    z = []
    for part in parts:
        mean, spread = standardising(logits(part)[list(fit)])
        z.append((logits(part) - mean) / spread)
    return 1 / (1 + np.exp(-np.mean(z, axis=0)))


@dataclass(frozen=True)
class Standardisation:
    """Per-label mean and standard deviation of each side's logits over held-out documents."""

    mean: dict[str, list[float]]
    std: dict[str, list[float]]

    @classmethod
    def fit(cls, encoder: np.ndarray, classical: np.ndarray) -> "Standardisation":
        stats = {side: standardising(logits(scores)) for side, scores in zip(SIDES, (encoder, classical))}
        return cls(mean={s: m.tolist() for s, (m, _) in stats.items()}, std={s: d.tolist() for s, (_, d) in stats.items()})

    def fuse(self, encoder: np.ndarray, classical: np.ndarray) -> np.ndarray:
        z = [(logits(scores) - np.array(self.mean[s])) / np.array(self.std[s])
             for s, scores in zip(SIDES, (encoder, classical))]
        return 1 / (1 + np.exp(-np.mean(z, axis=0)))

    def to_json(self) -> dict:
        return {"mean": self.mean, "std": self.std}

    @classmethod
    def from_json(cls, record: dict, labels: Sequence[str], where) -> "Standardisation":
        try:
            stats = cls(mean={s: [float(x) for x in record["mean"][s]] for s in SIDES},
                        std={s: [float(x) for x in record["std"][s]] for s in SIDES})
        except (KeyError, TypeError, ValueError):
            stats = None
        if stats is None or any(len(v) != len(labels) for part in (stats.mean, stats.std) for v in part.values()):
            raise UserError(f"{where}: not a fusion record of this run's {len(labels)} labels (it needs mean and std "
                            f"of {', '.join(SIDES)}). Restore the file from the run, or train the run again.")
        return stats


def fused_per_fold(encoder: np.ndarray, classical: np.ndarray) -> Callable[[Sequence[int]], np.ndarray]:
    """Out-of-fold scores as one fold of cross-validation sees them: standardised on the documents it
    fits on (their out-of-fold scores), so nothing of the held-out fold enters its scores."""
    return lambda fit: Standardisation.fit(encoder[fit], classical[fit]).fuse(encoder, classical)


def classical_side(task: Task, trained_on: list[Example], seed: int) -> Callable[[list[Example]], np.ndarray]:
    """``method=classical`` at its defaults (``legalft.models.tfidf``), fitted on the documents the encoder
    trained on."""
    from legalft.kit.features import fitted_scorer
    from legalft.models.tfidf import TfidfClassifier

    return fitted_scorer(TfidfClassifier(), replace(task, train=trained_on, val=[]), seed=seed)


def classical_out_of_fold(task: Task, pool: list[Example], folds, seed: int, folder) -> np.ndarray:
    """The classical side's out-of-fold scores on the folds the encoder's were made on, each fold's kept in
    ``folder`` as it ends (``legalft.kit.folds``)."""
    from legalft.kit.folds import out_of_fold

    return out_of_fold(folder, pool, folds, len(task.spec.labels),
                       lambda fit, held, _: classical_side(task, [pool[i] for i in fit], seed)([pool[i] for i in held]))


def cross_validated_choice(run, task: Task, pool: list[Example], folds, model_scores: np.ndarray, seed: int,
                           min_docs: int):
    """A cross-validated run's fusion: the classical side scored out of fold on the same folds, the fusion and
    each side alone decided on them, the option and the thresholds chosen out of fold (``legalft.evaluation.choices``;
    ``fusion.json`` written). Returns (the chosen option's thresholds for the final model, the task's ``cv.json``
    record with each side's under ``parts``, the results' fields, a function (final model's scores, classical
    side's scores) -> what the run predicts with, the choices made)."""
    from legalft.evaluation.choices import choose, thresholds_choice
    from legalft.evaluation.cross_validation import cross_validated, held_out_decisions
    from legalft.evaluation.predictions import targets_of

    classical = classical_out_of_fold(task, pool, folds, seed, run.folds("classical"))
    scores = {"fused": fused_per_fold(model_scores, classical), "encoder": model_scores, "classical": classical}
    targets = targets_of(pool, task.spec)
    fusion_choice = choose({option: held_out_decisions(scores[option], folds, targets) for option in CHOICES},
                           targets, PRIOR, "out_of_fold", min_docs, seed)
    use = fusion_choice.option  # what the run predicts with
    thresholds_chosen = thresholds_choice(lambda tuned: held_out_decisions(scores[use], folds, targets, tuned),
                                          targets, "out_of_fold", min_docs, seed)
    tuned = thresholds_chosen.option == "tuned"
    options = {option: cross_validated(pool, scores[option], folds, task.spec, tuned) for option in CHOICES}
    thresholds, cv = options[use]
    cv = {**cv, "use": use, "parts": {side: options[side][1] for side in SIDES}, "fused": options["fused"][1]}
    stats = Standardisation.fit(model_scores, classical)
    write_record(run, stats, trained_on="train+val", seed=seed, choice=fusion_choice)
    log.info("fusion: %s", fusion_choice.describe())
    return (thresholds, cv, results_fields(fusion_choice), with_choice(use, stats),
            {"fusion": fusion_choice, "thresholds": thresholds_chosen})


def write_record(run, stats: Standardisation, trained_on: str, seed: int, choice=None) -> None:
    """``fusion.json``: the standardisation, what the classical side is refitted on when the run is rescored
    (``train``, or ``train+val`` for a cross-validated run's final model), the option the run predicts with
    (``use``) and the choice that made it (``legalft.evaluation.choices``)."""
    from legalft.foundation.io import atomic_write_json

    atomic_write_json(run.fusion, {"classical": "tfidf_logreg", "trained_on": trained_on, "seed": seed,
                                   "use": choice.option if choice else PRIOR,
                                   **({"choice": choice.to_json()} if choice else {}), **stats.to_json()})


def results_fields(choice) -> dict:
    """The results' fields of a run that weighed fusion: what it was fused with, and what it predicts with (a
    ``Choice``, or the record of one that a run folder holds)."""
    record = choice.to_json() if hasattr(choice, "to_json") else dict(choice)
    return {"fused_with": "tfidf_logreg", "fusion_choice": {"use": record.get("option", PRIOR), **{
        key: record[key] for key in ("chosen_on", "n", "scores", "margin", "margin_se", "reason") if key in record}}}


def validation_fusion(run, task: Task, model_val: np.ndarray, seed: int, min_docs: int):
    """A run with a validation split: the classical side fitted on the train split, both sides standardised
    on validation, the option chosen on it where it holds at least ``min_docs`` documents, else the prior, the
    fusion (``fusion.json`` written). Each option is scored by inner folds of the validation documents, so
    thresholds are never scored on the documents they were tuned on. Returns (the chosen option's validation
    scores, the results' fields, a function from test examples and the model's scores of them to what the run
    predicts with, the choice)."""
    classical = classical_side(task, task.train, seed)
    classical_val = classical(task.val)
    stats = Standardisation.fit(model_val, classical_val)
    choice = validation_choice(task, model_val, classical_val, stats, min_docs, seed)
    write_record(run, stats, trained_on="train", seed=seed, choice=choice)
    log.info("fusion: %s", choice.describe())
    combine = with_choice(choice.option, stats)
    return (combine(model_val, classical_val), results_fields(choice),
            lambda examples, probs: combine(probs, classical(examples)), choice)


def refit_classical_side(run, whole: Task, seed: int) -> Callable[[list[Example], np.ndarray], np.ndarray]:
    """A run whose final model is trained again on every document (``legalft.kit.refit``): its classical side fitted
    on the same documents (``whole.train``), with the standardisation and option chosen on validation;
    ``fusion.json`` then says so (``trained_on: train+val``), so rescoring fits it there too. Returns a function from
    examples and the model's scores of them to what the run predicts with."""
    import json

    record = json.loads(run.fusion.read_text())
    stats = Standardisation.from_json(record, whole.spec.labels, run.fusion)
    if record.get("trained_on") != "train+val":
        from legalft.foundation.io import atomic_write_json

        atomic_write_json(run.fusion, {**record, "trained_on": "train+val"})
    classical = classical_side(whole, whole.train, seed)
    combine = with_choice(record.get("use", PRIOR), stats)
    return lambda examples, probs: combine(probs, classical(examples))


def validation_choice(task: Task, model_val: np.ndarray, classical_val: np.ndarray, stats: Standardisation,
                      min_docs: int, seed: int):
    """The fusion or either side alone, each decided on inner folds of the validation documents."""
    from legalft.evaluation.choices import choose, on_validation
    from legalft.evaluation.predictions import targets_of

    targets = targets_of(task.val, task.spec)
    return choose({option: on_validation(with_choice(option, stats)(model_val, classical_val), targets, seed)
                   for option in CHOICES}, targets, PRIOR, "validation", min_docs, seed)


def rescoring_fusion(ctx, labels: Sequence[str], scored: list[Example]):
    """For ``evaluate.py run=DIR`` of a fused run (``ctx``: the finished run's context): the classical side
    refitted (``refitted``), fused with the encoder's scores of ``scored`` as the run's ``fusion.json`` says: (that
    function, the results' fields that say what the run predicts with, ``results_fields``)."""
    classical_scorer, stats, use, choice = refitted(ctx, labels)
    classical = classical_scorer(scored)
    combine = with_choice(use, stats)
    return (lambda _examples, encoder: combine(encoder, classical)), results_fields({**choice, "option": use})


def refitted(ctx, labels: Sequence[str]):
    """A fused run's classical side fitted again on the documents the run trained on (its config's data; the train
    and validation documents checked, ids and texts, against the run's ``training_data.json``): (that scorer, the
    standardisation, the option the run predicts with, the choice's record)."""
    import json

    run = ctx.folder
    try:
        record = json.loads(run.fusion.read_text())
        trained_on, seed = record["trained_on"], int(record["seed"])
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{run.fusion}: not a fusion record (it needs trained_on, seed, mean and std). Restore the "
                        "file from the run, or train the run again.") from None
    stats = Standardisation.from_json(record, labels, run.fusion)
    (task,) = ctx.tasks(ctx.trained_data)
    documents = task.train + (task.val if trained_on == "train+val" else [])
    if tuple(task.spec.labels) != tuple(labels) or run.trained_on_exactly([(task.spec, task.train + task.val)]) is False:
        raise UserError(f"{run.config}: its data config no longer gives the documents the run trained on (the files "
                        "changed or moved), so the classical side of the fusion cannot be fitted again. Point "
                        "the data paths of config.yaml at the run's training data.")
    use = record.get("use", PRIOR)  # fusion.json of earlier releases: always the fusion
    if use not in CHOICES:
        raise UserError(f"{run.fusion}: use={use!r} is not one of {', '.join(CHOICES)}. Restore the file from the run.")
    choice = record.get("choice") if isinstance(record.get("choice"), dict) else {}
    return classical_side(task, documents, seed), stats, use, choice


CLASSICAL_FOLDER = "classical"  # an export's classical side (legalft.models.tfidf's files)


def export_side(ctx, labels: Sequence[str], folder) -> dict:
    """A fused run's classical side, fitted again, saved in ``folder``/classical (``legalft.models.tfidf``'s files)
    where the run predicts with it; returns ``legalft.json``'s ``fusion`` record."""
    from pathlib import Path

    from legalft.models import tfidf

    if not ctx.folder.fusion.exists():
        return {}
    scorer, stats, use, choice = refitted(ctx, labels)
    record = {"use": use, "chosen_on": choice.get("chosen_on"), **stats.to_json(),
              "note": f"the run predicted with {use}: the encoder's scores and those of the TF-IDF classifier in "
                      f"{CLASSICAL_FOLDER}/, each side's logits standardised by mean and std and averaged "
                      "(legalft.kit.fusion); transformers gives the encoder's alone, predict.py run=<this folder> "
                      "the run's"}
    if use != "encoder":
        side = Path(folder) / CLASSICAL_FOLDER
        side.mkdir()
        tfidf.save(scorer.model, side, multi_label=True)
        record["classical"] = CLASSICAL_FOLDER
    return record


def exported(record: dict, labels: Sequence[str], folder):
    """An export's fusion (``export_side``'s record): a function (examples, encoder scores) -> the run's scores."""
    from pathlib import Path

    from legalft.foundation.io import inside
    from legalft.models.tfidf import SavedTfidf

    use = record.get("use")
    if use not in CHOICES:
        raise UserError(f"{folder}/legalft.json: fusion.use={use!r} is not one of {', '.join(CHOICES)}. Export the "
                        "run again.")
    stats = Standardisation.from_json(record, labels, f"{folder}/legalft.json")
    combine = with_choice(use, stats)
    if use == "encoder":
        return lambda examples, encoder: encoder
    classical = SavedTfidf(inside(folder, record.get("classical", CLASSICAL_FOLDER),
                               f"{Path(folder) / 'legalft.json'}: fusion.classical"))
    return lambda examples, encoder: combine(encoder, classical.predict_proba([e.text for e in examples]))
