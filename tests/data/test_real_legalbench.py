"""Checks on real LegalBench files; they run when LEGALFT_LEGALBENCH_DIR points at a LegalBench
folder with tasks/ (.ci/run sets it to ../shared/legalbench)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.realdata
LEGALBENCH = Path(os.environ.get("LEGALFT_LEGALBENCH_DIR", "/nonexistent"))
if not (LEGALBENCH / "tasks").is_dir():
    pytest.skip("LEGALFT_LEGALBENCH_DIR does not point at a LegalBench folder", allow_module_level=True)


def test_every_task_loads_its_train_split_and_renders_its_base_prompt():
    from legalft.data.legalbench import LegalBenchSource
    from legalft.llm.prompts import PromptBuilder

    tasks = LegalBenchSource(root=str(LEGALBENCH), tasks="all", splits=["train"]).load()
    assert len(tasks) == 162
    train_rows = sum(len(t.train) for t in tasks)
    # scalr publishes no train split and rule_qa's is empty; 835 rows in all per the paper
    assert sum(bool(t.train) for t in tasks) == 160 and 800 <= train_rows <= 900
    for task in tasks:
        if task.train:
            for prompt in PromptBuilder("base_prompt").build(task, task.train):
                assert "{{" not in prompt
            assert PromptBuilder("zero_shot").build(task, task.train[:1])[0].endswith("Answer:")


def test_development_test_splits_load_with_label_spaces_from_train():
    from legalft.data.legalbench import LegalBenchSource

    names = sorted(p.parent.name for p in (LEGALBENCH / "tasks").glob("*/test.tsv"))
    assert len(names) == 28
    for task in LegalBenchSource(root=str(LEGALBENCH), tasks=names).load():
        assert task.test and {e.labels[0] for e in task.test} <= set(task.spec.labels)
    (abercrombie,) = LegalBenchSource(root=str(LEGALBENCH), tasks=["abercrombie"]).load()
    assert len(abercrombie.spec.labels) == 5


def score_hearsay_command(prompt: str, run_dir: Path) -> tuple[str, ...]:
    """SmolLM2 scoring labels on 12 rows of hearsay's real test split with one prompt."""
    return ("evaluate.py", f"prompt={prompt}", "prompt.answer=score", "model=smollm2", "data=legalbench",
            f"data.root={LEGALBENCH}", "data.tasks=[hearsay]", "protocol.limit=12", f"hydra.run.dir={run_dir}")


@pytest.fixture(scope="module")
def hearsay_runs(tmp_path_factory) -> dict[str, Path]:
    """The published base prompt and the zero-shot prompt, scored side by side."""
    from commands import run_scripts

    folder = tmp_path_factory.mktemp("incontext")
    runs = {prompt: folder / prompt for prompt in ("base_prompt", "zero_shot")}
    for result in run_scripts(*(score_hearsay_command(prompt, run_dir) for prompt, run_dir in runs.items())):
        assert result.returncode == 0, result.stderr[-3000:]
    return runs


@pytest.fixture(scope="module")
def base_prompt_run(hearsay_runs) -> Path:
    return hearsay_runs["base_prompt"]


@pytest.mark.slow
def test_published_base_prompt_scored_on_hearsay_test_split(base_prompt_run):
    from legalft.evaluation.metrics import legalbench_scores
    from helpers import read_jsonl

    run_dir = base_prompt_run
    metrics = json.loads((run_dir / "metrics.json").read_text())
    hearsay = metrics["tasks"]["hearsay"]
    assert hearsay["n"] == 12 and hearsay["invalid_outputs"] == 0 and metrics["run"]["comparable"] is False
    records = read_jsonl(run_dir / "predictions.jsonl")
    assert all(r["prediction"] in ("Yes", "No") for r in records)
    expected = legalbench_scores("hearsay", "balanced_accuracy", [r["gold"] for r in records], [r["prediction"] for r in records])
    assert hearsay["balanced_accuracy"] == pytest.approx(expected["balanced_accuracy"])


