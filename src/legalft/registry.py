"""The one list of methods and data sources. Each class registers itself where it is defined, with
``@registry.method("name")`` or ``@registry.source("name")``; everything else is derived from here: the
name a run folder records, the methods a report sets against each other, and the classes a run
folder's saved config may build (``legalft.saved_config.instantiate_from_run``).

The project's own modules are found by walking its packages; a method or data source from another
package registers the same way and is found through the ``legalft.plugins`` entry-point group
(docs/extending.md). A run folder can name only what is registered, so it never builds a class
the user did not install.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from legalft.run_context import RunContext


class Method(Protocol):
    """What ``conf/method/<name>.yaml`` builds, from that node alone. ``run`` trains (or prompts) and
    scores a new run, writing the run folder's results with ``legalft.evaluation.run_results.publish``
    (docs/results.md), and returns the metrics a sweeper may optimise; ``rescore`` scores a finished run
    folder again, on its own test split or on the data keys the scoring command replaces. Both are
    handed a ``legalft.run_context.RunContext``: the run folder, seed, tasks, loggers, trainer factory
    and the other config groups, so a method never reads the composed config."""

    name: str  # set by ``@registry.method``

    def run(self, ctx: RunContext) -> dict: ...

    def rescore(self, ctx: RunContext) -> dict: ...


@dataclass(frozen=True)
class Entry:
    name: str  # the config choice (conf/method/<name>.yaml, conf/data/<name>.yaml) and the name runs record
    target: str  # the class, as a saved config's ``_target_`` names it
    trained: bool = True  # methods: fitted on the train split (a report sets these against in-context runs)
    aliases: tuple[str, ...] = ()  # other names its runs go by (older run folders, report columns)


METHODS: dict[str, Entry] = {}
SOURCES: dict[str, Entry] = {}
OTHERS: dict[str, Entry] = {}  # further classes a run folder's config may build (batching)
PACKAGES = ("legalft.methods", "legalft.incontext", "legalft.data")
PLUGIN_GROUP = "legalft.plugins"
_loaded = False


def target_of(cls) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def method(name: str, *, trained: bool = True, aliases: tuple[str, ...] = ()):
    """Class decorator: a method, chosen as ``method=<name>`` and recorded as ``name`` in results."""

    def register(cls):
        cls.name = name
        METHODS[name] = Entry(name, target_of(cls), trained, aliases)
        return cls

    return register


def source(name: str):
    """Class decorator: a data source, chosen as ``data=<name>``."""

    def register(cls):
        SOURCES[name] = Entry(name, target_of(cls))
        return cls

    return register


def run_folder_may_build(cls):
    """Class decorator: another class a run folder's saved config names (the batching of a trained run)."""
    OTHERS[target_of(cls)] = Entry(cls.__qualname__, target_of(cls))
    return cls


def load() -> None:
    """Import every module that registers: the project's packages, then the installed plugins."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        for module in pkgutil.walk_packages(package.__path__, f"{package_name}."):
            importlib.import_module(module.name)
    for plugin in entry_points(group=PLUGIN_GROUP):
        plugin.load()


def methods() -> dict[str, Entry]:
    load()
    return METHODS


def method_entry(recorded: str) -> Entry | None:
    """The method a run recorded as ``recorded`` (its name or an alias)."""
    for entry in methods().values():
        if recorded == entry.name or recorded in entry.aliases:
            return entry
    return None


def canonical_method(recorded: str) -> str:
    """``recorded`` under the method's current name (run folders of older releases say ``finetune``)."""
    entry = method_entry(recorded)
    return entry.name if entry is not None else recorded


def buildable_targets() -> frozenset[str]:
    """What a run folder's saved config may name as a ``_target_``."""
    load()
    return frozenset(e.target for table in (METHODS, SOURCES, OTHERS) for e in table.values())


def name_of_target(target: object) -> str | None:
    """The registered name of the method or data source whose class is ``target`` (a saved config's
    ``_target_``), or None."""
    load()
    return next((e.name for table in (METHODS, SOURCES) for e in table.values() if e.target == target), None)
