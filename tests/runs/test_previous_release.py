"""Run folders of the previous release read in the current layout (docs/run-folders.md, "Older run
folders"). tests/previous_release/ holds config.yaml files that release wrote: an encoder run
(`experiment=quickstart debug=limit`), a LoRA run (`experiment=legalbench_lora data.regime=per_task
data.tasks=[hearsay,abercrombie]`) and a SetFit run (`method=setfit data=legalbench`); only their
folder names were changed. The slow tests rescore run folders rewritten in that layout
(test_end_to_end, test_lora)."""

from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from helpers import compose_train

PREVIOUS = Path(__file__).parents[1] / "previous_release"
MOVED = {"encoder": ("lr", "head_lr", "weight_decay", "warmup_ratio"),
         "lora": ("lr", "weight_decay", "warmup_ratio", "regime", "heldout", "folds")}
SAME_COMMAND = {  # what the current release composes for the command that wrote each config
    "encoder": ["experiment=quickstart", "debug=limit", "checkpoints.keep_optimizer=true",
                "model.chunk_embedding=mean"],  # that release's quick start read the mean of a window's tokens
    "lora": ["experiment=legalbench_lora", "data.root=/data/legalbench", "data.tasks=[hearsay,abercrombie]",
             "method.regime=per_task", "trainer.max_epochs=1", "protocol.limit=6", "logger=none",
             "checkpoints.keep_optimizer=true"],
    "setfit": ["method=setfit", "data=legalbench", "data.root=/data/legalbench", "data.tasks=[hearsay]"],
}
for command in SAME_COMMAND.values():  # that release kept last.ckpt (checkpoints.keep_last=true, now keep_optimizer)
    if "checkpoints.keep_optimizer=true" not in command:
        command.append("checkpoints.keep_optimizer=true")
    command.append("protocol.refit=false")  # and its final model was the one chosen on
MACHINE_SPECIFIC = ("paths", "run_name", "hydra")  # the folder it ran in, and the debug group's run folder
SCORING_COMMANDS = ("explanations",)  # how results are scored is the scoring command's, not the saved run's


def saved_run(tmp_path, name: str):
    from legalft.runs.folder import RunFolder

    run = RunFolder(tmp_path / name)
    run.path.mkdir()
    run.config.write_text((PREVIOUS / f"{name}.yaml").read_text())
    return run


def without(tree: dict) -> dict:
    """``tree`` without what depends on the machine (the top-level keys ``MACHINE_SPECIFIC``, every path) and
    what a scoring command sets for itself (``SCORING_COMMANDS``)."""

    def paths_out(value):
        if isinstance(value, dict):
            return {k: paths_out(v) for k, v in value.items()}
        if isinstance(value, list):
            return [paths_out(v) for v in value]
        return "<path>" if isinstance(value, str) and "/" in value else value

    tree = {k: v for k, v in tree.items() if k not in MACHINE_SPECIFIC + SCORING_COMMANDS}
    tree.get("datamodule", {}).pop("cache_dir", None)  # where this machine keeps tokenised windows
    return paths_out(tree)


@pytest.mark.parametrize("name", ["encoder", "lora", "setfit"])
def test_a_previous_release_config_reads_as_this_release_composes_the_same_command(name, tmp_path):
    from legalft.runs.saved_config import load_run_config

    from legalft.runs.saved_layout import in_current_layout

    read = OmegaConf.to_container(load_run_config(saved_run(tmp_path, name)))
    # as a resumed run compares them: the windows a LoRA or SetFit run's model composes are read by no step of it
    composed = in_current_layout(OmegaConf.to_container(compose_train(SAME_COMMAND[name], tmp_path), resolve=True))
    assert yaml.safe_dump(without(read)) == yaml.safe_dump(without(composed))


@pytest.mark.parametrize("name", ["encoder", "lora"])
def test_moved_settings_keep_the_values_the_run_trained_with(name, tmp_path):
    from legalft.runs.saved_config import load_run_config

    old = yaml.safe_load((PREVIOUS / f"{name}.yaml").read_text())
    old_place = {key: group for group in ("model", "lora", "data") for key in MOVED[name] if key in old.get(group, {})}
    assert set(old_place) == set(MOVED[name])  # the fixture holds every moved key
    cfg = load_run_config(saved_run(tmp_path, name))
    for key, group in old_place.items():
        assert cfg.method[key] == old[group][key] and key not in cfg[group]
    if name == "lora":
        assert "seed" not in cfg.data  # the LegalBench source's seed is the run's own now


def test_the_recorded_methods_build_with_the_moved_settings(tmp_path):
    from legalft.runs.saved_config import instantiate_from_run, load_run_config, recorded_method

    encoder = recorded_method(saved_run(tmp_path, "encoder"))
    assert encoder.optimiser == {"lr": 1.5e-4, "head_lr": 1e-3, "weight_decay": 0.01, "warmup_ratio": 0.1}
    lora_run = saved_run(tmp_path, "lora")
    lora = recorded_method(lora_run)
    assert (lora.regime, lora.heldout, lora.folds, lora.optimiser["lr"]) == ("per_task", None, 5, 2e-4)
    source = instantiate_from_run(load_run_config(lora_run).data, "data", lora_run.config)  # no longer takes regime
    assert source.task_names == ["hearsay", "abercrombie"]
    setfit = recorded_method(saved_run(tmp_path, "setfit"))
    assert setfit.lr == 2e-5  # its own, not the MiniLM config's 1.5e-4 that setfit runs carried unused


def test_a_previous_release_run_resumes_under_the_same_settings(tmp_path):
    """A requeued job of the previous release, rerun by this one: the saved config and the requested
    one differ only in layout, which is not a change of settings."""
    from legalft.runs.saved_layout import config_differences, in_current_layout

    saved = (PREVIOUS / "lora.yaml").read_text()
    requested = yaml.safe_dump(in_current_layout(yaml.safe_load(saved)))
    assert "regime" in yaml.safe_load(requested)["method"]
    assert config_differences(saved, requested) == []
    changed = requested.replace("regime: per_task", "regime: pooled")
    assert config_differences(saved, changed) == ["method.regime: 'per_task' -> 'pooled'"]
    encoder = (PREVIOUS / "encoder.yaml").read_text()
    with_cache = yaml.safe_load(encoder)
    with_cache["datamodule"]["cache_dir"] = "/scratch/cache/windows"  # this release's key: where windows are kept
    assert config_differences(encoder, yaml.safe_dump(with_cache)) == []
