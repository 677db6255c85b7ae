"""What a run folder's saved config may do when read back: whether the folder can be rescored at all,
which registered classes its ``_target_``s may build (checked before anything is built), and which
method rescores it. A run folder may come from someone else, so nothing in it is trusted."""

from __future__ import annotations

import os
from pathlib import Path

from legalft.foundation import registry
from legalft.foundation.errors import UserError
from legalft.runs.folder import RunFolder

def check_rescorable(folder: Path) -> None:
    """``evaluate.py run=DIR``: refuse, before anything is created or written, a folder that is
    missing, is not a run folder, holds an in-context run (nothing trained to rescore), or is read-only."""
    import yaml

    key = f"run={folder}"
    if not folder.exists():
        raise UserError(f"{key}: no such folder. Pass a run folder that train.py wrote (under checkpoints/).")
    if not folder.is_dir():
        raise UserError(f"{key}: not a folder. Pass a run folder that train.py wrote (under checkpoints/).")
    config = folder / "config.yaml"
    if not config.is_file():
        raise UserError(f"{key}: not a run folder (it has no config.yaml). Pass a folder that train.py wrote, "
                        "such as checkpoints/<run_name>/<time>.")
    try:
        saved = yaml.safe_load(config.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise UserError(f"{config}: not a readable config ({type(err).__name__}); the run folder is damaged.") from None
    if not isinstance(saved, dict):
        raise UserError(f"{config}: not a run config (a YAML mapping); the run folder is damaged.")
    from legalft.runs.migrations import FORMER_GROUPS, current_target

    method = saved.get("method")
    target = method.get("_target_") if isinstance(method, dict) else None
    if target is not None and not isinstance(target, str):
        raise UserError(f"{config}: method._target_ is a {type(target).__name__} ({str(target)[:60]}), not the name of "
                        "a class; the run folder is damaged. Nothing was built.")
    recorded = registry.method_of_target(current_target(target))
    # evaluate.py prompt=... of older releases wrote a config without a trainer and with its prompt group
    # under another name
    prompted = "trainer" not in saved and any(old in saved for old, new in FORMER_GROUPS.items() if new == "prompt")
    if prompted or (recorded is not None and not recorded.trains):
        raise UserError(f"{key}: an in-context run; it has no trained weights to rescore. To score it again, run "
                        "evaluate.py prompt=... model=... data=... with hydra.run.dir unset (a new run folder).")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"{key}: the folder is read-only, and scoring writes metrics.json and predictions.jsonl "
                        f"into it. Copy it (cp -r {folder} /tmp/rescored) and pass run=/tmp/rescored.")


def instantiate_from_run(node, key: str, config_file: Path):
    """``hydra.utils.instantiate`` for a config read from a run folder, refusing every ``_target_``
    (at any depth) that is not a registered method, data source or batching class (``legalft.foundation.registry``).
    A run folder may come from someone else (a shared cluster folder, a download), and Hydra's
    ``_target_`` names any callable: this is checked before anything is built."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    allowed = registry.buildable_targets()

    def check(tree, where):
        if isinstance(tree, dict):
            for name, value in tree.items():
                here = f"{where}.{name}"
                if name == "_target_" and (not isinstance(value, str) or value not in allowed):
                    raise UserError(f"{config_file}: {here}={value!r} is not one of the classes a run folder may name "
                                    f"({', '.join(sorted(allowed))}); nothing was built. Use a run folder written "
                                    "by this project, or fix the key.")
                check(value, here)
        elif isinstance(tree, list):
            for i, value in enumerate(tree):
                check(value, f"{where}[{i}]")
        elif isinstance(tree, str) and "${" in tree:  # saved configs are resolved: a resolver call is planted
            raise UserError(f"{config_file}: {where}={tree!r} is an interpolation, which a saved run config never "
                            "holds; nothing was built. Use a run folder written by this project, or fix the key.")

    if OmegaConf.is_config(node):
        check(OmegaConf.to_container(node, resolve=False), key)
    if not OmegaConf.is_dict(node) or "_target_" not in node:
        raise UserError(f"{config_file}: {key} is not a mapping with a _target_ (it holds "
                        f"{str(OmegaConf.to_container(node) if OmegaConf.is_config(node) else node)[:60]}); the run "
                        "folder is damaged. Nothing was built.")
    try:
        return instantiate(node)
    except Exception as err:
        cause = err
        while cause is not None and not isinstance(cause, UserError):
            cause = cause.__cause__
        if cause is not None:  # the class's own message about its settings
            raise cause from None
        root = err
        while root.__cause__ is not None:
            root = root.__cause__
        raise UserError(f"{config_file}: {key} cannot be built from the settings it holds ({type(root).__name__}: "
                        f"{str(root)[:200]}); the run folder is damaged or written by another version. Nothing "
                        "was built.") from None


def load_run_config(run: RunFolder):
    """A trained run folder's config.yaml, read in this release's layout (``saved_layout.in_current_layout``).
    Run folders written before methods were named hold ``adapters/`` when they are LoRA runs, and are
    encoder runs otherwise."""
    from omegaconf import OmegaConf

    from legalft.runs.migrations import in_current_layout

    config = run.require(run.config, "config.yaml")
    try:
        saved = OmegaConf.to_container(OmegaConf.load(config))
    except Exception as err:  # YAML OmegaConf does not take (a key twice, a key that is not text)
        raise UserError(f"{config}: not a readable run config ({type(err).__name__}: {str(err).splitlines()[0][:120]}); "
                        "the run folder is damaged.") from None
    if not isinstance(saved, dict):
        raise UserError(f"{config}: not a run config (a YAML mapping); the run folder is damaged.")
    if "method" not in saved:
        saved["method"] = {"_target_": method_by_files(run)}
    return OmegaConf.create(in_current_layout(saved))


def method_by_files(run: RunFolder) -> str:
    """The ``_target_`` of the trained method whose files a folder written before runs recorded their method holds
    most of (``legalft.runs.migrations.FILES_OF_RUNS``); where it holds none of anyone's, the method such folders
    are (``UNNAMED_RUNS``)."""
    from legalft.runs.migrations import FILES_OF_RUNS, UNNAMED_RUNS

    held = {name: sum((run.path / file).exists() for file in files) for name, files in FILES_OF_RUNS.items()}
    best = max(held.values(), default=0)
    chosen = {registry.method_class(name) for name, count in held.items() if count == best and count > 0} or {
        registry.method_class(UNNAMED_RUNS)}
    if len(chosen) != 1 or None in chosen:
        raise UserError(f"{run.config}: names no method, and the folder's files do not say which trained it; the run "
                        "folder is damaged or not one this project wrote.")
    return registry.target_of(chosen.pop())


def recorded_method(run: RunFolder):
    """The method a trained run folder recorded (``method`` in its config.yaml), to rescore it with."""
    return instantiate_from_run(load_run_config(run).method, "method", run.config)
