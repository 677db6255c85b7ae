"""``method=encoder``: fine-tuning an encoder classifier, and scoring a finished run on a test split."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from omegaconf import DictConfig, OmegaConf

from legalft import registry
from legalft.data.example import Task
from legalft.errors import UserError
from legalft.evaluation import run_results
from legalft.evaluation.metrics import tune_thresholds
from legalft.evaluation.predictions import targets_of
from legalft.methods.encoder_model import (METHOD, build_datamodule, build_module, load_trained_module, predict,
                                           subset_field, test_and_write)
from legalft.run_folder import RunFolder
from legalft.saved_config import instantiate_from_run, load_run_config
from legalft.ranks import secondary_rank

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


def train_encoder(cfg: DictConfig, run: RunFolder, model_choice: str, method: EncoderMethod) -> dict:
    """Fit, tune thresholds on validation, score the test split when there is one."""
    from hydra.utils import instantiate

    from legalft.methods import fusion

    if "_target_" not in cfg.model:
        raise UserError(
            f"model={model_choice} is a causal LM for in-context runs (evaluate.py prompt=... model={model_choice}); "
            "train.py fine-tunes encoders: model=minilm, inlegalbert, legalbert or longformer."
        )
    source = instantiate(cfg.data)
    data = one_task(source.load())  # every data error surfaces here, before anything is written
    fusing = fusion.fusion_applies(method.fuse_classical, data, cfg.data.get("cv_folds"))
    fixed_epochs = bool(cfg.data.get("cv_folds")) or not data.val
    if fixed_epochs:
        from legalft.methods.encoder_fixed_epochs import fixed_epoch_run, on_one_device

        on_one_device(cfg)

    import lightning as L

    from legalft.checkpoint_io import checkpoint_to_resume, resumed_from
    from legalft.training import build_trainer
    from legalft.models.pretrained import load_encoder_config, load_tokenizer

    L.seed_everything(cfg.seed, workers=True)
    task = data.spec
    tokenizer = load_tokenizer(cfg.model.pretrained)
    # a fixed-epoch run builds its own modules (one per fold, then the final one)
    module = None if fixed_epochs else build_module(cfg, method.optimiser, task, data.train)

    resolved = OmegaConf.to_yaml(cfg, resolve=True)
    if not secondary_rank():  # rank 0 owns the run folder; a DDP run's other ranks re-run this script
        run.write_config(resolved)
        run.write_task(task, codes=getattr(source, "label_of_code", None))
        run.write_training_data(data.train + data.val)  # rescoring refuses to call these test data
        tokenizer.save_pretrained(run.encoder)
        load_encoder_config(cfg.model.pretrained).save_pretrained(run.encoder)  # rescoring rebuilds from it

    if fixed_epochs:
        return fixed_epoch_run(cfg, method.optimiser, run, data, tokenizer, model_choice, resolved, fusing)
    datamodule = build_datamodule(
        instantiate(cfg.datamodule), module, tokenizer, task, data.train, data.val, data.test
    )
    trainer = build_trainer(cfg)
    resume_field = {}
    if run.finished():
        log.info("%s holds a finished run: its best checkpoint is scored again, nothing is retrained", run.path)
    else:
        resume = checkpoint_to_resume(run.last_checkpoint)
        if resume:
            log.info("resuming from %s", resume)
        resume_field = resumed_from(resume)
        trainer.fit(module, datamodule=datamodule, ckpt_path=resume)

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
    fuse = None
    if task.multi_label:
        val_probs = predict(best, datamodule, "val")
        if fusing:  # the classical side learns from what the encoder trained on; both are standardised on validation
            classical = fusion.classical_side(data, data.train, cfg.seed)
            classical_val = classical(data.val)
            stats = fusion.Standardisation.fit(val_probs, classical_val)
            fusion.write_record(run, stats, trained_on="train", seed=cfg.seed)
            val_probs = stats.fuse(val_probs, classical_val)
            fuse = (lambda probs: stats.fuse(probs, classical(data.test))) if data.test else None
        run.write_thresholds(task.labels, tune_thresholds(val_probs, targets_of(data.val, task)))
    if data.test is None:
        log.info("no test split: scored on nothing; `python evaluate.py run=%s data.test_path=...` scores it later", run.path)
        return metrics
    scores = test_and_write(
        run, best, datamodule, data.test, task, loggers=trainer.loggers, fuse=fuse,
        model=model_choice, seed=cfg.seed, config_digest=run_results.config_digest(resolved),
        pretrained=str(cfg.model.pretrained), **subset_field(cfg.data), **resume_field,
    )
    metrics.update({f"test/{k}": v for k, v in scores.items() if isinstance(v, float)})
    run.keep_checkpoints(cfg)
    return metrics


def evaluate_encoder_run(run: RunFolder, data_overrides: Mapping, loggers=()) -> dict:
    """Score a trained run's best checkpoint on a test split (the run's own, or an override)."""
    from legalft.config import with_data_overrides

    from legalft.models.pretrained import load_tokenizer

    checkpoint = run.require(run.best_checkpoint, "best checkpoint")
    run_cfg = load_run_config(run)
    (scored,) = instantiate_from_run(with_data_overrides(run_cfg.data, data_overrides), "data", run.config).load_test()
    test = scored.test
    overlap = run.overlap_with_training(test)
    if overlap:
        log.warning("%d of the %d scored documents are ones the run trained or validated on (same id or text): "
                    "the scores are recorded as not comparable", overlap, len(test))
    elif overlap is None:
        log.info("run folder %s records no training data (written by an older version): overlap not checked", run.path)
    task = run.read_task()
    module = load_trained_module(run, checkpoint)
    tokenizer = load_tokenizer(str(run.encoder), key="run")
    datamodule = build_datamodule(instantiate_from_run(run_cfg.datamodule, "datamodule", run.config), module, tokenizer,
                                  task, [], [], test)
    fuse = None
    if run.fusion.exists():
        from legalft.methods.fusion import rescoring_fusion

        fuse = rescoring_fusion(run, run_cfg, task.labels, test)
    return test_and_write(
        run, module, datamodule, test, task, loggers=loggers, fuse=fuse,
        model=run_results.recorded_model(run.path, str(run_cfg.model.pretrained)), seed=run_cfg.seed,
        config_digest=run_results.config_digest(run.config.read_text()), pretrained=str(run_cfg.model.pretrained),
        **({"comparable": False, "overlap_with_training": overlap} if overlap else {}), **subset_field(run_cfg.data),
    )


@registry.method(METHOD, aliases=("finetune",))
class EncoderMethod:
    """``method=encoder``: an encoder classifier fine-tuned on one task's train split, fused with
    ``method=classical`` where ``fuse_classical`` says (``legalft.methods.fusion``). AdamW trains the
    encoder's layers at ``lr`` and the new classification head at ``head_lr``."""

    def __init__(self, fuse_classical="auto", lr: float = 3e-5, head_lr: float | None = 1e-3,
                 weight_decay: float = 0.01, warmup_ratio: float = 0.1) -> None:
        self.fuse_classical = fuse_classical
        self.optimiser = {"lr": lr, "head_lr": head_lr, "weight_decay": weight_decay, "warmup_ratio": warmup_ratio}

    def run(self, cfg: DictConfig, run: RunFolder, model_choice: str) -> dict:
        return train_encoder(cfg, run, model_choice, self)

    def rescore(self, run: RunFolder, data_overrides: Mapping, loggers=()) -> dict:
        return evaluate_encoder_run(run, data_overrides, loggers)
