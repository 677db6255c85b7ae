"""The layers of docs/architecture.md, declared once as import-linter contracts in pyproject.toml
(``[tool.importlinter]``) and checked here on the source: every top-level module belongs to one layer,
imports point only down, no imports run in a circle, and the methods stand side by side above the kit they are
built from (no method imports another, checked here without naming any, so a new method edits no contract)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT

SOURCE = ROOT / "src"
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
LAYERS = [[name.strip() for name in layer.replace("|", ":").split(":")]
          for layer in next(c for c in CONTRACTS if c["id"] == "layers")["layers"]][::-1]  # bottom to top


def module_names() -> dict[str, Path]:
    names = {}
    for path in SOURCE.rglob("*.py"):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def layer_of(module: str) -> int | None:
    for index, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    return None


def lint_imports(config: Path, path: Path) -> subprocess.CompletedProcess:
    command = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run([sys.executable, "-c", command, "--config", str(config), "--no-cache"],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(path)})


def test_every_module_has_a_layer():
    assert [m for m in module_names() if m != "legalft" and layer_of(m) is None] == []


def test_the_contracts_hold():
    result = lint_imports(ROOT / "pyproject.toml", SOURCE)
    assert result.returncode == 0 and "Contracts: 2 kept, 0 broken." in result.stdout, result.stdout[-3000:] + result.stderr


def imports_between_siblings(package: str) -> list[str]:
    """``a -> b`` for each child of ``package`` (a module or a package) that imports another child."""
    import grimp

    graph = grimp.build_graph(package.split(".")[0])
    children = sorted(graph.find_children(package))
    return [f"{a} -> {b}" for a in children for b in children
            if a != b and graph.direct_import_exists(importer=a, imported=b, as_packages=True)]


def test_no_method_imports_another():
    assert imports_between_siblings("legalft.methods") == []


def test_the_sibling_check_sees_one_method_importing_another(tmp_path, monkeypatch):
    package = tmp_path / "toy_methods_check"
    (package / "methods" / "c").mkdir(parents=True)
    for init in (package, package / "methods", package / "methods" / "c"):
        (init / "__init__.py").write_text("")
    (package / "methods" / "b.py").write_text("import os\n")
    (package / "methods" / "c" / "fit.py").write_text("def f():\n    from toy_methods_check.methods.b import g\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert imports_between_siblings("toy_methods_check.methods") == [
        "toy_methods_check.methods.c -> toy_methods_check.methods.b"]


def test_a_broken_contract_fails_the_check(tmp_path):
    """The check can fail: a data module importing a method, and two methods importing each other."""
    package = tmp_path / "toy"
    for folder in ("data", "methods"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "data" / "a.py").write_text("def f():\n    from toy.methods.b import g\n")
    (package / "methods" / "b.py").write_text("from toy.methods.c import h\n")
    (package / "methods" / "c.py").write_text("from toy.methods.b import g\n")
    config = tmp_path / "contracts.toml"
    config.write_text('[tool.importlinter]\nroot_packages = ["toy"]\n'
                      '[[tool.importlinter.contracts]]\nname = "layers"\ntype = "layers"\nlayers = ["toy.methods", "toy.data"]\n'
                      '[[tool.importlinter.contracts]]\nname = "methods"\ntype = "independence"\n'
                      'modules = ["toy.methods.b", "toy.methods.c"]\n')
    result = lint_imports(config, tmp_path)
    assert result.returncode == 1 and "Contracts: 0 kept, 2 broken." in result.stdout, result.stdout[-3000:]
    assert "toy.data.a -> toy.methods.b" in result.stdout


def test_library_modules_have_no_main_blocks():
    """Commands are the entry points and the modules of the top layer, not blocks inside library code."""
    commands = LAYERS[-1] + LAYERS[-2]  # the commands and the entry points
    found = [m for m, path in module_names().items() if 'if __name__ == "__main__"' in path.read_text(encoding="utf-8")
             and not any(m == c or m.startswith(c + ".") for c in commands)]
    assert found == []


def composed_config_reads(tree: ast.Module) -> list[str]:
    """Where code takes the composed config: a parameter named ``cfg``, or the run context's ``composed``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [f"{node.name}(cfg) line {node.lineno}" for a in node.args.args + node.args.kwonlyargs
                      if a.arg == "cfg"]
        elif isinstance(node, ast.Attribute) and node.attr == "composed":
            found.append(f".composed line {node.lineno}")
    return found


def test_methods_never_read_the_composed_config():
    """Methods read their own config node and the run context (legalft.runs.context), nothing else."""
    methods = ["legalft.methods", "legalft.llm"]
    found = [f"{m}: {where}" for m, path in module_names().items() if any(m.startswith(p) for p in methods)
             for where in composed_config_reads(ast.parse(path.read_text(encoding="utf-8")))]
    assert found == []


def test_the_composed_config_check_sees_a_cfg_parameter_and_a_composed_read():
    tree = ast.parse("def run(self, cfg):\n    pass\n\ndef score(ctx):\n    return ctx.composed.trainer\n")
    assert composed_config_reads(tree) == ["run(cfg) line 1", ".composed line 5"]


def long_functions(tree: ast.Module, most: int) -> list[str]:
    return [f"{node.name} ({node.end_lineno - node.lineno + 1} lines, from line {node.lineno})"
            for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > most]


def test_no_function_is_over_60_lines_and_no_module_over_600():
    """Sizes serve reading: a function fits a screen; a module that is one idea (a class with its methods) may
    run to 600 lines rather than be cut into functions that take the class as their first argument."""
    found = [f"{m}: {f}" for m, path in module_names().items()
             for f in long_functions(ast.parse(path.read_text(encoding="utf-8")), 60)]
    found += [f"{m}: {n} lines" for m, path in module_names().items()
              if (n := len(path.read_text(encoding="utf-8").splitlines())) > 600]
    assert found == []


def test_the_length_check_sees_a_long_function():
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    assert long_functions(ast.parse(f"def f():\n{body}\n"), 60) == ["f (62 lines, from line 1)"]


def test_the_tests_mirror_the_packages():
    """A test folder per package of src/legalft, each test beside the package it tests; at the root of tests/ only
    conftest.py and the helpers several folders share."""
    packages = {p.name for p in SOURCE.joinpath("legalft").iterdir() if (p / "__init__.py").is_file()}
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert packages <= folders, f"packages without a test folder: {sorted(packages - folders)}"
    assert folders <= packages, f"test folders of no package: {sorted(folders - packages)}"
    assert sorted(p.name for p in (ROOT / "tests").glob("test_*.py")) == []


BENCH = ROOT / "bench"


def test_bench_scripts_share_one_helper_module_and_import_no_other_script_or_test():
    scripts = {p.stem for p in BENCH.glob("*.py")}
    tests = {p.stem for p in (ROOT / "tests").rglob("*.py")}
    found = []
    for path in sorted(BENCH.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            for name in names:
                top = name.split(".")[0]
                if top != "common" and (top in scripts or top in tests - {"conftest"} or top == "tests"):
                    found.append(f"{path.name}: imports {name}")
        if "sys.path" in path.read_text(encoding="utf-8"):
            found.append(f"{path.name}: changes sys.path (the project is installed; common.py sits beside it)")
    assert found == []


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py") if p.name != "common.py"))
def test_every_bench_script_answers_help(script):
    """A broken import or argument parser fails here, not when someone measures."""
    result = subprocess.run([sys.executable, str(BENCH / script), "--help"], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0 and "usage:" in result.stdout, result.stderr[-2000:]
