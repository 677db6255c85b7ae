"""A saved run config read in this release's layout (``in_current_layout``: settings earlier releases kept
elsewhere moved to where they are read now), and what differs between a saved config and a requested one
when a run folder is resumed (``config_differences``)."""

from __future__ import annotations

from legalft.models.kinds import kind_of

# Where a run writes, how it is watched, what it keeps and which model scores its explanations do not change
# what it trains.
IGNORED_ON_RESUME = ("paths", "logger", "checkpoints", "explanations")
# Classes the configs of earlier releases named where they lived then: their module -> where it lives now.
MOVED_MODULES = {
    "legalft.csv_logger": "legalft.training.csv_logger",
    "legalft.deepspeed_strategy": "legalft.training.deepspeed_strategy",
    "legalft.preemption": "legalft.training.preemption",
    "legalft.training_progress": "legalft.training.progress",
}


def moved_targets(tree):
    """``tree`` with every ``_target_`` that names a class where an earlier release kept it naming where it is now."""
    if isinstance(tree, dict):
        target = tree.get("_target_")
        if isinstance(target, str):
            module, _, name = target.rpartition(".")
            if module in MOVED_MODULES:
                tree["_target_"] = f"{MOVED_MODULES[module]}.{name}"
        for value in tree.values():
            moved_targets(value)
    elif isinstance(tree, list):
        for value in tree:
            moved_targets(value)
    return tree


def in_current_layout(saved: dict) -> dict:
    """A run folder's saved config (a plain mapping) with every setting where this release reads it: a key
    an earlier release kept in another group goes to the method's node where the run used the method that
    declares it (``Method.moved_keys``), and is dropped where it did not (MiniLM's ``model.lr`` in a SetFit
    run trained nothing); the data source reads its own node as it now is (``in_current_layout`` of the
    source's class, where it has one). docs/run-folders.md lists them."""
    import copy

    from legalft.foundation import registry

    saved = moved_targets(copy.deepcopy(saved))
    method_node, data_node = saved.get("method"), saved.get("data")
    method = registry.method_of_target(method_node.get("_target_")) if isinstance(method_node, dict) else None
    if method is not None:
        method_node["_target_"] = registry.target_of(method)  # where its class lives now
    for cls in registry.method_classes().values():
        for old, key_now in cls.moved_keys.items():
            group, _, key = old.partition(".")
            node = saved.get(group)
            if not isinstance(node, dict) or key not in node:
                continue
            value = node.pop(key)
            if cls is method:
                method_node.setdefault(key_now, value)
    if method is not None:
        method.in_current_layout(saved)
    if isinstance(saved.get("model"), dict):  # configs saved before models said what kind they are
        saved["model"].setdefault("kind", kind_of(saved["model"]))
    checkpoints = saved.get("checkpoints")
    if isinstance(checkpoints, dict) and "keep_last" in checkpoints:  # last.ckpt is the optimizer's state
        checkpoints.setdefault("keep_optimizer", checkpoints.pop("keep_last"))
    protocol_from_data(saved)
    windows_from_model_and_method(saved)
    if method is not None and not method.reads_windows:
        saved.pop("windows", None)  # composed for the model, read by no step of this method's runs
    if isinstance(saved.get("prompt"), dict):  # before prompts could be the user's own template
        saved["prompt"].setdefault("template", None)
    source = registry.source_of_target(data_node.get("_target_")) if isinstance(data_node, dict) else None
    if hasattr(source, "in_current_layout"):
        source.in_current_layout(data_node)
    return saved


def protocol_from_data(saved: dict) -> None:
    """Earlier releases kept the evaluation protocol in the data node (``data.cv_folds``, ``data.limit``, ...):
    moved to ``protocol``, whose seed is the run's where the data node had none."""
    from dataclasses import asdict

    from legalft.data.protocol import MOVED_FROM_DATA, Protocol

    data = saved.get("data")
    if "protocol" in saved or not isinstance(data, dict):
        return
    protocol = {**asdict(Protocol()), "seed": saved.get("seed", 0)}
    protocol.update({key: data.pop(key) for key in MOVED_FROM_DATA if key in data})
    saved["protocol"] = protocol


WINDOW_KEYS = ("max_length", "stride", "max_chunks", "last_window", "pooling")


def windows_from_model_and_method(saved: dict) -> None:
    """Earlier releases kept how a document is cut into windows in the model node (encoders) or the method's
    (the LLM classifier): moved to ``windows``; an encoder's window length is its model's ``max_length``."""
    model, method = saved.get("model"), saved.get("method")
    if "windows" in saved or not isinstance(model, dict):
        return
    if isinstance(method, dict) and any(key in method for key in WINDOW_KEYS[1:]):  # the LLM classifier's node
        saved["windows"] = {key: method.pop(key) for key in WINDOW_KEYS if key in method}
    elif any(key in model for key in WINDOW_KEYS[1:]):  # an encoder's
        saved["windows"] = {key: model.pop(key) if key != "max_length" else model[key] for key in WINDOW_KEYS
                            if key in model}


def config_differences(saved_yaml: str, requested_yaml: str) -> list[str]:
    """``key: saved -> requested`` for every setting that differs, dotted keys, sorted. Paths are
    compared relative to the run's ``paths`` (its run folder, project folder...), so a run folder
    copied or moved elsewhere still resumes."""
    import yaml

    def flat(tree, prefix=""):
        if isinstance(tree, dict):
            items = {}
            for key, value in tree.items():
                if not prefix and key in IGNORED_ON_RESUME:
                    continue
                items.update(flat(value, f"{prefix}{key}."))
            return items
        return {prefix[:-1]: tree}

    def relative_to_paths(tree: dict) -> dict:
        paths = sorted(((str(v), k) for k, v in (tree.get("paths") or {}).items() if v), key=lambda p: -len(p[0]))

        def relative(value):
            if isinstance(value, str):
                for path, key in paths:
                    value = value.replace(path, f"<paths.{key}>")
            return value

        return {key: relative(value) for key, value in flat(tree).items()}

    saved = relative_to_paths(in_current_layout(yaml.safe_load(saved_yaml) or {}))
    requested = relative_to_paths(in_current_layout(yaml.safe_load(requested_yaml) or {}))
    return [
        f"{key}: {saved.get(key, '<unset>')!r} -> {requested.get(key, '<unset>')!r}"
        for key in sorted(saved.keys() | requested.keys())
        if saved.get(key, "<unset>") != requested.get(key, "<unset>")
    ]
