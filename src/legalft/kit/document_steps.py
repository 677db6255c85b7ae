"""The steps a document classifier's run is made of (``legalft.kit.document_classifier``): one task per
run, the documents cut into the windows the model was built for, a trainer for a fixed number of epochs,
and every document's probabilities for a split."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from legalft.data.example import Example, Task, TaskSpec
from legalft.foundation.errors import UserError
from legalft.runs.context import RunContext


def one_task(tasks: list[Task], method: str) -> Task:
    """A document classifier fits one model per run (a multirun over ``data.tasks`` fits one per task)."""
    if len(tasks) != 1:
        names = ", ".join(t.spec.name for t in tasks[:5]) + (", ..." if len(tasks) > 5 else "")
        raise UserError(f"method={method} trains one classifier on one task, and the data config names {len(tasks)} "
                        f"({names}): choose one (e.g. data.tasks=[{tasks[0].spec.name}]), run one per task "
                        "(python train.py -m data.tasks=[a],[b],...), fit them all with method=setfit or "
                        "method=classical, or score them in context (evaluate.py prompt=...).")
    return tasks[0]


def positive_weights(examples: list[Example], labels: tuple[str, ...], cap: float = 20.0) -> list[float]:
    """BCE weights negatives/positives per label, capped so a rare label cannot swamp the loss."""
    positives = np.array([sum(label in e.labels for e in examples) for label in labels], dtype=float)
    return np.minimum((len(examples) - positives) / np.maximum(positives, 1.0), cap).round(4).tolist()


def subset_field(ctx: RunContext) -> dict:
    """``train_size`` in the run's record when it trained on a subset (a point of a data-efficiency curve)."""
    size = ctx.protocol.train_size
    return {"train_size": int(size)} if size is not None else {}


def predict(module, datamodule, split: str) -> np.ndarray:
    """Probabilities for every example of ``split``, in the split's example order: the module's own
    ``predict_step`` over the split's batches (``legalft.models.inference``)."""
    from legalft.models.inference import scores_in_order

    return scores_in_order(module.predict_step, module, datamodule.eval_loader(split), f"predicting the {split} split")


def build_datamodule(datamodule_factory, module, tokenizer, task: TaskSpec, train, val, test):
    """The documents cut into the windows the module was built for (its ``max_length``, ``stride``,
    ``max_chunks``, ``last_window``): the same in training, scoring and rescoring."""
    hp = module.hparams
    extra = {}
    if hp.get("evidence_weight") and train:  # the experts' sentences, read alone as well (method.evidence_weight)
        from legalft.evaluation.evidence import expert_sentences

        extra["train_sentences"] = [expert_sentences(e, task.labels, task.label_descriptions) for e in train]
    return datamodule_factory(
        task=task, train=train, val=val, test=test, tokenizer=tokenizer,
        max_length=hp.max_length, stride=hp.stride, max_chunks=hp.max_chunks,
        last_window=hp.get("last_window", "rest"),  # checkpoints from before the choice: the tokenizer's
        **extra,
    )


def fixed_epoch_trainer(ctx: RunContext, last_checkpoint: Path, with_loggers: bool, validate: bool = False,
                        every_epoch: bool = False, **overrides):
    """A trainer for ``trainer.max_epochs`` that keeps the last epoch: the ``callbacks`` group less what
    watches validation scores to pick a checkpoint or stop early, its preemption callback pointed at
    ``last_checkpoint`` so a stopped model resumes exactly (``every_epoch``: saved there at each epoch's end
    too). ``validate``: validation metrics are logged each epoch."""
    import lightning as L

    from legalft.training.preemption import PreemptionCheckpoint

    callbacks = []
    for callback in ctx.callbacks():
        if isinstance(callback, (L.pytorch.callbacks.ModelCheckpoint, L.pytorch.callbacks.EarlyStopping)):
            continue  # they watch validation scores
        if isinstance(callback, PreemptionCheckpoint):
            callback.checkpoint_path = last_checkpoint
        callbacks.append(callback)
    if every_epoch:
        callbacks.append(L.pytorch.callbacks.ModelCheckpoint(dirpath=last_checkpoint.parent, filename=last_checkpoint.stem,
                                                             save_top_k=1, enable_version_counter=False))
    return ctx.trainer(callbacks, with_loggers, enable_checkpointing=every_epoch,
                       **({} if validate else {"limit_val_batches": 0}), **overrides)


def names_own_evidence(evidence_from: str, module) -> bool:
    """``method.evidence_from=model`` on a model that trained on the experts' sentences (``method.evidence_weight``)."""
    return evidence_from == "model" and bool(module.hparams.get("evidence_weight"))


def evidence_namer(evidence_from: str, module, tokenizer, task: TaskSpec, run):
    """What names each predicted section's evidence: the run's span scorer (``evidence.json``; None where it has none),
    or the model itself where it names its own (``names_own_evidence``, ``legalft.models.model_evidence``)."""
    if names_own_evidence(evidence_from, module):
        from legalft.models.model_evidence import ModelEvidence

        return ModelEvidence(module.model, tokenizer, task.labels)
    return run.read_evidence()
