"""Every change of layout since the first release, in one table, read in one place:

- keys that moved (``RENAMED``): a command line that sets the old key is read as the new one and says so
  (``forwarded``: users' sbatch scripts and sweeps keep old keys); ``+old.key=`` is refused, naming the new key;
  a run folder's saved config is read with each value where it is now (``in_current_layout``);
- classes that moved (``MOVED_MODULES``, ``FORMER_METHOD_TARGETS``): a saved ``_target_`` names where they live now;
- what an earlier release's runs of a method or a data source ran with, where today's default differs
  (``EARLIER_DEFAULTS`` and the few rewrites below them);
- methods, config groups and a command's spelling that earlier releases named otherwise (``FORMER_METHOD_NAMES``,
  ``FORMER_GROUPS``, ``MOVED_TO_COMMANDS``);
- how a run folder of the releases before runs recorded their method is recognised (``FILES_OF_RUNS``).

docs/run-folders.md's table is ``markdown_table()`` (tests/runs/test_migrations.py holds the two equal); methods and
data sources declare none of it."""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass

from legalft.foundation.errors import UserError


@dataclass(frozen=True)
class Renamed:
    old: str  # group.key of an earlier release
    new: str  # where the setting is now
    methods: tuple[str, ...] = ()  # the methods whose runs had it (a saved config of another's drops it); (): every run


PROTOCOL_KEYS = ("cv_folds", "train_size", "val_fraction", "test_fraction", "limit", "limit_mode", "seed")
WINDOW_KEYS = ("max_length", "stride", "max_chunks", "last_window", "pooling")
RENAMED = (
    *(Renamed(f"data.{key}", f"protocol.{key}") for key in PROTOCOL_KEYS),  # the evaluation protocol's group
    Renamed("checkpoints.keep_last", "checkpoints.keep_optimizer"),  # last.ckpt is the optimizer's state
    *(Renamed(f"{group}.{key}", f"windows.{key}") for group in ("model", "method") for key in WINDOW_KEYS[1:]),
    Renamed("method.max_length", "windows.max_length"),  # a method that takes its own (SetFit) keeps it
    *(Renamed(f"model.{key}", f"method.{key}", ("encoder",))  # learning rates belong to the method
      for key in ("lr", "head_lr", "weight_decay", "warmup_ratio")),
    *(Renamed(f"lora.{key}", f"method.{key}", ("lora",)) for key in ("lr", "weight_decay", "warmup_ratio")),
    *(Renamed(f"data.{key}", f"method.{key}", ("lora",)) for key in ("regime", "heldout", "folds")),
)

# Classes the configs of earlier releases named where they lived then: their module -> where it lives now.
MOVED_MODULES = {
    "legalft.csv_logger": "legalft.training.csv_logger",
    "legalft.deepspeed_strategy": "legalft.training.deepspeed_strategy",
    "legalft.preemption": "legalft.training.preemption",
    "legalft.training_progress": "legalft.training.progress",
}
FORMER_METHOD_TARGETS = {"legalft.incontext.runner.IncontextMethod": "incontext"}  # a method's class, then -> its name
# Methods by the names earlier releases' runs recorded (metrics.json's run.method) -> their name now.
FORMER_METHOD_NAMES = {"finetune": "encoder", "qlora": "lora"}
# Config groups earlier releases named otherwise -> their name now (a saved config's node moves there).
FORMER_GROUPS = {"incontext": "prompt"}
# Config groups an earlier release's command took that are a command of their own now: evaluate.py report=... is
# report.py report=... (the old spelling still writes the report, with a note).
MOVED_TO_COMMANDS = {"report": "report.py"}

# What runs of earlier releases ran with where today's default differs: set on their saved method node.
EARLIER_DEFAULTS = {
    "encoder": {"min_choice_docs": 100, "evidence_weight": 0.0, "evidence_from": "scorer"},
    "lora_classifier": {"min_choice_docs": 100},
    "classical": {"min_choice_docs": None},  # thresholds tuned on the validation split whatever its size
}

# What every earlier release's runs ran with, where the protocol group has a key since: set on their saved protocol.
EARLIER_PROTOCOL = {"refit": False}  # the model chosen on was the final model

# Run folders of the releases before runs recorded their method: each trained method's files, and the method a
# folder holding none of them is (the first releases trained encoders alone).
FILES_OF_RUNS = {
    "encoder": ("encoder", "label_map.json"),
    "lora_classifier": ("classifier", "label_map.json"),
    "lora": ("adapters", "label_spaces.json"),
    "classical": ("training_data.json",),
    "setfit": ("training_data.json",),
}
UNNAMED_RUNS = "encoder"


def method_named(recorded: str):
    """The method class a run's record names, by its name now or the one an earlier release recorded; None where no
    installed method has it."""
    from legalft.foundation import registry

    return registry.method_class(FORMER_METHOD_NAMES.get(recorded, recorded))


