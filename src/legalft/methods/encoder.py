"""``method=encoder``: fine-tuning an encoder classifier, and scoring a finished run on a test split."""

from __future__ import annotations

import logging

from legalft.data.example import Task
from legalft.errors import UserError
from legalft.evaluation import run_results
from legalft.evaluation.evidence import EvidenceSelector
from legalft.methods.trained import TrainedMethod
from legalft.methods.encoder_model import (ENCODER_FOLDER, METHOD, build_datamodule, build_module, encoder_folder,
                                           load_trained_module, predict, subset_field, test_and_write)
from legalft.models.kinds import ENCODER, kind_of
from legalft.ranks import secondary_rank
from legalft.run_folder import RunFolder
from legalft.run_context import RunContext

log = logging.getLogger(__name__)


def one_task(tasks: list[Task]) -> Task:
    """The encoder method fits one classifier per run (a multirun over ``data.tasks`` fits one per task)."""
    if len(tasks) != 1:
        names = ", ".join(t.spec.name for t in tasks[:5]) + (", ..." if len(tasks) > 5 else "")
        raise UserError(f"the encoder method trains one classifier on one task, and the data config names {len(tasks)} "
                        f"({names}): choose one (e.g. data.tasks=[{tasks[0].spec.name}]), run one per task "
                        "(python train.py -m data.tasks=[a],[b],...), fit them all with method=setfit or "
                        "method=classical, or score them in context (evaluate.py prompt=...).")
    return tasks[0]


def train_encoder(ctx: RunContext, method: EncoderMethod) -> dict:
    """Fit, tune thresholds on validation, score the test split when there is one."""
    from legalft.methods import fusion

    if kind_of(ctx.model) != ENCODER:
        raise UserError(
            f"model={ctx.model_choice} is a causal LM for in-context runs (evaluate.py prompt=... model={ctx.model_choice}); "
            "train.py fine-tunes encoders: model=minilm, inlegalbert, legalbert or longformer."
        )
    source = ctx.source()
    data = one_task(source.load())  # every data error surfaces here, before anything is written
    fusing = fusion.fusion_applies(method.fuse_classical, data, ctx.cv_folds)
    fixed_epochs = bool(ctx.cv_folds) or not data.val
    if fixed_epochs:
        from legalft.methods.encoder_fixed_epochs import fixed_epoch_run, on_one_device

        on_one_device(ctx.trainer_config)

    import lightning as L

    from legalft.models.pretrained import load_encoder_config, load_tokenizer

    L.seed_everything(ctx.seed, workers=True)
    task = data.spec
    tokenizer = load_tokenizer(ctx.model.pretrained)
    # a fixed-epoch run builds its own modules (one per fold, then the final one)
    module = None if fixed_epochs else build_module(ctx.model, method.optimiser, task, data.train)

    ctx.write_config()
    run = ctx.folder
    overlap = {}
    if not secondary_rank():  # rank 0 owns the run folder; a DDP run's other ranks re-run this script
        run.write_task(task, codes=getattr(source, "label_of_code", None))
        run.write_training_data([(task, data.train + data.val)])  # scored examples among these are flagged
        run.write_evidence(EvidenceSelector.fit(data.train + data.val, task.labels))  # names each predicted section's sentences
        overlap = run.flag_overlap([(task, data.test or [])])  # e.g. a test file that repeats training documents
        tokenizer.save_pretrained(encoder_folder(run))
        load_encoder_config(ctx.model.pretrained).save_pretrained(encoder_folder(run))  # rescoring rebuilds from it

    if fixed_epochs:
        return fixed_epoch_run(ctx, method, data, tokenizer, fusing, overlap)
    datamodule = build_datamodule(ctx.build(ctx.datamodule, "datamodule"), module, tokenizer, task, data.train,
                                  data.val, data.test)
    trainer = ctx.trainer()
    resume_field = {}
    if run.finished():
        log.info("%s holds a finished run: its best checkpoint is scored again, nothing is retrained", run.path)
    else:
        resume_field = method.fit(trainer, module, datamodule, run.last_checkpoint).resumed

    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    if trainer.fast_dev_run:  # Lightning saves no checkpoint then: there is nothing to score
        log.info("fast_dev_run: one batch trained and one validated; nothing is saved or scored")
        return metrics
    if trainer.checkpoint_callback and trainer.checkpoint_callback.best_model_score is not None:
        metrics["val/best_macro_f1"] = float(trainer.checkpoint_callback.best_model_score)
    if not trainer.is_global_zero:
        return metrics

    if run.best_checkpoint.is_dir():
        from legalft.checkpoint_io import consolidate

        consolidate(run.best_checkpoint)
    best = load_trained_module(run)
    fuse, fusion_fields = None, {}
    if task.multi_label:
        val_probs = predict(best, datamodule, "val")
        if fusing:  # the classical side learns from what the encoder trained on; both are standardised on validation
            classical = fusion.classical_side(data, data.train, ctx.seed)
            classical_val = classical(data.val)
            stats = fusion.Standardisation.fit(val_probs, classical_val)
            use, held_out = fusion.validation_choice(data, val_probs, classical_val, stats)
            fusion.write_record(run, stats, trained_on="train", seed=ctx.seed, use=use, held_out=held_out,
                                chosen_on="validation")
            fusion_fields = fusion.results_fields(use, held_out, "validation")
            combine = fusion.with_choice(use, stats)
            val_probs = combine(val_probs, classical_val)
            fuse = (lambda probs: combine(probs, classical(data.test))) if data.test else None
        method.tune_thresholds(ctx, task, val_probs, data.val)
    if data.test is None:
        log.info("no test split: scored on nothing; `python evaluate.py run=%s data.test_path=...` scores it later", run.path)
        return metrics
    scores = test_and_write(
        method, ctx, best, datamodule, data.test, task, loggers=trainer.loggers, fuse=fuse,
        model=fusion.model_label(ctx.model_choice, fusion_fields["fusion_choice"]["use"]) if fusion_fields
        else ctx.model_choice, pretrained=str(ctx.model.pretrained), **subset_field(ctx.data), **resume_field,
        **overlap, **fusion_fields,
    )
    metrics.update({f"test/{k}": v for k, v in scores.items() if isinstance(v, float)})
    method.finish(ctx)
    return metrics


