"""Cluster-side configs: distributed trainers, the SLURM launcher, Optuna searches, W&B sweep files,
and how runs are named so that a requeued job finds its own folder."""

from __future__ import annotations

import re

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.utils import get_class
from omegaconf import OmegaConf

from conftest import ROOT
from legalft.configuration.resolvers import register_resolvers, run_id, wandb_run_id
from helpers import compose_train
from helpers import CONF

register_resolvers()


def compose_with_hydra(overrides: list[str], config_name: str = "train"):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name, overrides=overrides, return_hydra_config=True)


@pytest.mark.parametrize("trainer,strategy", [
    ("ddp", "ddp"), ("deepspeed_zero2", {"stage": 2}), ("deepspeed_zero3", {"stage": 3}),
])
def test_multigpu_trainers_take_their_size_from_slurm(trainer, strategy, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_NTASKS_PER_NODE", "4")
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "2")
    cfg = compose_train([f"trainer={trainer}"], tmp_path)
    assert (cfg.trainer.devices, cfg.trainer.num_nodes) == (4, 2)
    chosen = OmegaConf.to_container(cfg.trainer.strategy) if OmegaConf.is_config(cfg.trainer.strategy) else cfg.trainer.strategy
    if isinstance(strategy, dict):
        assert chosen == {"_target_": "legalft.training.deepspeed_strategy.DeepSpeedWithCPU", **strategy}
    else:
        assert chosen == strategy
    assert cfg.trainer.precision == "bf16-mixed" and cfg.trainer.use_distributed_sampler is False


def test_outside_slurm_a_multigpu_trainer_is_one_device(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_NTASKS_PER_NODE", raising=False)
    monkeypatch.delenv("SLURM_JOB_NUM_NODES", raising=False)
    cfg = compose_train(["trainer=ddp"], tmp_path)
    assert (cfg.trainer.devices, cfg.trainer.num_nodes) == (1, 1)


@pytest.mark.slow  # imports DeepSpeed
@pytest.mark.parametrize("trainer,stage,extra,offloaded", [
    ("deepspeed_zero2", 2, [], set()),
    ("deepspeed_zero2", 2, ["+trainer.strategy.offload_optimizer=true"], {"offload_optimizer"}),
    ("deepspeed_zero3", 3, [], set()),
    ("deepspeed_zero3", 3, ["+trainer.strategy.offload_optimizer=true", "+trainer.strategy.offload_parameters=true"],
     {"offload_optimizer", "offload_param"}),
])
def test_deepspeed_trainers_build_a_valid_zero_config(trainer, stage, extra, offloaded, tmp_path):
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig
    from hydra.utils import instantiate
    from lightning.pytorch.strategies import DeepSpeedStrategy

    built = instantiate(compose_train([f"trainer={trainer}", *extra], tmp_path).trainer.strategy)
    assert isinstance(built, DeepSpeedStrategy)
    zero = built.config["zero_optimization"]
    assert zero["stage"] == stage and {k for k in ("offload_optimizer", "offload_param") if k in zero} == offloaded
    validated = DeepSpeedZeroConfig(**zero)  # DeepSpeed's own schema
    assert int(validated.stage) == stage


def test_slurm_launcher_config_extends_submitit(tmp_path):
    cfg = compose_with_hydra(["hydra/launcher=slurm"])
    launcher = cfg.hydra.launcher
    assert launcher._target_ == "hydra_plugins.legalft_launcher.slurm_launcher.SlurmLauncher"
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher

    assert issubclass(get_class(launcher._target_), SlurmLauncher)
    assert launcher.signal_delay_s > 0 and launcher.max_num_timeout > 0 and "slurm/site.sh" in launcher.setup[0]


@pytest.mark.parametrize("search,experiment", [
    ("proslex_optuna", "proslex_inlegalbert"), ("lora_optuna", "legalbench_lora"), ("incontext_optuna", "prompt=zero_shot"),
])
def test_optuna_searches_name_keys_the_config_has(search, experiment):
    if search == "incontext_optuna":  # evaluate.py's: an in-context prompt tuned on the train split
        cfg = compose_with_hydra([f"hparams_search={search}", experiment, "model=smollm2", "data=legalbench",
                                  "optimized_metric=train/hearsay/balanced_accuracy"], config_name="evaluate")
        assert cfg.prompt.score_split == "train"
    else:
        cfg = compose_with_hydra([f"hparams_search={search}", f"experiment={experiment}"])
    sweeper = cfg.hydra.sweeper
    assert sweeper._target_.endswith("OptunaSweeper") and cfg.optimized_metric
    assert sweeper.storage.startswith("sqlite:///") and sweeper.study_name
    for key in sweeper.params:
        assert OmegaConf.select(cfg, key) is not None, key


SWEEPS = sorted((CONF.parent / "sweeps").glob("*.yaml"))


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: p.stem)
def test_wandb_sweep_runs_its_program_with_overrides_the_config_has(path, tmp_path):
    sweep = yaml.safe_load(path.read_text())
    assert (ROOT / sweep["program"]).exists() and sweep["metric"]["goal"] in ("minimize", "maximize")
    command = sweep["command"]
    assert command[:3] == ["${env}", "${interpreter}", "${program}"] and command[-1] == "${args_no_hyphens}"
    fixed = command[3:-1]
    # What the agent passes for one sampled point: key=value per parameter.
    sampled = [f"{key}={spec['values'][0] if 'values' in spec else spec['min']}" for key, spec in sweep["parameters"].items()]
    cfg = compose_train(fixed + sampled, tmp_path, config_name=sweep["program"].removesuffix(".py"))
    assert cfg.logger.wandb._target_.endswith("WandbLogger")
    for key in sweep["parameters"]:
        assert OmegaConf.select(cfg, key) is not None, key


def test_run_id_follows_slurm_then_wandb_then_the_clock(monkeypatch):
    monkeypatch.setenv("LEGALFT_RUN_ID", "slurm-42")
    assert run_id() == "slurm-42"
    monkeypatch.delenv("LEGALFT_RUN_ID")
    monkeypatch.setenv("WANDB_SWEEP_ID", "sw")
    monkeypatch.setenv("WANDB_RUN_ID", "abc123")
    assert run_id() == "wandb-abc123"
    monkeypatch.delenv("WANDB_SWEEP_ID")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d", run_id())


def test_wandb_run_id_is_kept_in_the_run_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_RUN_ID", raising=False)
    first = wandb_run_id(str(tmp_path))
    assert wandb_run_id(str(tmp_path)) == first == (tmp_path / "wandb_run_id").read_text()
    monkeypatch.setenv("WANDB_RUN_ID", "agent1")
    assert wandb_run_id(str(tmp_path / "other")) == "agent1"
