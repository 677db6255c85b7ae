"""A report in W&B: its tables, figures and folder, for reports made with ``logger=wandb`` or from inside
a W&B run of the caller's."""

from __future__ import annotations

import logging
import re
from pathlib import Path

log = logging.getLogger(__name__)


def log_to_active_wandb_run(long) -> bool:
    """compare() called inside a W&B run of the caller's (a notebook, a script): the long table goes to it."""
    try:
        import wandb
    except ImportError:
        return False
    if wandb.run is None:
        return False
    wandb.log({"comparison": wandb.Table(dataframe=long)})
    return True


def log_report_to_wandb(cfg, out: Path) -> None:
    """``logger=wandb``: the report as a W&B run of its own (job type ``report``): the long table, the
    figures, the significance tables, and the whole report folder as an artifact. Its W&B files go under
    ``paths.checkpoints_dir``, never into ``out``, which holds only the report."""
    import pandas as pd
    import wandb
    from omegaconf import OmegaConf

    from legalft.training.trainer import resolved_config

    settings = cfg.logger.wandb
    # the command's config without the logger group: the report is a W&B run of its own, and resolving
    # logger.wandb.id would make a run folder's wandb_run_id file where the command was started
    composed = OmegaConf.masked_copy(cfg, [key for key in cfg if key != "logger"])
    run = wandb.init(project=settings.project, job_type="report", name=f"report {out.name}", tags=list(settings.tags),
                     dir=str(Path(cfg.paths.checkpoints_dir)), mode="offline" if settings.offline else "online",
                     config={"runs": OmegaConf.to_container(cfg.runs) if OmegaConf.is_list(cfg.runs) else cfg.runs,
                             "out": str(out), "report": OmegaConf.to_container(cfg.report, resolve=True),
                             "config": resolved_config(composed)})
    tables = {name: wandb.Table(dataframe=pd.read_csv(out / f"{name}.csv"))
              for name in ("table", "significance_tasks", "significance_categories", "legalevalhub_categories",
                           "legalevalhub_leaderboards") if (out / f"{name}.csv").exists()}
    run.log({**tables, **{f"figures/{p.stem}": wandb.Image(str(p)) for p in sorted(out.glob("*.png"))}})
    artifact = wandb.Artifact(f"report-{re.sub(r'[^A-Za-z0-9_.-]', '_', out.name)}", type="report")
    artifact.add_dir(str(out))
    run.log_artifact(artifact)
    run.finish()
    log.info("report logged to W&B (%s)", "offline: wandb sync uploads it" if settings.offline else run.url)
