"""An encoder classifier as both of ``method=encoder``'s training schedules use it (``encoder`` with a
validation split, ``encoder_fixed_epochs`` without): built, batched, loaded from a run folder, and
scored into the run's result files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from omegaconf import DictConfig

from legalft.data.example import Example, TaskSpec
from legalft.errors import UserError
from legalft.evaluation.evidence import add_evidence
from legalft.evaluation.predictions import score_predictions
from legalft.run_folder import RunFolder

METHOD = "encoder"  # the name runs of method=encoder record
ENCODER_FOLDER = "encoder"  # in the run folder: tokenizer and model config, so a run is scored without the hub


def encoder_folder(run: RunFolder) -> Path:
    return run.path / ENCODER_FOLDER


def positive_weights(examples: list[Example], labels: tuple[str, ...], cap: float = 20.0) -> list[float]:
    """BCE weights negatives/positives per label, capped so a rare label cannot swamp the loss."""
    positives = np.array([sum(label in e.labels for e in examples) for label in labels], dtype=float)
    return np.minimum((len(examples) - positives) / np.maximum(positives, 1.0), cap).round(4).tolist()


def predict(module, datamodule, split: str) -> np.ndarray:
    """Probabilities for every example of ``split``, in the split's example order."""
    import lightning as L

    from legalft.progress import predict_progress

    loader = datamodule.eval_loader(split)
    trainer = L.Trainer(accelerator="auto", devices=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        callbacks=[predict_progress(len(loader.dataset), f"predicting the {split} split")])
    outputs = trainer.predict(module, dataloaders=loader)
    index = np.concatenate([o["index"].numpy() for o in outputs])
    probs = np.concatenate([o["probs"].numpy() for o in outputs])
    ordered = np.empty_like(probs)
    ordered[index] = probs
    return ordered


def subset_field(data_cfg) -> dict:
    """``train_size`` in the run's record when it trained on a subset (a point of a data-efficiency curve)."""
    size = data_cfg.get("train_size")
    return {"train_size": int(size)} if size is not None else {}


def load_trained_module(run: RunFolder, checkpoint: Path | None = None):
    """The run's classifier from its checkpoint, built from the run's saved encoder config (no hub)."""
    from legalft.models.encoder_module import EncoderClassifierModule

    from legalft.checkpoint_io import consolidated, refusing_code

    checkpoint = checkpoint or run.require(run.best_checkpoint, "best checkpoint")
    if checkpoint.is_dir():  # DeepSpeed's shards: read the file the training run consolidated them into
        checkpoint = run.require(consolidated(checkpoint), "consolidated DeepSpeed checkpoint")
    try:
        with refusing_code(checkpoint):
            module = EncoderClassifierModule.load_from_checkpoint(
                checkpoint, map_location="cpu", weights_only=True, pretrained=str(encoder_folder(run)), load_weights=False
            )
    except (RuntimeError, EOFError, OSError) as err:  # what torch.load raises for a truncated or damaged file
        raise UserError(f"{checkpoint}: the checkpoint cannot be read ({str(err).splitlines()[0]}). The file is "
                        "truncated or damaged; restore it from a copy, or train the run again.") from None
    if run.label_map.exists():
        labels = list(run.read_task().labels)
        if list(module.hparams.labels) != labels:
            raise UserError(f"{checkpoint}: this checkpoint classifies {len(module.hparams.labels)} labels "
                            f"({', '.join(module.hparams.labels[:5])}{' ...' if len(module.hparams.labels) > 5 else ''}), "
                            f"but the run folder's task has {len(labels)}: it belongs to another run. Restore the run's "
                            "own checkpoint, or train the run again.")
    return module


def build_datamodule(datamodule_factory, module, tokenizer, task: TaskSpec, train, val, test):
    hp = module.hparams
    return datamodule_factory(
        task=task, train=train, val=val, test=test, tokenizer=tokenizer,
        max_length=hp.max_length, stride=hp.stride, max_chunks=hp.max_chunks,
        last_window=hp.get("last_window", "rest"),  # checkpoints from before the choice: the tokenizer's
    )


def build_module(model_cfg: DictConfig, optimiser: dict, task: TaskSpec, train: list[Example]):
    """A fresh classifier from the model config, trained with the method's ``optimiser`` settings;
    ``pos_weight=auto`` is counted on ``train``."""
    from hydra.utils import instantiate

    pos_weight = model_cfg.get("pos_weight")
    if isinstance(pos_weight, str) and pos_weight.lower() == "none":  # how a sweep's choice(none, auto) says null
        pos_weight = None
    if pos_weight == "auto":
        pos_weight = positive_weights(train, task.labels)
    settings = {key: value for key, value in model_cfg.items() if key != "kind"}  # what it is, not a setting
    return instantiate(settings, _convert_="all", labels=list(task.labels), multi_label=task.multi_label,
                       pos_weight=pos_weight, **optimiser)


def test_and_write(method, ctx, module, datamodule, test: list[Example], task: TaskSpec, loggers=None, fuse=None,
                   **run_fields) -> dict:
    """Score ``test`` and publish the results (``method.publish``: ``loggers``, default the run's); ``fuse`` turns
    the encoder's probabilities into what the run predicts with (``legalft.methods.fusion``)."""
    probs = predict(module, datamodule, "test")
    if fuse is not None:
        probs = fuse(probs)
    scores, records = score_predictions(test, probs, task, ctx.folder.read_thresholds(task.labels))
    scores.update(add_evidence(records, test, ctx.folder.read_evidence(), ctx.explanations))
    return method.publish(ctx, {task.name: scores}, records, test, loggers, **run_fields)[task.name]
