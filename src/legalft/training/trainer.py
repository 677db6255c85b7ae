"""What every Lightning fit shares, built in one place: loggers, callbacks and trainer plugins."""

from __future__ import annotations


def instantiate_loggers(cfg) -> list:
    from hydra.utils import instantiate

    loggers = [instantiate(c) for c in (cfg.get("logger") or {}).values()]
    for logger in loggers:
        note_logger_folder(logger)
    if loggers:  # the whole run, as composed: data, trainer, prompt and batch settings, not only the results' record
        config = resolved_config(cfg)
        for logger in loggers:
            logger.log_hyperparams({"config": config})
    return loggers


def resolved_config(cfg) -> dict:
    from omegaconf import OmegaConf

    try:
        return OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # outside a Hydra run (a ${hydra:...} value): as written
        return OmegaConf.to_container(cfg, resolve=False)


def note_logger_folder(logger) -> None:
    """The folder a logger is about to create in the run folder is this command's own (``legalft.foundation.io``)."""
    from pathlib import Path

    from legalft.foundation.io import note_created

    if type(logger).__name__ == "WandbLogger":
        folder = Path(logger.save_dir) / "wandb"  # W&B's own layout under save_dir
    else:
        folder = Path(logger.root_dir) if getattr(logger, "root_dir", None) else None
    if folder is not None and not folder.exists():
        note_created(folder)


def build_trainer(cfg, callbacks: list | None = None, with_loggers: bool = True, **overrides):
    """``cfg.trainer`` with the run's loggers, ``callbacks`` (default: ``cfg.callbacks``) and plugins."""
    import lightning as L
    from hydra.utils import instantiate

    from legalft.training.checkpoints import trainer_plugins

    loggers = instantiate_loggers(cfg) if with_loggers else []
    if callbacks is None:
        callbacks = [instantiate(c) for c in (cfg.get("callbacks") or {}).values()]
    if not loggers:  # logger=none: nothing to report learning rates to (Lightning refuses the monitor)
        callbacks = [c for c in callbacks if not isinstance(c, L.pytorch.callbacks.LearningRateMonitor)]
    return instantiate(cfg.trainer, callbacks=callbacks, logger=loggers or False, plugins=trainer_plugins(),
                       **overrides)