@pytest.mark.slow
def test_report_compares_two_prompts_on_real_hearsay(tmp_path, hearsay_runs):
    """The published base prompt against the zero-shot prompt on hearsay's real test rows, then report=compare."""
    import csv
    import shutil

    from commands import run_script

    for prompt, run_dir in hearsay_runs.items():
        shutil.copytree(run_dir, tmp_path / "runs" / prompt)
    result = run_script("report.py", f"runs={tmp_path}/runs/*", f"out={tmp_path}/report",
                        "report.resamples=200")
    assert result.returncode == 0, result.stderr[-3000:]
    with open(tmp_path / "report" / "table_display.csv") as f:
        rows = {}
        for r in csv.DictReader(f):  # a task's measured row comes before rows of published numbers in other metrics
            rows.setdefault(r["task"], r)
    assert rows["hearsay"]["category"] == "conclusion" and rows["hearsay"]["metric"] == "balanced_accuracy"
    columns = [c for c in rows["hearsay"] if c.startswith("incontext")]
    assert len(columns) == 2 and all(c.endswith("†") for c in columns)  # protocol.limit: a subset, marked
    with open(tmp_path / "report" / "significance_tasks.csv") as f:
        (test,) = list(csv.DictReader(f))
    assert int(test["n"]) == 12 and 0 < float(test["p_permutation"]) <= 1


@pytest.mark.slow
@pytest.mark.parametrize("answer", ["score", "generate"])
def test_every_task_with_a_test_split_runs_end_to_end(tmp_path, answer):
    """The in-context runner over one task of each kind whose test split is here (metric, category, label set:
    5 of the 28 here, the 20 CUAD tasks are one kind), a row each: the task's published prompt is built, answered
    (labels scored, or generated and read by the reader of its kind) and yields its metric over exactly that row.
    Every task's prompt renders in test_every_task_loads_its_train_split_and_renders_its_base_prompt.
    (The two answer modes run one after the other: side by side on two cores they take longer than in turn.)"""
    import csv

    from legalft.data.legalbench import catalog
    from commands import run_script

    kinds = {}
    for task in sorted(p.parent.name for p in (LEGALBENCH / "tasks").glob("*/test.tsv")):
        with open(LEGALBENCH / "tasks" / task / "train.tsv", newline="") as f:
            labels = tuple(sorted({row["answer"] for row in csv.DictReader(f, delimiter="\t")}))
        kinds.setdefault((catalog()[task].metric, catalog()[task].category, labels), task)
    tasks = sorted(kinds.values())
    run_dir = tmp_path / "run"
    result = run_script("evaluate.py", "prompt=base_prompt", f"prompt.answer={answer}", "model=smollm2",
                        "data=legalbench", f"data.root={LEGALBENCH}", f"data.tasks=[{','.join(tasks)}]", "protocol.limit=1",
                        "prompt.max_new_tokens=8", f"hydra.run.dir={run_dir}", timeout=1800)  # protocol.limit=1: a row each
    assert result.returncode == 0, result.stderr[-3000:]
    scored = json.loads((run_dir / "metrics.json").read_text())["tasks"]
    assert sorted(scored) == tasks
    for task, scores in scored.items():
        assert scores["n"] == 1, task
        metric = catalog()[task].metric
        if metric != "manual":
            assert isinstance(scores[scores["metric"]], float), task


@pytest.mark.slow
def test_the_readmes_first_incontext_command_gives_labels(tmp_path):
    """evaluate.py prompt=base_prompt model=smollm2 (generation, LegalBench's completion prompts) on 4 rows
    of hearsay and abercrombie: every generation names a label, and the rows hold more than one label."""
    from commands import run_script
    from helpers import read_jsonl

    run_dir = tmp_path / "run"
    result = run_script("evaluate.py", "prompt=base_prompt", "model=smollm2", "data=legalbench", f"data.root={LEGALBENCH}",
                        "data.tasks=[hearsay,abercrombie]", "protocol.limit=4", f"hydra.run.dir={run_dir}",
                        process=True)  # what a process prints to a log: no progress bars
    assert result.returncode == 0, result.stderr[-3000:]
    assert "\r" not in result.stdout + result.stderr  # no progress bar's carriage returns in a log
    scores = json.loads((run_dir / "metrics.json").read_text())["tasks"]
    assert scores["hearsay"]["invalid_outputs"] == 0 and scores["abercrombie"]["invalid_outputs"] == 0
    gold = [r["gold"] for r in read_jsonl(run_dir / "predictions.jsonl") if r["task"] == "hearsay"]
    assert sorted(set(gold)) == ["No", "Yes"]
