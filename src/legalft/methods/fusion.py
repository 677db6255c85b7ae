"""Late fusion of a fine-tuned encoder with ``method=classical`` (``method.fuse_classical``), for
multi-label tasks: each side's per-label logits are standardised on scores of documents that side
did not train on, averaged with equal weights, and mapped back to (0, 1) for the thresholds.

Why standardise: the class-balanced logistic regression and the encoder's sigmoid head put their
probabilities on different scales, so averaging raw probabilities lets whichever is more confident
decide. Why equal weights: a weight would be one more thing chosen on held-out labels. On PROSLEX
the two make different errors (README, "Fine-tuned against classical").

The classical side is refitted, never pickled: rescoring fits it again on the run's own training
documents (deterministic for a seed), as ``method=classical`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from legalft.data.example import Example, Task
from legalft.errors import UserError

SIDES = ("encoder", "classical")


def fusion_applies(setting, task: Task, cv_folds) -> bool:
    """``auto``: a multi-label task whose run has held-out scores to standardise on (a validation split,
    or cross-validation's out-of-fold scores). ``true`` insists on it; ``false`` is the encoder alone."""
    if not (setting == "auto" or isinstance(setting, bool)):  # 0 and 1 equal False and True: not a choice here
        raise UserError(f"method.fuse_classical={setting!r}: choose auto, true or false.")
    possible = task.spec.multi_label and bool(cv_folds or task.val)
    if setting is True and not possible:
        raise UserError(f"method.fuse_classical=true: task {task.spec.name} is "
                        f"{'multi-label' if task.spec.multi_label else 'single-label'} with "
                        f"{'a' if task.val else 'no'} validation split; fusion needs a multi-label task and held-out "
                        "scores to standardise on (a validation split, or data.cv_folds=K). Set "
                        "method.fuse_classical=auto or false.")
    return possible and setting is not False


def logits(probs: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(probs, dtype=float), 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


@dataclass(frozen=True)
class Standardisation:
    """Per-label mean and standard deviation of each side's logits over held-out documents."""

    mean: dict[str, list[float]]
    std: dict[str, list[float]]

    @classmethod
    def fit(cls, encoder: np.ndarray, classical: np.ndarray) -> "Standardisation":
        sides = dict(zip(SIDES, (logits(encoder), logits(classical))))
        return cls(mean={s: v.mean(0).tolist() for s, v in sides.items()},
                   # a label scored alike on every document would divide by zero: it then counts as spread 1
                   std={s: np.where(v.std(0) > 1e-6, v.std(0), 1.0).tolist() for s, v in sides.items()})

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
    """``method=classical`` at its defaults, fitted on the documents the encoder trained on."""
    from legalft.methods.classical import ClassicalMethod

    return ClassicalMethod().fit(replace(task, train=trained_on, val=[]), seed)


def write_record(run, stats: Standardisation, trained_on: str, seed: int) -> None:
    """``fusion.json``: the standardisation, and what the classical side is refitted on when the run is
    rescored (``train``, or ``train+val`` for a cross-validated run's final model)."""
    from legalft.io import atomic_write_json

    atomic_write_json(run.fusion, {"classical": "tfidf_logreg", "trained_on": trained_on, "seed": seed,
                                   **stats.to_json()})


def rescoring_fusion(ctx, labels: Sequence[str], scored: list[Example]) -> Callable[[np.ndarray], np.ndarray]:
    """For ``evaluate.py run=DIR`` of a fused run (``ctx``: the finished run's context): the classical side
    refitted on the documents the run trained on (its config's data; the train and validation documents
    checked, ids and texts, against the run's ``training_data.json``), fused with the encoder's scores of
    ``scored`` as the run's ``fusion.json`` says."""
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
    classical = classical_side(task, documents, seed)(scored)
    return lambda encoder: stats.fuse(encoder, classical)
