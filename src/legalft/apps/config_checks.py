"""Settings checked before a command loads anything heavy or makes any folder: every value of the
wrong type or out of range is named, all of them in one message, instead of a traceback from deep
inside Lightning or the tokenizer minutes later.

The schema is keyed by setting names, not by where a setting sits: ``*.lr`` holds for every learning
rate of every method (``method.lr``, ``method.head_lr``), so a new group's settings are checked as
soon as they use the project's names; a method declares checks of its own settings on its class
(``Method.settings``), read here for the chosen method. A name neither names is not checked. It runs in the run
folder's Hydra callback (``legalft.apps.run_guard``), before Hydra creates the folder, and imports neither
torch nor transformers.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from omegaconf import DictConfig, ListConfig, OmegaConf

from legalft.foundation.checks import Check, names, number, one_of, or_null, whole
from legalft.foundation.errors import UserError
from legalft.runs.migrations import RENAMED

def schema() -> list[tuple[str, Check, str]]:
    """(key pattern, check, what the value must be). Patterns are matched against dotted keys."""
    from legalft.data.chunking import LAST_WINDOWS
    from legalft.models.components import CHUNK_EMBEDDINGS, POOLINGS
    from legalft.models.kinds import KINDS

    fraction = "null or a fraction between 0 and 1 (exclusive)"
    return [
        ("seed", whole(0), "a whole number, 0 or more"),
        ("*.seed", whole(0), "a whole number, 0 or more"),
        ("*.lr", number(above=0), "a positive number (e.g. 3e-5)"),
        ("*_lr", number(above=0), "a positive number (e.g. 1e-3)"),
        ("*.weight_decay", number(least=0), "a number, 0 or more"),
        ("*.warmup_ratio", number(least=0, below=1), "a number from 0 up to (not including) 1"),
        ("*.dropout", number(least=0, below=1), "a number from 0 up to (not including) 1"),
        ("checkpoints.keep_*", lambda v: isinstance(v, bool), "true or false"),
        ("trainer.max_epochs", lambda v: v == -1 or whole(1)(v), "a whole number of epochs, 1 or more (-1: no limit)"),
        ("trainer.accumulate_grad_batches", whole(1), "a whole number, 1 or more"),
        ("trainer.gradient_clip_val", or_null(number(least=0)), "null or a number, 0 or more"),
        ("*.batch_size", whole(1), "a whole number, 1 or more"),
        ("model.kind", one_of(*KINDS), f"one of {', '.join(KINDS)}"),
        ("model.max_length", whole(8), "a whole number of tokens per window, 8 or more"),
        ("windows.max_length", whole(8), "a whole number of tokens per window, 8 or more"),
        ("windows.stride", whole(0), "a whole number of tokens, 0 or more"),
        ("windows.max_chunks", whole(1), "a whole number of windows, 1 or more"),
        ("windows.last_window", one_of(*LAST_WINDOWS), f"one of {', '.join(LAST_WINDOWS)}"),
        ("windows.pooling", one_of(*POOLINGS), f"one of {', '.join(POOLINGS)}"),
        ("model.chunk_embedding", one_of(*CHUNK_EMBEDDINGS), f"one of {', '.join(CHUNK_EMBEDDINGS)}"),
        ("data.tasks", names(), "a task name (all) or a non-empty list of task names, e.g. [hearsay]"),
        ("protocol.limit", or_null(whole(1)), "null (every test row) or a whole number of rows, 1 or more"),
        ("protocol.limit_mode", one_of("stratified", "first"), "one of stratified, first"),
        ("protocol.train_size", or_null(whole(1)), "null (the whole train split) or a whole number of documents, 1 or more"),
        ("protocol.stratify", lambda v: isinstance(v, bool), "true or false"),
        ("protocol.cv_folds", or_null(whole(2)), "null (a validation split) or a whole number of folds, 2 or more"),
        ("protocol.val_fraction", or_null(number(above=0, below=1)), fraction),
        ("protocol.test_fraction", or_null(number(above=0, below=1)), fraction + " (null: no test split)"),
        ("protocol.refit", lambda v: isinstance(v, bool) or v == "auto", "one of auto, true, false"),
    ]


def dotted_keys(node, prefix: str = "") -> list[str]:
    """Every leaf key of ``node`` (interpolations unresolved: only the checked values are resolved)."""
    keys = []
    if isinstance(node, DictConfig):
        for key in node.keys():
            child = node._get_node(key)
            path = f"{prefix}{key}"
            keys += dotted_keys(child, f"{path}.") if isinstance(child, DictConfig) else [path]
    return keys


def copies_another_key(cfg: DictConfig, key: str) -> bool:
    """Whether ``key``'s value is a plain ``${other.key}``: the key it copies is checked, and named, itself."""
    import re

    parent_key, _, leaf = key.rpartition(".")
    parent = OmegaConf.select(cfg, parent_key) if parent_key else cfg
    return re.fullmatch(r"\$\{[\w.]+\}", str(parent._get_node(leaf)._value())) is not None


# The project's nodes that Hydra builds from the node alone: each key is an argument of the class.
BUILT_NODES = ("method", "data")
HYDRA_KEYS = {"_target_", "_partial_", "_recursive_", "_convert_", "_args_"}


