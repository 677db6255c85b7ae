"""The one fold loop of every method that cross-validates (``protocol.cv_folds=K``): each fold's model trained on
the other folds and scored on its own, its record kept in ``checkpoints/cv/`` as the fold ends, so a rerun
after a kill or a requeued job skips the finished folds; and ``cv.json``, written here alone, in one format
for every method. How a fold is trained and what it records is the method's: out-of-fold probabilities for a
classifier, scores of generated answers for generative LoRA. The folds themselves and how a fold's scores
are computed are the evaluation's (``legalft.evaluation.cross_validation``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
from omegaconf import DictConfig

from legalft.data.example import Example
from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)

# (fold number, indices the fold trains on, indices it holds out, its resumable checkpoint) -> its record
FoldRunner = Callable[[int, list[int], list[int], Path], dict]


def on_one_device(trainer_cfg: DictConfig) -> None:
    """What a run that trains several models one after another without a validation split needs of the
    trainer config: a number of epochs (nothing to stop early on) and one device."""
    if trainer_cfg.get("max_epochs") == -1:
        raise UserError("trainer.max_epochs=-1 trains until early stopping, which needs a validation split, and this "
                        "run has none (protocol.cv_folds, or a task without one): set a number of epochs, e.g. "
                        "trainer.max_epochs=10.")
    devices, strategy = str(trainer_cfg.get("devices", 1)), str(trainer_cfg.get("strategy", "auto"))
    if (devices.isdigit() and int(devices) > 1) or int(trainer_cfg.get("num_nodes", 1)) > 1 or "ddp" in strategy \
            or "deepspeed" in strategy.lower():
        raise UserError(f"a run without a validation split (protocol.cv_folds, or a task that has none) trains its models "
                        f"one after another on one device (trainer.devices={devices}, strategy {strategy}): use "
                        "trainer=default or trainer=cpu, and run seeds or tasks in parallel as separate jobs.")


def free_finished_models() -> None:
    """A Lightning module and its trainer refer to each other, so a finished fold's weights and optimiser
    state outlive it until Python's cycle collector runs; collect now, before the next model is built,
    and hand the freed GPU blocks back (one fold's model at a time, not two)."""
    import gc
    import sys

    gc.collect()
    torch = sys.modules.get("torch")  # a method that never imported torch has no GPU blocks to hand back
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def fold_records(folder: Path, pool: list[Example], folds, run_fold: FoldRunner) -> list[dict]:
    """Each fold's record, in fold order: ``run_fold(k, fit, held, last_checkpoint)`` for a fold not yet
    finished, read back from ``folder/fold_<k>.json`` for one an earlier command finished (the documents it
    held out checked against the run's data). A fold's record is saved as it ends, then its checkpoint
    (``folder/fold_<k>.last.ckpt``, what a fold stopped by a requeue signal resumes from) is removed."""
    from legalft.training.checkpoints import remove_if_saved_here
    from legalft.foundation.io import atomic_write_json

    records = []
    for k, (fit, held) in enumerate(folds):
        saved = folder / f"fold_{k}.json"
        held_ids = [pool[i].id for i in held]
        if saved.exists():
            record = json.loads(saved.read_text())
            if record.get("ids") != held_ids:
                raise UserError(f"{saved}: this fold held out other documents than the run's data now gives it; the "
                                "data changed since the run started. Start a new run folder (leave hydra.run.dir unset).")
            log.info("fold %d of %d: scores read from %s", k + 1, len(folds), saved)
        else:
            log.info("fold %d of %d: training on %d documents, scoring %d", k + 1, len(folds), len(fit), len(held))
            last_checkpoint = folder / f"fold_{k}.last.ckpt"
            record = {"ids": held_ids, **run_fold(k, list(fit), list(held), last_checkpoint)}
            free_finished_models()
            atomic_write_json(saved, record)
            remove_if_saved_here(last_checkpoint)  # the fold's record is kept; its model is needed no more
        records.append(record)
    return records


def out_of_fold(folder: Path, pool: list[Example], folds, n_labels: int,
                fold_probabilities: Callable[[list[int], list[int], Path], np.ndarray]) -> np.ndarray:
    """Every document's per-label probabilities from the fold model that did not train on it:
    ``fold_probabilities(fit, held, last_checkpoint)`` trains one fold's model and scores its held-out
    documents. Kept at the precision the fold files keep, so a run that reads them back goes on exactly as
    one that did not."""
    def run_fold(k, fit, held, last_checkpoint):
        return {"probs": np.asarray(fold_probabilities(fit, held, last_checkpoint)).round(6).tolist()}

    scores = np.zeros((len(pool), n_labels))
    for (_, held), record in zip(folds, fold_records(folder, pool, folds, run_fold)):
        scores[held] = np.array(record["probs"])
    return scores


def write_cv(run, results: dict[str, dict]) -> dict[str, float]:
    """``cv.json``: per task, the folds' scores (``per_fold``, each with what was chosen in it), their mean and
    standard deviation, and what the method chose over all of them; logged, and its path printed. Returns
    the run's ``cv/`` metrics (a task's name in them where the run has several)."""
    from legalft.foundation.io import atomic_write_json

    atomic_write_json(run.cv_results, results)
    print(f"cross-validation: {run.cv_results}")
    metrics = {}
    for task, cv in results.items():
        log.info("%s: %d-fold cross-validation, mean %s", task, cv["folds"],
                 {k: round(v, 3) for k, v in cv["mean"].items()})
        for side, part in cv.get("parts", {}).items():
            log.info("  %s alone: %s", side, {k: round(v, 3) for k, v in part["mean"].items()})
        prefix = "cv/" if len(results) == 1 else f"cv/{task}/"
        metrics.update({f"{prefix}{k}": v for k, v in cv["mean"].items()})
        metrics.update({f"{prefix}{side}/{k}": v for side, part in cv.get("parts", {}).items()
                        for k, v in part["mean"].items()})
    return metrics