def evaluate_encoder_run(ctx: RunContext, method: EncoderMethod) -> dict:
    """Score a trained run's best checkpoint on a test split (the run's own, or an override)."""
    from legalft.models.pretrained import load_tokenizer

    run = ctx.folder
    checkpoint = run.require(run.best_checkpoint, "best checkpoint")
    (scored,) = ctx.test_tasks()
    test = scored.test
    overlap = run.flag_overlap([(scored.spec, test)])
    task = run.read_task()
    module = load_trained_module(run, checkpoint)
    tokenizer = load_tokenizer(str(encoder_folder(run)), key="run")
    datamodule = build_datamodule(ctx.build(ctx.datamodule, "datamodule"), module, tokenizer, task, [], [], test)
    fuse, fields, model = None, {}, run_results.recorded_model(run.path, str(ctx.model.pretrained))
    if run.fusion.exists():
        from legalft.methods import fusion

        fuse, fields = fusion.rescoring_fusion(ctx, task.labels, test)
        # what predicted, from the encoder's name as the run recorded it (or its config gives it)
        model = fusion.model_label(model.removesuffix("+tfidf_logreg"), fields["fusion_choice"]["use"])
    return test_and_write(
        method, ctx, module, datamodule, test, task, fuse=fuse, model=model, pretrained=str(ctx.model.pretrained),
        **overlap, **subset_field(ctx.data), **fields,
    )



class EncoderMethod(TrainedMethod):
    """``method=encoder``: an encoder classifier fine-tuned on one task's train split, fused with
    ``method=classical`` where ``fuse_classical`` says (``legalft.methods.fusion``). AdamW trains the
    encoder's layers at ``lr`` and the new classification head at ``head_lr``."""

    name = METHOD
    run_files = (ENCODER_FOLDER, RunFolder.LABEL_MAP)
    unnamed_runs = True  # the first releases trained encoders alone (and LoRA adapters, which their files show)
    moved_keys = {"model.lr": "lr", "model.head_lr": "head_lr", "model.weight_decay": "weight_decay",
                  "model.warmup_ratio": "warmup_ratio"}
    builds = ("legalft.data.encoder_datamodule.EncoderDataModule",)  # how its documents are batched

    def __init__(self, fuse_classical="auto", lr: float = 3e-5, head_lr: float | None = 1e-3,
                 weight_decay: float = 0.01, warmup_ratio: float = 0.1) -> None:
        self.fuse_classical = fuse_classical
        self.optimiser = {"lr": lr, "head_lr": head_lr, "weight_decay": weight_decay, "warmup_ratio": warmup_ratio}

    def run(self, ctx: RunContext) -> dict:
        return train_encoder(ctx, self)

    def rescore(self, ctx: RunContext) -> dict:
        return evaluate_encoder_run(ctx, self)
