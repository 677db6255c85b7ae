"""Names read from data, configs and run folders never become paths outside their folder: one helper
(legalft.foundation.path_names.component) makes every such name one file or folder name, and each place a path is
built from a name goes through it (listed in PLACES and checked one by one below)."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from conftest import ROOT
from legalft.foundation.errors import UserError
from legalft.foundation.path_names import component, components

HOSTILE = ["../../../../tmp/x", "/etc/passwd", "..", ".", "a/../../b", "..\\..\\x", "tab\there", ".hidden",
           "ok/../..", "\u202e/evil", "x" * 5 + "/" * 20, "line\nbreak", "nul\x00byte"]

# Every module and function that joins a name read from data, a config or a run folder to a path. A new
# caller of component() must be added here, with a check below that a hostile name stays inside.
PLACES = {
    ("legalft.runs.folder", "adapter"), ("legalft.runs.folder", "adapter_checkpoints"),
    ("legalft.runs.folder", "folds"),
    ("legalft.reporting.legalevalhub_export", "evaluation_run"), ("legalft.reporting.legalevalhub_export", "export"),
    ("legalft.reporting.plots", "slug"),
    ("legalft.study.plan", "logs_of"), ("legalft.study.plan", "folder_name"), ("legalft.study.plan", "load_study"),
    ("legalft.study.plan", "study_file"),
    ("legalft.data.legalbench", "task_dir"),
    ("legalft.methods.lora.plan", "plan"),
}


def callers_of_component() -> set[tuple[str, str]]:
    found = set()
    for path in (ROOT / "src" / "legalft").rglob("*.py"):
        module = ".".join(path.relative_to(ROOT / "src").with_suffix("").parts)
        if module == "legalft.foundation.path_names":
            continue
        for function in ast.walk(ast.parse(path.read_text())):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for call in ast.walk(function):
                    if isinstance(call, ast.Call) and getattr(call.func, "id", None) in ("component", "components"):
                        found.add((module, function.name))
    return found


def test_every_place_that_builds_a_path_from_a_name_is_listed():
    assert callers_of_component() == PLACES


def inside(folder: Path, path: Path) -> bool:
    return os.path.commonpath([os.path.abspath(folder), os.path.abspath(path)]) == os.path.abspath(folder)


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_becomes_one_name_inside_its_folder(tmp_path, name):
    safe = component(name, "data.name")
    assert "/" not in safe and "\\" not in safe and safe not in (".", "..") and not safe.startswith(".")
    assert inside(tmp_path, tmp_path / safe) and (tmp_path / safe).parent == tmp_path


@pytest.mark.parametrize("name", ["hearsay", "IPC 302", "contract_nli_explicit_identification", "custom", "pooled",
                                  "without_hearsay", "hearsay_fold3", "gpt-4o-mini", "run-1.2",
                                  "maud_accuracy_of_target_capitalization_rw_(outstanding_shares)_bringdown_standard_answer"])
def test_names_that_are_already_safe_are_kept_as_they_are(name):
    assert component(name, "task") == name


def test_every_legalbench_task_name_is_its_own_folder_name():
    from legalft.data.legalbench import catalog

    assert [name for name in catalog() if component(name, "task") != name] == []


def test_model_names_map_as_legalevalhub_maps_them():
    assert component("meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo", "model") == "meta-llama_Meta-Llama-3.1-70B-Instruct-Turbo"


@pytest.mark.parametrize("name", ["", "   ", None, ["a"], "x" * 300])
def test_what_cannot_be_a_name_is_refused_naming_the_setting(name):
    with pytest.raises(UserError, match=r"^data\.name="):
        component(name, "data.name")


def test_two_names_that_would_share_a_file_are_refused():
    with pytest.raises(UserError, match=r"'a/b' and 'a_b' would both be written as 'a_b'"):
        components(["a/b", "a_b"], "adapter")
    assert components(["a", "b"], "adapter") == {"a": "a", "b": "b"}


# --- each place --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", HOSTILE[:5])
def test_adapter_folders_and_their_checkpoints_stay_in_the_run_folder(tmp_path, name):
    from legalft.runs.folder import RunFolder

    run = RunFolder(tmp_path / "run")
    for path in (run.adapter(name), run.adapter_checkpoints(name), run.folds(name)):
        assert path.parent in (run.adapters, run.checkpoints, run.folds()) and inside(run.path, path)


def test_a_per_task_lora_plan_on_a_hostile_dataset_name_names_adapters_that_stay_inside(tmp_path):
    """train.py experiment=legalbench_lora data=custom method.regime=per_task data.name=../../../../tmp/x"""
    from legalft.data.example import Example, Task, TaskSpec
    from legalft.methods.lora.plan import plan
    from legalft.runs.folder import RunFolder

    examples = [Example(id=str(i), text=f"t{i}", labels=("a" if i % 2 else "b",)) for i in range(6)]
    task = Task(TaskSpec("../../../../tmp/x", ("a", "b"), False), train=examples, test=examples)
    for regime in ("per_task", "kfold_test"):
        for adapter in plan([task], regime, folds=2):
            assert inside(tmp_path, RunFolder(tmp_path).adapter(adapter.name))
    clash = Task(TaskSpec("../../tmp_x", ("a", "b"), False), train=examples, test=examples)
    with pytest.raises(UserError, match="would both be written as"):
        plan([task, Task(TaskSpec("_._.._.._.._tmp_x", ("a", "b"), False), examples, examples)], "per_task")
    assert plan([task, clash], "per_task")  # different names, different folders


def test_legalevalhub_export_writes_hostile_task_and_model_names_inside_out(tmp_path):
    from legalft.reporting.legalevalhub_export import export
    from report_runs import HEARSAY_GOLD, YES_NO, noisy, write_run

    root, out = tmp_path / "runs", tmp_path / "deep" / "submission"
    for number, task in enumerate(("../../../escaped", "/tmp/abs_escaped")):
        write_run(root / f"r{number}", "incontext", "../../model/../x", 0, {task: noisy(HEARSAY_GOLD, {1}, YES_NO)},
                  gold={task: HEARSAY_GOLD}, categories={task: "issue"}, extra={"prompt": "base_prompt"})
    export(str(root / "*"), str(out))
    written = [p for p in tmp_path.rglob("*") if p.is_file() and not inside(root, p)]
    assert written and all(inside(out, p) for p in written), [p for p in written if not inside(out, p)]
    records = [json.loads(p.read_text()) for p in (out / "eval_runs").glob("*/*.json")]
    assert {r["task_id"] for r in records} == {"../../../escaped", "/tmp/abs_escaped"}  # the names themselves kept
    assert all((out / r["predictions_url"]).is_file() for r in records)
    assert not Path("/tmp/abs_escaped").exists()


def test_study_names_and_groups_name_folders_inside_the_study(tmp_path, monkeypatch):
    from legalft.study import load_study

    spec = tmp_path / "s.yaml"
    spec.write_text("name: ../../../outside\ngroups:\n  ../../up:\n    script: train.py\n    grid: {seed: ['../x']}\n")
    monkeypatch.chdir(tmp_path)
    study = load_study(str(spec))
    assert inside(tmp_path / "checkpoints" / "studies", study.folder)
    (run,) = study.runs
    assert inside(study.folder / "runs", Path(run.folder)) and inside(study.folder / "logs", study.log_of(run))
    with pytest.raises(UserError, match="no file studies/"):
        load_study("../../../etc/passwd")


def test_figure_names_are_one_name(tmp_path):
    from legalft.reporting.plots import slug

    for name in HOSTILE:
        assert (tmp_path / f"paired_{slug(name)}").parent == tmp_path


def test_legalbench_task_folders_stay_under_tasks(tmp_path):
    from legalft.data.legalbench import LegalBenchSource

    (tmp_path / "tasks").mkdir()
    source = LegalBenchSource(root=str(tmp_path), tasks=["hearsay"])
    with pytest.raises(UserError, match=r"task '\.\./\.\./x' has no folder .*tasks/_\._\.\._x\."):
        source.task_dir("../../x")
