"""Every config composes, resolves and names importable targets; typos fail in Hydra, naming the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from hydra.utils import get_class
from omegaconf import OmegaConf, open_dict

from conftest import ROOT
from legalft.configuration.resolvers import register_resolvers
from helpers import compose_train

CONF = ROOT / "conf"
register_resolvers()


def options(group: str) -> list[str]:
    """A group's selectable options (files starting with _ are shared defaults, not options)."""
    return sorted(p.stem for p in (CONF / group).glob("*.yaml") if not p.stem.startswith("_"))


def targets(node) -> list[str]:
    found = []
    if OmegaConf.is_dict(node):
        for key, value in node.items():
            if key == "_target_":
                found.append(value)
            else:
                found += targets(value)
    return found


TRAIN_CASES = [
    *[[f"data={o}"] for o in options("data") if o != "from_run"],
    *[[f"model={o}"] for o in options("model") if o != "api"],  # api: in-context runs only (evaluate.py)
    *[[f"trainer={o}"] for o in options("trainer")],
    *[[f"logger={o}"] for o in options("logger")],
    *[[f"callbacks={o}"] for o in options("callbacks")],
    *[[f"method={o}"] for o in options("method")],
    *[[f"experiment={o}"] for o in options("experiment")],
    *[["experiment=legalbench_lora", f"lora={o}"] for o in options("lora")],
    *[["experiment=legalbench_lora", f"model={o}"] for o in ("smollm2", "llama3_8b", "mistral_7b", "qwen2_7b")],
]


@pytest.mark.parametrize("overrides", TRAIN_CASES, ids=lambda o: " ".join(o))
def test_train_config_composes_and_resolves(overrides, tmp_path):
    from legalft.apps.config_checks import unknown_keys
    from legalft.data.proslex import check_label_map

    cfg = compose_train(overrides, tmp_path)
    OmegaConf.resolve(cfg)
    assert cfg.model.pretrained and cfg.data._target_
    for target in targets(cfg):
        get_class(target)  # raises when the dotted name does not import
    assert unknown_keys(cfg) == []  # every key of the method and data nodes is one their class takes
    if "label_map" in cfg.data:
        check_label_map(OmegaConf.to_container(cfg.data.label_map))


def test_a_description_with_an_unquoted_comma_is_named_not_cut():
    import yaml

    from legalft.data.proslex import check_label_map
    from legalft.foundation.errors import UserError

    broken = yaml.safe_load("s2: {label: IPC 201, description: Causing disappearance of evidence, or giving false "
                            "information}")
    with pytest.raises(UserError, match=r"data.label_map.s2: unknown key\(s\) \['or giving false information'\]"):
        check_label_map(broken)
    shipped = yaml.safe_load((CONF / "data" / "proslex.yaml").read_text())["label_map"]
    assert shipped["s2"]["description"] == ("Causing disappearance of evidence of offence, or giving false information "
                                            "to screen offender")


def test_every_group_has_a_config_that_is_tested():
    for group in ("data", "method", "prompt", "model", "trainer", "logger", "callbacks", "experiment", "paths", "hydra"):
        assert options(group), group


def test_evaluate_config_composes_with_run_and_data_overrides():
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("evaluate", overrides=["run=some/run", "data.test_path=/x/Test"])
    assert cfg.run == "some/run" and cfg.data.test_path == "/x/Test" and cfg.data.root is None