# --- a command line ------------------------------------------------------------------------------------------------
def renamed_on_the_command_line(overrides: list[str]) -> dict[str, str]:
    """Old key -> new key, for a command line (``method.max_length`` stays where the chosen method takes one)."""
    import inspect

    from legalft.foundation import registry

    moved = {entry.old: entry.new for entry in RENAMED}
    chosen = next((o.partition("=")[2] for o in overrides if o.partition("=")[0].lstrip("+") == "method"), None)
    cls = registry.method_class(chosen) if chosen else None
    if cls is not None and "max_length" in inspect.signature(cls.__init__).parameters:
        del moved["method.max_length"]
    return moved


def forwarded_key(key: str, context: list[str] = ()) -> str:
    """A key (a study's grid key) where it is now, said on standard error where it moved; ``context``: the overrides
    beside it (which method they choose)."""
    moved = renamed_on_the_command_line(list(context))
    if key in moved:
        print(f"note: {key} is {moved[key]} now (conf/{moved[key].split('.')[0]}): read as {moved[key]}",
              file=sys.stderr)
    return moved.get(key, key)


def forwarded(overrides: list[str]) -> list[str]:
    """Command-line overrides with each key an earlier release kept elsewhere named where it is now
    (``data.cv_folds=5`` -> ``protocol.cv_folds=5``, ``model.lr=1e-3`` -> ``method.lr=1e-3``), each said on standard
    error. ``+old.key=...`` (Hydra's way to add a key the config lacks) is refused: it would add a key nothing reads."""
    moved = renamed_on_the_command_line(overrides)
    out = []
    for override in overrides:
        prefix = override[:len(override) - len(override.lstrip("+~"))]
        key, sep, value = override[len(prefix):].partition("=")
        if key in moved:
            if prefix.startswith("+"):
                raise UserError(f"{override}: {key} is {moved[key]} now (conf/{moved[key].split('.')[0]}); adding the "
                                f"old key would be ignored. Write {moved[key]}{sep}{value}.")
            override = f"{prefix}{moved[key]}{sep}{value}"
            print(f"note: {key} is {moved[key]} now (conf/{moved[key].split('.')[0]}): read as {override}",
                  file=sys.stderr)
        out.append(override)
    return out


# --- a run folder's saved config -------------------------------------------------------------------------------------
def current_target(target):
    """A saved ``_target_`` naming where its class lives now (a method's by its registered name)."""
    from legalft.foundation import registry

    if not isinstance(target, str):
        return target
    if target in FORMER_METHOD_TARGETS:
        return registry.target_of(registry.method_class(FORMER_METHOD_TARGETS[target]))
    module, _, name = target.rpartition(".")
    return f"{MOVED_MODULES[module]}.{name}" if module in MOVED_MODULES else target


def moved_targets(tree):
    """``tree`` with every ``_target_`` naming where its class lives now."""
    if isinstance(tree, dict):
        if "_target_" in tree:
            tree["_target_"] = current_target(tree["_target_"])
        for value in tree.values():
            moved_targets(value)
    elif isinstance(tree, list):
        for value in tree:
            moved_targets(value)
    return tree


def in_current_layout(saved: dict) -> dict:
    """A run folder's saved config (a plain mapping) with every setting where this release reads it (the module's
    docstring says what moved)."""
    from legalft.foundation import registry
    from legalft.models.kinds import kind_of

    saved = moved_targets(copy.deepcopy(saved))
    method_node = saved.get("method")
    method = registry.method_of_target(method_node.get("_target_")) if isinstance(method_node, dict) else None
    protocol_from_data(saved)
    if isinstance(saved.get("protocol"), dict):
        for key, value in EARLIER_PROTOCOL.items():
            saved["protocol"].setdefault(key, value)
    windows_from_model_and_method(saved)
    for entry in RENAMED:
        group, _, key = entry.old.partition(".")
        node = saved.get(group)
        if entry.methods and isinstance(node, dict) and key in node:
            value = node.pop(key)  # another method's run had it in a node it shared: read by no step of it
            if method is not None and method.name in entry.methods:
                method_node.setdefault(entry.new.partition(".")[2], value)
        elif entry.new.partition(".")[0] == group and isinstance(node, dict) and key in node:  # renamed in its group
            node.setdefault(entry.new.partition(".")[2], node.pop(key))
    for old, new in FORMER_GROUPS.items():
        if old in saved and new not in saved:
            saved[new] = saved.pop(old)
    if method is not None:
        for key, value in EARLIER_DEFAULTS.get(method.name, {}).items():
            method_node.setdefault(key, value)
        if method.name == "lora":
            lora_batching(saved)
        if not method.reads_windows:
            saved.pop("windows", None)  # composed for the model, read by no step of this method's runs
    if isinstance(saved.get("model"), dict):  # configs saved before models said what kind they are
        saved["model"].setdefault("kind", kind_of(saved["model"]))
    if isinstance(saved.get("prompt"), dict):  # before prompts could be the user's own template
        saved["prompt"].setdefault("template", None)
    data = saved.get("data")
    if isinstance(data, dict) and data.get("_target_") == "legalft.data.proslex.ProslexSource":
        joined_label_descriptions(data)
    return saved