def init_parameters(target: str) -> set[str] | None:
    """The keyword arguments the class ``target`` takes, read from its module's source without importing it
    (a method's module may import torch); None where they cannot be known so (no ``__init__`` of its own, a
    ``**kwargs``, a module that is not Python source)."""
    import ast
    import importlib.util

    module_name, _, class_name = target.rpartition(".")
    try:
        spec = importlib.util.find_spec(module_name)
        tree = ast.parse(open(spec.origin, encoding="utf-8").read()) if spec and spec.origin else None
    except (ImportError, ValueError, OSError, SyntaxError):
        return None
    cls = next((n for n in getattr(tree, "body", []) if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    init = next((n for n in getattr(cls, "body", []) if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None or init.args.kwarg is not None:
        return None
    return {a.arg for a in [*init.args.posonlyargs, *init.args.args[1:], *init.args.kwonlyargs]}


def unknown_keys(cfg: DictConfig) -> list[str]:
    """A key of a built node that its class does not take (``+method.classifer=svm``), named with the keys it
    does take and the closest one: found now, not as a TypeError when the class is built."""
    import difflib

    problems = []
    for group in BUILT_NODES:
        node = cfg.get(group) if isinstance(cfg, DictConfig) else None
        if not isinstance(node, DictConfig):
            continue
        target = node._get_node("_target_")._value() if "_target_" in node else None
        if not isinstance(target, str) or not target.startswith("legalft."):
            continue  # a plugin's class is checked by the plugin; a target that is no string by the saved-config check
        accepted = init_parameters(target)
        if accepted is None:
            continue
        for key in node.keys():
            if key in HYDRA_KEYS or key in accepted:
                continue
            new = next((entry.new for entry in RENAMED if entry.old == f"{group}.{key}"), None)
            if new is not None:
                problems.append(f"{group}.{key}: {new} now (conf/{new.split('.')[0]}): set {new} in your config "
                                "instead.")
                continue
            close = difflib.get_close_matches(str(key), sorted(accepted), n=1)
            hint = f" Did you mean {group}.{close[0]}?" if close else ""
            choice = OmegaConf.select(cfg, f"hydra.runtime.choices.{group}", default=None) if group != "datamodule" else None
            owner = f"{group}={choice}" if isinstance(choice, str) else target.rpartition(".")[2]
            problems.append(f"{group}.{key}: not a setting of {owner} (its settings: {', '.join(sorted(accepted))}).{hint}")
    return problems


def chosen_method(cfg: DictConfig):
    """The chosen method's class; None for a method that is not registered (a plugin's unknown class)."""
    from legalft.foundation import registry

    target = OmegaConf.select(cfg, "method._target_", default=None)
    return registry.method_of_target(target) if isinstance(target, str) else None


def method_rules(cfg: DictConfig) -> list[tuple[str, Check, str]]:
    """The chosen method's own settings checks (``Method.settings``: key of its node -> (check, what it must be)) and
    those of the groups it reads (``Method.group_settings``), ahead of the shared schema."""
    cls = chosen_method(cfg)
    rules = [(f"method.{key}", check, what) for key, (check, what) in getattr(cls, "settings", {}).items()]
    for group, settings in getattr(cls, "group_settings", {}).items():
        rules += [(f"{group}.{key}", check, what) for key, (check, what) in settings.items()]
    return rules


def check_config(cfg: DictConfig) -> None:
    """Every setting the method and the schema name, every key of the nodes Hydra builds, then the windows'
    geometry; all problems in one UserError."""
    problems = unknown_keys(cfg)
    rules = method_rules(cfg) + schema()
    for key in dotted_keys(cfg):
        if key.startswith("hydra.") or key.startswith("paths."):
            continue
        rule = next(((check, requirement) for pattern, check, requirement in rules if fnmatchcase(key, pattern)), None)
        if rule is None:
            continue
        if OmegaConf.is_missing(cfg, key):
            continue  # ??? values: Hydra and the groups say what is missing
        if copies_another_key(cfg, key):
            continue
        try:
            value = OmegaConf.select(cfg, key)
        except Exception as err:  # an interpolation that does not resolve
            problems.append(f"{key}: {err}")
            continue
        if isinstance(value, ListConfig):
            value = OmegaConf.to_container(value)
        check, requirement = rule
        if not check(value):
            problems.append(f"{key}={value!r}: must be {requirement}.")
    method = chosen_method(cfg)
    if method is not None:
        problems += method.config_problems(cfg)
    if OmegaConf.select(cfg, "logger.wandb.log_model") and OmegaConf.select(cfg, "logger.wandb.offline"):
        problems.append("logger.wandb.log_model=true uploads the model, which W&B cannot upload offline (no API key, "
                        "or its server out of reach; `wandb sync` uploads the run later but not its model): set "
                        "WANDB_API_KEY where W&B can be reached, or leave logger.wandb.log_model=false.")
    length, stride = OmegaConf.select(cfg, "windows.max_length"), OmegaConf.select(cfg, "windows.stride")
    if whole(8)(length) and whole(0)(stride) and stride >= length - 2:
        problems.append(f"windows.stride={stride} must be smaller than windows.max_length={length} minus the window's "
                        f"special tokens (2), so that each window adds new tokens; e.g. windows.stride={max(length // 4, 0)}.")
    if len(problems) == 1:
        raise UserError(problems[0])
    if problems:
        raise UserError(f"{len(problems)} settings need fixing:\n  " + "\n  ".join(problems))
