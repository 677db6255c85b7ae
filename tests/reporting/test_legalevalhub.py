"""LegalEvalHub records: read from a clone (bad records named and skipped, nothing executed), set beside
the user's runs as published rows and leaderboards, and written back as evaluation runs that the
reader takes in again."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from legalft.reporting.compare import compare
from legalft.reporting.legalevalhub import leaderboard, read_hub
from legalft.reporting.legalevalhub_export import export
from report_runs import ABERCROMBIE_GOLD, HEARSAY_GOLD, MARKS, YES_NO, noisy, write_run

CLASSIFICATION = ["accuracy", "balanced_accuracy", "f1_macro", "f1_micro", "valid_predictions_ratio"]


def write_json(path: Path, content) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))


def published(model: str, task: str, balanced_accuracy: float, number: int) -> dict:
    return {"submission_id": f"run_2025_07_0{number}_120000_abc{number:03d}", "task_id": task, "model_name": model,
            "prompt_id": "base", "submitter": "someone", "submission_time": "2025-07-01T12:00:00Z",
            "metrics": {"accuracy": balanced_accuracy, "balanced_accuracy": balanced_accuracy,
                        "f1_macro": balanced_accuracy, "f1_micro": balanced_accuracy,
                        "valid_predictions_ratio": 0.9, "n_samples": 20}}


@pytest.fixture
def hub_clone(tmp_path) -> Path:
    """A LegalEvalHub clone in miniature: two tasks, three models (one without abercrombie), a preset,
    and five bad records."""
    root = tmp_path / "LegalEvalHub"
    for task, reasoning in (("hearsay", "Issue-spotting"), ("abercrombie", "Rule-application/Rule-conclusion")):
        write_json(root / "tasks" / f"{task}.json", {"task_id": task, "family": "LegalBench",
                                                     "legal_reasoning_type": reasoning,
                                                     "metrics": [{"name": m, "direction": "maximize"}
                                                                 for m in CLASSIFICATION]})
    runs = [("strong", "hearsay", 0.95), ("strong", "abercrombie", 0.90), ("weak", "hearsay", 0.55),
            ("weak", "abercrombie", 0.40), ("partial", "hearsay", 0.99)]
    for number, (model, task, value) in enumerate(runs, 1):
        record = published(model, task, value, number)
        write_json(root / "eval_runs" / task / f"{record['submission_id']}.json", record)
    bad = root / "eval_runs" / "hearsay"
    write_json(bad / "truncated.json", '{"task_id": "hearsay", "model_na')
    write_json(bad / "nan.json", '{"task_id": "hearsay", "model_name": "x", "metrics": {"balanced_accuracy": NaN}}')
    write_json(bad / "string.json", {**published("y", "hearsay", 0.5, 7), "metrics": {"balanced_accuracy": "0.5"}})
    write_json(bad / "unknown_task.json", published("z", "no_such_task", 0.5, 8))
    write_json(bad / "code.json", {**published("w", "hearsay", 0.5, 9),
                                   "metrics": {"balanced_accuracy": {"_target_": "os.system", "command": "touch x"}}})
    write_json(root / "web" / "task_presets.json", {"presets": {
        "legalbench_full": {"name": "LegalBench (Full)", "tasks": ["hearsay", "abercrombie", "rule_qa"]}}})
    return root


def test_bad_records_are_named_and_skipped(hub_clone):
    hub = read_hub(hub_clone)
    assert sorted((r.model, r.task) for r in hub.runs) == [
        ("partial", "hearsay"), ("strong", "abercrombie"), ("strong", "hearsay"), ("weak", "abercrombie"),
        ("weak", "hearsay")]
    skipped = {Path(s.split(":")[0]).name: s for s in hub.skipped}
    assert set(skipped) == {"truncated.json", "nan.json", "string.json", "unknown_task.json", "code.json"}
    assert "not JSON" in skipped["truncated.json"] and "not a finite number" in skipped["nan.json"]
    assert "'no_such_task' is not a task" in skipped["unknown_task.json"]
    assert not (hub_clone / "x").exists() and not Path("x").exists()  # a record's content is never run


@pytest.mark.parametrize("metrics, message", [
    ({"balanced_accuracy": 1e308}, "'balanced_accuracy' is 1e+308, outside 0 to 1"),
    ({"balanced_accuracy": 7.0}, "outside 0 to 1"),
    ({"balanced_accuracy": -3.0}, "outside 0 to 1"),
    ({"balanced_accuracy": 0.5, "valid_predictions_ratio": 1.5}, "'valid_predictions_ratio' is 1.5, outside 0 to 1"),
    ({"balanced_accuracy": 0.5, "n_samples": 2.5}, "n_samples is 2.5, not a whole number"),
    ({"balanced_accuracy": 0.5, "n_samples": -4}, "n_samples is -4"),
])
def test_a_record_claiming_an_impossible_score_is_skipped_not_ranked_first(hub_clone, metrics, message):
    write_json(hub_clone / "eval_runs" / "hearsay" / "boast.json", {**published("boaster", "hearsay", 0.5, 11),
                                                                    "metrics": metrics})
    hub = read_hub(hub_clone)
    assert "boaster" not in {r.model for r in hub.runs}
    assert any(s.startswith(str(hub_clone / "eval_runs" / "hearsay" / "boast.json")) and message in s
               for s in hub.skipped), hub.skipped


@pytest.mark.parametrize("presets", [["legalbench_full"], "LegalBench", 3])
def test_presets_that_are_not_an_object_are_named_and_skipped(hub_clone, presets):
    write_json(hub_clone / "web" / "task_presets.json", {"presets": presets})
    hub = read_hub(hub_clone)
    assert hub.presets == {} and any("task_presets.json: presets is a JSON" in s for s in hub.skipped)
    assert len(hub.runs) == 5


def test_leaderboard_ranks_on_shared_tasks_and_lists_partial_models(hub_clone):
    hub = read_hub(hub_clone)
    from legalft.reporting.legalevalhub import published_rows

    rows = {"hearsay": ("issue", "balanced_accuracy"), "abercrombie": ("conclusion", "balanced_accuracy")}
    table, unshared = published_rows(hub, rows)
    entries, facts = leaderboard(["hearsay", "abercrombie", "rule_qa"], {"mine": {"hearsay": 0.8, "abercrombie": 0.6}},
                                 table, rows)
    assert facts["shared"] == 2 and facts["not_in_runs"] == ["rule_qa"] and not unshared
    assert [(e["name"], e["rank"], e["tasks"]) for e in entries] == [
        ("strong", 1, 2), ("mine", 2, 2), ("weak", 3, 2), ("partial", None, 1)]  # partial: listed, not ranked
    assert entries[0]["mean"] == pytest.approx(0.925)


def test_report_shows_runs_among_legalevalhub_models(tmp_path, hub_clone):
    root = tmp_path / "runs"
    write_run(root / "ft", "encoder", "minilm", 0, {"hearsay": noisy(HEARSAY_GOLD, {1, 2, 3, 4}, YES_NO),
                                                    "abercrombie": noisy(ABERCROMBIE_GOLD, {1, 2, 3, 4, 5, 6}, MARKS)})
    write_run(root / "icl", "incontext", "smollm2", 0, {"hearsay": noisy(HEARSAY_GOLD, set(range(10)), YES_NO)},
              extra={"prompt": "base_prompt", "k": 0, "answer": "score"})  # no abercrombie: no rank in its category
    out = compare(str(root / "*"), str(tmp_path / "report"), resamples=20, legalevalhub=str(hub_clone))
    report = (out / "report.md").read_text()
    assert "### LegalBench (Full): 1 of its 3 tasks" in report  # hearsay: the one task both methods scored
    assert "5 LegalEvalHub records skipped" in report and "truncated.json" in report
    import csv

    with open(out / "legalevalhub_leaderboards.csv") as f:
        board = list(csv.DictReader(f))
    assert [(row["model"], row["rank"]) for row in board] == [  # on hearsay alone
        ("partial", "1"), ("strong", "2"), ("encoder minilm", "3"), ("weak", "4"),
        ("incontext smollm2 base_prompt k=0 score", "5")]
    with open(out / "legalevalhub_categories.csv") as f:
        categories = {(row["category"], row["method"]): row for row in csv.DictReader(f)}
    assert categories[("issue", "encoder minilm")]["rank"] == "3 of 4"  # 0.8 below partial (0.99), strong (0.95)
    assert categories[("interpretation", "encoder minilm")]["rank"] == "2 of 3"  # abercrombie: 0.7 after strong
    assert ("interpretation", "incontext smollm2 base_prompt k=0 score") not in categories


def test_export_writes_evaluation_runs_the_reader_takes_back(tmp_path, hub_clone):
    root = tmp_path / "runs"
    hearsay = noisy(HEARSAY_GOLD, {1, 2, 3}, YES_NO)
    hearsay[5] = "I am not sure"  # an invalid prediction
    write_run(root / "icl", "incontext", "smollm2", 0, {"hearsay": hearsay, "abercrombie": ABERCROMBIE_GOLD},
              extra={"prompt": "base_prompt", "k": 0, "answer": "generate"})
    out = export(str(root / "*"), str(tmp_path / "submission"), legalevalhub=str(hub_clone), submitter="me")
    records = sorted((out / "eval_runs").glob("*/*.json"))
    assert [p.parent.name for p in records] == ["abercrombie", "hearsay"]
    metrics_of = json.loads((root / "icl" / "metrics.json").read_text())["tasks"]
    for path in records:
        record = json.loads(path.read_text())
        assert re.fullmatch(r"run_\d{4}_\d{2}_\d{2}_\d{6}_[0-9a-f]{6}", record["submission_id"])
        assert path.stem == record["submission_id"] and record["prompt_id"] == "base"
        assert record["model_name"] == "smollm2" and record["submitter"] == "me"
        assert set(CLASSIFICATION) | {"n_samples"} == set(record["metrics"])  # every metric the task file names
        assert record["metrics"]["n_samples"] == 20
        assert record["metrics"]["balanced_accuracy"] == pytest.approx(metrics_of[record["task_id"]]["balanced_accuracy"])
        predictions = json.loads((out / record["predictions_url"]).read_text())
        assert len(predictions) == 20 and {"id", "gold", "prediction"} <= set(predictions[0])
    # a label-scoring run of the same model and prompt is told apart, and a run marked not comparable is said so
    write_run(root / "icl_score", "incontext", "smollm2", 0, {"hearsay": HEARSAY_GOLD}, comparable=False,
              extra={"prompt": "base_prompt", "k": 0, "answer": "score"})
    both = export(str(root / "*"), str(tmp_path / "both"), submitter="me")
    prompt_ids = sorted(json.loads(p.read_text())["prompt_id"] for p in (both / "eval_runs" / "hearsay").glob("*.json"))
    assert prompt_ids == ["base", "base-score"]
    readme = (both / "README.md").read_text()
    assert "## Written, not comparable with published numbers" in readme and "icl_score: marked not comparable" in readme
    hearsay_record = json.loads(next(p for p in records if p.parent.name == "hearsay").read_text())
    assert hearsay_record["metrics"]["valid_predictions_ratio"] == pytest.approx(19 / 20)
    # round trip: the written runs, put into the clone, are read as published runs of smollm2
    shutil.copytree(out / "eval_runs", hub_clone / "eval_runs", dirs_exist_ok=True)
    hub = read_hub(hub_clone)
    back = {r.task: r.metrics for r in hub.runs if r.model == "smollm2"}
    assert back.keys() == {"hearsay", "abercrombie"}
    assert back["hearsay"]["balanced_accuracy"] == pytest.approx(metrics_of["hearsay"]["balanced_accuracy"])
    assert len(hub.skipped) == 5  # only the fixture's bad records


def test_export_refuses_when_nothing_can_be_written(tmp_path, hub_clone):
    from legalft.foundation.errors import UserError

    root = tmp_path / "runs"
    write_run(root / "ft", "encoder", "minilm", 0, {"proslex": [["IPC 302"]] * 12})
    with pytest.raises(UserError, match="no run task could be written"):
        export(str(root / "*"), str(tmp_path / "submission"), legalevalhub=str(hub_clone))
    assert not (tmp_path / "submission").exists()


def test_not_a_clone(tmp_path):
    from legalft.foundation.errors import UserError

    with pytest.raises(UserError, match="not a LegalEvalHub clone"):
        read_hub(tmp_path)


@pytest.mark.realdata
@pytest.mark.skipif(not os.environ.get("LEGALFT_LEGALEVALHUB_DIR"), reason="set LEGALFT_LEGALEVALHUB_DIR")
def test_the_real_records_read_whole():
    hub = read_hub(os.environ["LEGALFT_LEGALEVALHUB_DIR"])
    assert len(hub.runs) == 1271 and not hub.skipped and len({r.model for r in hub.runs}) == 20
    name, tasks = hub.presets["legalbench_full"]
    assert name == "LegalBench (Full)" and len(tasks) == 161
    full = {r.model for r in hub.runs if r.task in tasks}
    assert sum(sum(1 for r in hub.runs if r.model == m and r.task in tasks) >= 155 for m in full) >= 7


@pytest.mark.slow
def test_both_reports_from_the_command_line(tmp_path, hub_clone):
    import subprocess
    import sys

    root = tmp_path / "runs"
    write_run(root / "icl", "incontext", "smollm2", 0, {"hearsay": noisy(HEARSAY_GOLD, {1}, YES_NO)},
              extra={"prompt": "base_prompt", "k": 0, "answer": "generate"})
    write_run(root / "ft", "encoder", "minilm", 0, {"hearsay": noisy(HEARSAY_GOLD, {1, 2}, YES_NO)})
    repo = Path(__file__).resolve().parents[2]
    for script, args, expected in (  # report.py, and evaluate.py report=..., which still writes reports
            ("report.py", ["report=legalevalhub", f"runs={root}/*", f"out={tmp_path / 'submission'}",
                           f"report.legalevalhub={hub_clone}"], tmp_path / "submission" / "README.md"),
            ("evaluate.py", ["report=compare", f"runs={root}/*", f"out={tmp_path / 'report'}", "report.resamples=20",
                             f"report.baselines.legalevalhub={hub_clone}"],
             tmp_path / "report" / "legalevalhub_leaderboards.csv")):
        result = subprocess.run([sys.executable, script, *args], cwd=repo, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        assert expected.exists(), result.stdout[-2000:]
        assert ("note: reports are their own command now" in result.stdout) == (script == "evaluate.py")
    assert len(list((tmp_path / "submission" / "eval_runs" / "hearsay").glob("run_*.json"))) == 2