def protocol_from_data(saved: dict) -> None:
    """Earlier releases kept the evaluation protocol in the data node (``data.cv_folds``, ``data.limit``, ...):
    moved to ``protocol``, whose seed is the run's where the data node had none."""
    from dataclasses import asdict

    from legalft.data.protocol import Protocol

    data = saved.get("data")
    if "protocol" in saved or not isinstance(data, dict):
        return
    protocol = {**asdict(Protocol()), "seed": saved.get("seed", 0), **EARLIER_PROTOCOL}
    protocol.update({key: data.pop(key) for key in PROTOCOL_KEYS if key in data})
    saved["protocol"] = protocol


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


def lora_batching(saved: dict) -> None:
    """LoRA runs' batching was the encoder's node, with ``packing`` added: now the instructions' node."""
    batching = saved.get("datamodule")
    if isinstance(batching, dict) and "_target_" in batching:
        saved["datamodule"] = {"batch_size": batching.get("batch_size", 4), "packing": batching.get("packing", False)}


def joined_label_descriptions(node: dict) -> None:
    """PROSLEX's data config of earlier releases shipped IPC 201's description unquoted in a YAML flow mapping, so
    its comma cut it into a description and a key with no value: joined again."""
    label_map = node.get("label_map")
    for entry in label_map.values() if isinstance(label_map, dict) else ():
        if not isinstance(entry, dict) or not isinstance(entry.get("description"), str):
            continue
        cut = [key for key, value in entry.items() if key not in ("label", "description") and value is None]
        if cut:
            entry["description"] = ", ".join([entry["description"], *map(str, cut)])
            for key in cut:
                del entry[key]


# --- what docs/run-folders.md says of it ----------------------------------------------------------------------------
# How the table reads a group of renamed keys that moved with their node (old group, new group) -> (what the old
# keys were, how they are read, whose runs): the rest of RENAMED reads key for key.
MOVED_WITH_THEIR_NODE = {
    ("data", "protocol"): ("", "`protocol.*` (a `protocol` node with the other keys at their defaults and the run's "
                               "`seed`)", "every"),
    ("model", "windows"): (" (an encoder's)", "`windows.*`, with `windows.max_length` the model's `max_length`",
                           "encoder"),
    ("method", "windows"): ("", "`windows.*`", "LLM classifier"),
}
# The rules above that are code rather than entries of a table: (what a saved config holds, how it is read, whose runs).
RULES = (
    ("`datamodule` of a LoRA run holding the encoder's batching (`_target_`, `eval_batch_size`, ...)",
     "its `batch_size` and `packing` alone (`datamodule=instructions`)", "LoRA"),
    ("a `model` without `kind`", "`kind: encoder` where it names a `_target_` (an encoder classifier), "
     "`kind: causal_lm` otherwise", "every"),
    ("a `prompt` without `template`", "`template: null` (the strategy's own prompt)", "in-context, LoRA"),
    ("`data.label_map.s2` of `data=proslex` holding a key `or giving false information to screen offender` (an "
     "unquoted comma cut IPC 201's description)", "the description joined again", "every"),
)
RUNS_OF = {"lora": "LoRA", "lora_classifier": "LLM classifier", "incontext": "in-context"}  # the table's words


def markdown_table() -> str:
    """docs/run-folders.md's table of what a saved config of an earlier release holds and how it is read: every entry
    of this module's tables and rules, one row each (keys renamed together in one row)."""
    def runs(methods) -> str:
        return ", ".join(RUNS_OF.get(m, m) for m in methods) if methods else "every"

    def keys(names) -> str:
        return ", ".join(f"`{name}`" for name in names)

    rows, grouped = [], {}
    for entry in RENAMED:
        where = (entry.old.partition(".")[0], entry.new.partition(".")[0], entry.methods)
        grouped.setdefault(where, []).append(entry)
    for (old, new, methods), entries in grouped.items():
        what, read_as, who = MOVED_WITH_THEIR_NODE.get((old, new), ("", keys(e.new for e in entries), runs(methods)))
        rows.append((keys(e.old for e in entries) + what, read_as, who))
    rows += [(f"`_target_: {old}.*`", f"`{new}.*`", "every") for old, new in MOVED_MODULES.items()]
    rows += [(f"`method._target_: {old}`", f"the class registered as `{name}`", runs([name]))
             for old, name in FORMER_METHOD_TARGETS.items()]
    rows += [(f"`run.method: {old}` (metrics.json)", f"`{new}`", runs([new])) for old, new in FORMER_METHOD_NAMES.items()]
    rows += [(f"an `{old}` node", f"`{new}`", "in-context") for old, new in FORMER_GROUPS.items()]
    rows += list(RULES)
    for method, defaults in EARLIER_DEFAULTS.items():
        for key, value in defaults.items():
            rows.append((f"no `method.{key}`", f"`{'null' if value is None else value}`", runs([method])))
    rows += [(f"no `protocol.{key}`", f"`{str(value).lower()}`", "every") for key, value in EARLIER_PROTOCOL.items()]
    lines = ["| old key | read as | runs |", "| --- | --- | --- |"]
    return "\n".join(lines + [f"| {old} | {new} | {who} |" for old, new, who in rows])
