"""The registry: names from entry points, listed without importing anything heavy; a name claimed twice or a
class that is not a method is refused, naming both; no method is named anywhere but in its own module."""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest

from conftest import ROOT
from legalft.foundation import registry
from legalft.foundation.errors import UserError


@pytest.fixture
def entry_points_of(monkeypatch):
    """Replace the installed entry points with ``points`` (group -> [(name, value)])."""

    def install(points: dict[str, list[tuple[str, str]]]) -> None:
        real = registry.entry_points

        def fake(group):
            return [EntryPoint(name, value, group) for name, value in points[group]] if group in points else real(group=group)

        monkeypatch.setattr(registry, "entry_points", fake)
        registry.entries.cache_clear()
        registry.load.cache_clear()

    yield install
    registry.entries.cache_clear()
    registry.load.cache_clear()


def declared(group: str) -> dict[str, str]:
    """The entry points this project's pyproject.toml declares in ``group``: name -> "module:Class"."""
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][group]


def test_listing_methods_and_sources_imports_no_torch():
    code = ("import sys; from legalft.foundation import registry; names = sorted(registry.methods()), sorted(registry.sources()); "
            "print(names); print([m for m in ('torch', 'lightning', 'transformers', 'sklearn') if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    names, heavy = result.stdout.splitlines()
    methods, sources = ast.literal_eval(names)
    assert set(declared(registry.METHODS_GROUP)) <= set(methods) and set(declared(registry.SOURCES_GROUP)) <= set(sources)
    assert heavy == "[]"


def test_each_method_class_meets_the_contract_and_is_named_by_its_own_entry_point():
    """Walks every registered name: each loads a class that has the whole contract, whose name is registered to the
    same class and has its config node (an earlier release's name for one is legalft.runs.migrations')."""
    entries = registry.methods()
    assert set(declared(registry.METHODS_GROUP)) <= set(entries)
    for name, entry in entries.items():
        cls = registry.method_class(name)
        assert [a for a in registry.METHOD_CONTRACT if not hasattr(cls, a)] == [], name
        assert entries[cls.name].value == entry.value, f"{name} is an older name of {cls.name}, registered elsewhere"
        if entry.value.startswith("legalft."):
            assert (ROOT / "src" / "legalft" / "conf" / "method" / f"{cls.name}.yaml").is_file(), cls.name
    classes = registry.method_classes()
    assert set(classes) == {registry.method_class(name).name for name in entries}
    for name, cls in classes.items():
        assert cls.name == name and registry.method_class(name) is cls


def test_a_name_two_packages_claim_is_refused_naming_both(entry_points_of):
    entry_points_of({registry.METHODS_GROUP: [("encoder", "legalft.methods.encoder:EncoderMethod"),
                                              ("encoder", "their_package:TheirMethod")]})
    with pytest.raises(UserError, match=r"two installed packages register 'encoder' in legalft.methods: "
                                        r"legalft.methods.encoder:EncoderMethod and their_package:TheirMethod"):
        registry.methods()


def test_a_class_that_is_not_a_method_is_refused_when_it_is_loaded(entry_points_of):
    entry_points_of({registry.METHODS_GROUP: [("broken", "legalft.data.custom:CustomSource")]})
    assert list(registry.methods()) == ["broken"]  # listed without importing it
    with pytest.raises(UserError, match=r"'broken' names legalft.data.custom:CustomSource, which lacks name, run, "
                                        r"rescore, .*subclass legalft.kit.base.Method"):
        registry.method_class("broken")


def test_a_class_whose_name_is_another_entry_points_is_refused(entry_points_of):
    entry_points_of({registry.METHODS_GROUP: [("classical", "legalft.methods.classical:ClassicalMethod"),
                                              ("mine", "legalft.methods.setfit:SetFitMethod"),
                                              ("setfit", "legalft.methods.classical:ClassicalMethod")]})
    with pytest.raises(UserError, match=r"'mine' names legalft.methods.setfit:SetFitMethod, whose name 'setfit' is "
                                        r"registered to legalft.methods.classical:ClassicalMethod"):
        registry.method_class("mine")


def test_an_entry_point_that_does_not_import_says_what_to_reinstall(entry_points_of):
    entry_points_of({registry.METHODS_GROUP: [("gone", "no_such_module:Method")]})
    with pytest.raises(UserError, match=r"'gone' names no_such_module:Method, which cannot be imported.*Reinstall"):
        registry.method_class("gone")


# --- a method is one unit -------------------------------------------------------------------------------
def string_constants(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value, node.lineno


def own_modules(cls) -> set[str]:
    """A method's own files: its module, and the package it is the method of (``methods/lora/``)."""
    from pathlib import Path

    module = Path(sys.modules[cls.__module__].__file__)
    return {str(p) for p in (module.parent.glob("*.py") if module.parent.name != "methods" else [module])}


# Where a method's name is also something else's: the `lora` config group (the adapters' shape), which
# the run context hands LoRA; the group earlier releases called `incontext` (saved_config.OLDER_PROMPT_GROUP);
# the model SetFit records when a run names no model config; the kind of model an encoder classifier is.
NOT_A_METHOD_NAME = {("context.py", "lora"), ("lora_settings.py", "lora"), ("saved_config.py", "incontext"), ("setfit.py", "encoder"),
                     ("kinds.py", "encoder")}
# The fusion of an encoder with the classical side names both sides; the one migration table names the methods whose
# earlier runs it reads (legalft.runs.migrations).
HELPERS = {"fusion.py": {"encoder", "classical"},
           "migrations.py": {"encoder", "lora", "lora_classifier", "classical", "setfit", "incontext"}}


def test_no_method_name_is_written_outside_its_own_modules():
    found = []
    classes = registry.method_classes()
    names = {name: cls for name, cls in classes.items()}
    names.update({entry.name: registry.method_class(entry.name) for entry in registry.methods().values()})
    for path in (ROOT / "src" / "legalft").rglob("*.py"):
        for value, line in string_constants(path):
            cls = names.get(value)
            if cls is None or str(path) in own_modules(cls) or value in HELPERS.get(path.name, ()):
                continue
            if (path.name, value) not in NOT_A_METHOD_NAME:
                found.append(f"{path.relative_to(ROOT)}:{line}: {value!r}")
    assert found == []