def compose_evaluate(overrides: list[str]):
    """As evaluate.py composes: its ${hydra:...} values (run_name) resolve whatever ran before this test."""
    from hydra.core.hydra_config import HydraConfig

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("evaluate", overrides=overrides, return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    with open_dict(cfg):
        del cfg.hydra
    return cfg


@pytest.mark.parametrize("prompt", options("prompt"))
@pytest.mark.parametrize("data", ["legalbench", "proslex", "proslex_sample"])
def test_prompt_configs_compose_and_resolve(prompt, data):
    cfg = compose_evaluate([f"prompt={prompt}", "model=smollm2", f"data={data}", "paths.root_dir=/x"])
    OmegaConf.resolve(cfg)
    assert cfg.prompt.answer in ("generate", "score") and cfg.model.pretrained.endswith(".gguf")
    get_class(cfg.data._target_)


@pytest.mark.parametrize("overrides", [
    ["engine=local", "model=smollm2"],
    ["engine=server", "engine.base_url=http://node:8000/v1", "model=llama3_8b"],
    ["engine=openai", "model=api", "model.pretrained=gpt-4o-mini"],
], ids=lambda o: o[0])
def test_engine_configs_compose_and_resolve(overrides):
    cfg = compose_evaluate(["prompt=base_prompt", "data=legalbench", "paths.root_dir=/x", *overrides])
    OmegaConf.resolve(cfg)
    assert cfg.engine.backend in ("local", "server") and cfg.model.pretrained
    if cfg.engine.backend == "server":
        assert cfg.engine.base_url.endswith("/v1") and cfg.engine.cache == "/x/cache/requests.sqlite"
        assert (cfg.engine.api_key_env, cfg.engine.chat_only) == (("OPENAI_API_KEY", True) if overrides[0] == "engine=openai"
                                                                   else (None, False))


def test_target_only_on_leaf_configs(tmp_path):
    """`_target_` nodes hold plain values, never another `_target_` below them."""
    cfg = compose_train(["experiment=quickstart"], tmp_path)

    def check(node, inside_target: bool):
        if OmegaConf.is_dict(node):
            has_target = "_target_" in node
            assert not (has_target and inside_target), node
            for value in node.values():
                check(value, inside_target or has_target)

    check(cfg, False)


def test_override_typo_is_a_hydra_error_naming_the_key(tmp_path):
    with pytest.raises(ConfigCompositionException, match="model.lrr"):
        compose_train(["model.lrr=1e-5"], tmp_path)


def test_train_py_rejects_a_typo_before_doing_anything(tmp_path):
    result = subprocess.run(
        [sys.executable, "train.py", "trainer.max_epoch=3", f"hydra.run.dir={tmp_path}/run"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1
    assert "Could not override 'trainer.max_epoch'" in result.stderr
    assert not (tmp_path / "run").exists()


def test_minilm_resolves_to_the_packaged_model(tmp_path):
    cfg = compose_train(["model=minilm"], tmp_path)
    assert (Path(cfg.model.pretrained) / "model.safetensors").exists()


def test_gpu_experiments_use_bf16(tmp_path):
    for name in ("proslex_inlegalbert", "proslex_legalbert", "proslex_longformer"):
        cfg = compose_train([f"experiment={name}"], tmp_path)
        assert cfg.trainer.precision == "bf16-mixed" and cfg.data.name == "proslex"


def test_wandb_logger_is_offline_without_a_key(tmp_path, monkeypatch):
    from hydra.utils import instantiate

    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    cfg = compose_train(["logger=wandb"], tmp_path)
    assert cfg.logger.wandb.offline is True
    logger = instantiate(cfg.logger.wandb)
    assert logger._offline and logger.save_dir == str(tmp_path)
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    import socket

    with socket.socket() as server:  # a W&B server that answers (legalft.configuration.resolvers.wandb_reachable)
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{server.getsockname()[1]}")
        assert compose_train(["logger=wandb"], tmp_path).logger.wandb.offline is False


def test_help_lists_the_groups_a_user_chooses_from_and_not_the_internal_bases():
    from legalft.configuration.resolvers import config_groups

    lines = dict(line.split(": ", 1) for line in config_groups().splitlines())
    assert "_encoder" not in lines["model"] and "minilm" in lines["model"].split(", ")
    assert "_multigpu" not in lines["trainer"] and "hydra" not in lines
    from legalft.foundation import registry

    assert lines["method"] == ", ".join(sorted(registry.method_classes()))  # each method has its config


@pytest.mark.parametrize("overrides,name", [
    (["experiment=quickstart"], "encoder_proslex_sample_minilm"),
    (["experiment=quickstart", "data=proslex"], "encoder_proslex_minilm"),  # filed under the data it trains on
    (["experiment=proslex_inlegalbert", "data=fire2026"], "encoder_fire2026_inlegalbert"),
    (["data=proslex", "model=minilm"], "encoder_proslex_minilm"),
])
def test_the_run_name_follows_the_composed_data(overrides, name, tmp_path):
    cfg = compose_train(overrides, tmp_path)
    assert cfg.run_name == name
