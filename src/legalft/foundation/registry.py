"""The methods and data sources this installation has: names mapped to ``"module:Class"`` by the entry-point
groups ``legalft.methods`` and ``legalft.sources``. The project's own are declared in its pyproject.toml
exactly as a plugin declares its own (docs/extending.md), so one list serves both.

Listing names imports nothing (a test checks that no torch, lightning or transformers comes with it); a
class is imported when it is used, and checked then against the contract below. A name two installed
packages both claim is refused, naming both. Everything else is derived from here: the name a run folder
records, the report's columns, and the classes a run folder's saved config may build
(``legalft.runs.saved_config.instantiate_from_run``), so a run folder never builds a class the user did not
install.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points

from legalft.foundation.errors import UserError

METHODS_GROUP = "legalft.methods"
SOURCES_GROUP = "legalft.sources"
# What a method class has (legalft.kit.base.Method gives each of these but run and rescore a default).
METHOD_CONTRACT = ("name", "run", "rescore", "trains", "builds", "report_words", "hub_prompt_id")
SOURCE_CONTRACT = ("load", "load_test")


@dataclass(frozen=True)
class Entry:
    name: str  # the config choice (conf/method/<name>.yaml, conf/data/<name>.yaml), or an older name of it
    value: str  # "module:Class"

    @property
    def target(self) -> str:
        """The class as a config's ``_target_`` names it."""
        module, _, attribute = self.value.partition(":")
        return f"{module}.{attribute}"


@cache
def entries(group: str) -> dict[str, Entry]:
    """name -> entry of every installed package's entry points in ``group``."""
    found: dict[str, Entry] = {}
    for point in entry_points(group=group):
        earlier = found.get(point.name)
        if earlier is not None and earlier.value != point.value:
            raise UserError(f"two installed packages register {point.name!r} in {group}: {earlier.value} and "
                            f"{point.value}. Uninstall one of them, or rename its entry point.")
        found[point.name] = Entry(point.name, point.value)
    return found


def methods() -> dict[str, Entry]:
    """Every method by name (an earlier release's name for one is ``legalft.runs.migrations``'); imports nothing."""
    return entries(METHODS_GROUP)


def sources() -> dict[str, Entry]:
    return entries(SOURCES_GROUP)


@cache
def load(entry: Entry, group: str) -> type:
    """The class ``entry`` names, imported and checked against its group's contract."""
    module_name, _, attribute = entry.value.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as err:
        raise UserError(f"{group} entry point {entry.name!r} names {entry.value}, which cannot be imported ({err}). "
                        "Reinstall the package that provides it (bash scripts/install.sh for this project's own).") from None
    contract = METHOD_CONTRACT if group == METHODS_GROUP else SOURCE_CONTRACT
    missing = [a for a in contract if not hasattr(cls, a)]
    if missing:
        raise UserError(f"{group} entry point {entry.name!r} names {entry.value}, which lacks {', '.join(missing)}"
                        + (": subclass legalft.kit.base.Method." if group == METHODS_GROUP else "."))
    if group == METHODS_GROUP and entries(group).get(cls.name, entry).value != entry.value:
        raise UserError(f"{group} entry point {entry.name!r} names {entry.value}, whose name {cls.name!r} is "
                        f"registered to {entries(group)[cls.name].value}: the two collide. Rename one of them.")
    return cls


def method_class(name: str) -> type | None:
    """The method registered as ``name``; None when none is."""
    entry = methods().get(name)
    return None if entry is None else load(entry, METHODS_GROUP)


def method_classes() -> dict[str, type]:
    """Each method once, by its current name (imports every method's module, none of which imports torch)."""
    classes = {}
    for entry in methods().values():
        cls = load(entry, METHODS_GROUP)
        classes[cls.name] = cls
    return classes


def method_of_target(target: object) -> type | None:
    """The method class whose ``_target_`` is ``target`` (where the class lives now: a saved config's of an earlier
    release is read through ``legalft.runs.migrations`` first), or None."""
    for entry in methods().values():
        if target == entry.target:
            return load(entry, METHODS_GROUP)
    return None


def target_of(cls: type) -> str:
    """Where a registered class lives now, as a config's ``_target_`` names it."""
    return f"{cls.__module__}.{cls.__qualname__}"


def source_of_target(target: object) -> type | None:
    return next((load(entry, SOURCES_GROUP) for entry in sources().values() if entry.target == target), None)


def buildable_targets() -> frozenset[str]:
    """What a run folder's saved config may name as a ``_target_``: the registered methods and sources, and
    what each method says its runs' configs build besides (the encoder's batching)."""
    built = {target for cls in method_classes().values() for target in cls.builds}
    return frozenset({e.target for e in methods().values()} | {e.target for e in sources().values()} | built)
