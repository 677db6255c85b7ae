"""The layers of docs/architecture.md, checked on the source: every module belongs to one layer,
imports only from its own layer or those below it, and no imports run in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

SOURCE = ROOT / "src"

# Bottom to top; a module belongs to the first layer one of whose prefixes names it.
LAYERS = [
    ("foundation", ["legalft", "legalft.errors", "legalft.io", "legalft.ranks", "legalft.progress",
                    "legalft.run_lock", "legalft.log_files", "legalft.registry", "legalft.path_names", "legalft.hub"]),
    ("data", ["legalft.data"]),
    ("evaluation", ["legalft.evaluation"]),
    ("models", ["legalft.models"]),
    ("llm", ["legalft.llm"]),
    ("runtime", ["legalft.config", "legalft.checkpoint_io", "legalft.csv_logger", "legalft.preemption",
                 "legalft.training", "legalft.training_progress", "legalft.deepspeed_strategy", "legalft.saved_layout",
                 "legalft.run_folder",
                 "legalft.saved_config", "legalft.run_context"]),
    ("methods", ["legalft.methods"]),
    ("commands", ["legalft.cli", "legalft.run_guard", "legalft.config_checks", "legalft.reporting",
                  "legalft.study", "legalft.study_task", "legalft.export_adapter", "legalft.legalbench_tasks",
                  "hydra_plugins"]),
    ("apps", ["legalft.apps"]),
]


def module_names() -> dict[str, Path]:
    names = {}
    for path in SOURCE.rglob("*.py"):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def layer_of(module: str) -> int | None:
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or (p != "legalft" and module.startswith(p + ".")) for p in prefixes):
            return index
    return None


def type_checking_only(tree: ast.Module) -> set[int]:
    """Line numbers inside ``if TYPE_CHECKING:`` blocks: annotations, never run."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's project imports, at any depth (functions included), as module names."""

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped, found = type_checking_only(tree), set()
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skipped:
                continue
            if isinstance(node, ast.Import):
                found |= {owner(alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found |= {owner(f"{node.module}.{alias.name}") or owner(node.module) for alias in node.names}
        graph[module] = {m for m in found if m and m != module and m.split(".")[0] in ("legalft", "hydra_plugins")}
    return graph


def test_every_module_has_a_layer():
    assert [m for m in module_names() if layer_of(m) is None] == []


def test_imports_only_point_down():
    graph = imports(module_names())
    upward = sorted(f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
                    for a, targets in graph.items() for b in targets if layer_of(b) > layer_of(a))
    assert upward == []


def test_no_import_circles():
    graph = imports(module_names())
    circles, state = [], {}

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                circles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == []


def test_library_modules_have_no_main_blocks():
    """Commands are the entry points and the modules of the top layer, not blocks inside library code."""
    commands = [prefix for name, prefixes in LAYERS if name in ("commands", "apps") for prefix in prefixes]
    found = [m for m, path in module_names().items() if 'if __name__ == "__main__"' in path.read_text(encoding="utf-8")
             and not any(m == c or m.startswith(c + ".") for c in commands)]
    assert found == []


def test_the_checker_sees_an_upward_import_and_a_circle(tmp_path, monkeypatch):
    """The checks above can fail: a data module importing a method, and two modules importing each other."""
    package = tmp_path / "legalft"
    (package / "data").mkdir(parents=True)
    (package / "methods").mkdir()
    (package / "__init__.py").write_text("")
    (package / "data" / "__init__.py").write_text("")
    (package / "methods" / "__init__.py").write_text("")
    (package / "data" / "a.py").write_text("def f():\n    from legalft.methods.b import g\n")
    (package / "methods" / "b.py").write_text("from legalft.data.a import f\n")
    modules = {"legalft.data.a": package / "data" / "a.py", "legalft.methods.b": package / "methods" / "b.py"}
    graph = imports(modules)
    assert graph == {"legalft.data.a": {"legalft.methods.b"}, "legalft.methods.b": {"legalft.data.a"}}
    assert layer_of("legalft.methods.b") > layer_of("legalft.data.a")


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
    """Methods read their own config node and the run context (legalft.run_context), nothing else."""
    methods = [prefix for name, prefixes in LAYERS if name in ("methods", "llm") for prefix in prefixes]
    found = [f"{m}: {where}" for m, path in module_names().items() if any(m.startswith(p) for p in methods)
             for where in composed_config_reads(ast.parse(path.read_text(encoding="utf-8")))]
    assert found == []


def test_the_composed_config_check_sees_a_cfg_parameter_and_a_composed_read():
    tree = ast.parse("def run(self, cfg):\n    pass\n\ndef score(ctx):\n    return ctx.composed.trainer\n")
    assert composed_config_reads(tree) == ["run(cfg) line 1", ".composed line 5"]
