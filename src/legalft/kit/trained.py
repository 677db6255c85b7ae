"""What every method that trains with Lightning shares (document classifiers, LoRA adapters, and any new one):
fitting that resumes from the run's last checkpoint, per-label thresholds tuned on held-out scores, and
checkpoints the run should not keep removed once it has finished; the run record is ``Method.publish``'s. A
new trained method subclasses ``TrainedMethod`` (a document classifier, ``legalft.kit.document_classifier``)
and writes what is its own: the model it builds, how it batches, how it scores (docs/extending.md)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from legalft.kit.base import Method

if TYPE_CHECKING:
    import numpy as np

    from legalft.data.example import Example, TaskSpec
    from legalft.runs.context import RunContext

log = logging.getLogger(__name__)


@dataclass
class Fitted:
    trainer: object  # the Lightning trainer that fitted (or would have fitted) the module
    metrics: dict[str, float] = field(default_factory=dict)  # what it logged last: a sweeper's values
    resumed: dict = field(default_factory=dict)  # ``resumed_from`` for metrics.json when training resumed


class TrainedMethod(Method):
    trains = True

    @staticmethod
    def fit(trainer, module, datamodule, last_checkpoint: Path) -> Fitted:
        """``module`` trained on ``datamodule`` by ``trainer`` (``ctx.trainer(...)``: the run's ``trainer`` group),
        resuming from ``last_checkpoint`` when it is there and readable (one that is not is moved aside, said
        so, and training starts over). The one way every model of a trained method is fitted: a method's final
        model, a cross-validation fold, a LoRA adapter."""
        from legalft.training.checkpoints import checkpoint_to_resume, resumed_from

        resume = checkpoint_to_resume(last_checkpoint)
        if resume:
            log.info("resuming from %s", resume)
        trainer.fit(module, datamodule=datamodule, ckpt_path=resume)
        return Fitted(trainer, {k: float(v) for k, v in trainer.callback_metrics.items()}, resumed_from(resume))

    @staticmethod
    def resume_callbacks(last_checkpoint: Path) -> list:
        """The callbacks of a fit that builds its own rather than the ``callbacks`` group's (LoRA adapters, the
        LLM classifier: fixed epochs, no best checkpoint): ``last_checkpoint`` at each epoch's end and at a
        requeue signal, so a rerun or requeued job resumes; progress lines in a log."""
        from lightning.pytorch.callbacks import ModelCheckpoint

        from legalft.training.preemption import PreemptionCheckpoint
        from legalft.training.progress import TrainingLines

        return [ModelCheckpoint(dirpath=last_checkpoint.parent, filename=last_checkpoint.stem, save_top_k=1,
                                enable_version_counter=False),
                PreemptionCheckpoint(str(last_checkpoint)), TrainingLines()]

    @staticmethod
    def tune_thresholds(ctx: RunContext, task: TaskSpec, held_out_scores: np.ndarray, held_out: list[Example]):
        """Per-label decision thresholds of a multi-label task, tuned on scores of examples the model did not
        train on (validation, or out of fold), and saved in the run folder (``thresholds.json``)."""
        from legalft.evaluation.metrics import tune_thresholds
        from legalft.evaluation.predictions import targets_of

        thresholds = tune_thresholds(held_out_scores, targets_of(held_out, task))
        ctx.folder.write_thresholds(task.labels, thresholds)
        return thresholds

    @staticmethod
    def finish(ctx: RunContext) -> None:
        """Once the run has finished: remove the checkpoints the ``checkpoints`` group says not to keep."""
        ctx.keep_checkpoints()
