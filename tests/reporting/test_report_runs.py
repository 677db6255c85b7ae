"""report=compare over statute runs, runs the entry points wrote, W&B, the appendix and calibration, locks and per-task
intervals."""

from __future__ import annotations

import json
import math
import os
import re

import pytest

from conftest import ROOT
from legalft.reporting.compare import compare

from report_runs import (ABERCROMBIE_GOLD, HEARSAY_GOLD, MARKS, YES_NO, measured_rows, noisy, read_display, runs_root,
                         write_run)


def test_statute_rows_for_proslex_runs(tmp_path):
    root = tmp_path / "runs"
    good = [["IPC 302"], ["IPC 302", "IPC 201"], ["IPC 420"], ["IPC 201"]] * 3
    ft = write_run(root / "ft", "finetune", "inlegalbert", 0, {"proslex": good})
    metrics = json.loads((ft / "metrics.json").read_text())
    metrics["tasks"]["proslex"].update(rouge1_f=0.412, bertscore_f=0.655)  # its evidence's explanation scores
    (ft / "metrics.json").write_text(json.dumps(metrics))
    write_run(root / "icl", "incontext", "smollm2", 0, {"proslex": [["IPC 302"]] * 12},
              extra={"prompt": "zero_shot", "k": 0, "answer": "generate"})
    out = compare(str(root / "*"), str(tmp_path / "report"), resamples=50,
                  baselines=[str(ROOT / "src" / "legalft" / "reporting" / "published_baselines.csv")])
    rows = measured_rows(out)
    assert rows["proslex"]["encoder inlegalbert"].startswith("1.000 [") and rows["proslex"]["metric"] == "macro_f1"
    assert rows["proslex: IPC 302"]["incontext smollm2 zero_shot k=0 generate"] == "0.667"  # precision 1/2, recall 1
    assert rows["proslex"]["reported: DeepSeek few-shot"] == "0.710" and rows["proslex"]["metric"] == "macro_f1"
    # a published number in another metric is in a row of that metric, beside each method's own value of it
    by_metric = {(r["task"], r["metric"]): r for r in read_display(out)}
    assert rows["proslex"]["reported: InLegalBERT fine-tuned"] == ""
    accuracy = by_metric[("proslex", "accuracy")]
    assert accuracy["reported: InLegalBERT fine-tuned"] == "0.820" and accuracy["encoder inlegalbert"] == "1.000"
    assert accuracy["incontext smollm2 zero_shot k=0 generate"] == "0.250"  # 3 of 12 label sets exactly right
    rouge, bertscore = by_metric[("proslex", "rouge1_f")], by_metric[("proslex", "bertscore_f")]
    assert rouge["reported: GPT-4 explanations"] == "0.200" and rouge["encoder inlegalbert"] == "0.412"
    assert bertscore["reported: GPT-4 explanations"] == "0.670" and bertscore["encoder inlegalbert"] == "0.655"
    assert rouge["incontext smollm2 zero_shot k=0 generate"] == ""  # it gave no explanations
    assert "published numbers for these tasks are in the metric the tasks are measured in" in (
        out / "report.md").read_text()


def test_per_label_rows_are_grouped_by_their_task(tmp_path):
    """A second multi-label task's labels get rows of their own, never PROSLEX's."""
    root = tmp_path / "runs"
    good = [["IPC 302"], ["IPC 302", "IPC 201"], ["IPC 420"], ["IPC 201"]] * 3
    run = write_run(root / "ft", "encoder", "minilm", 0, {"proslex": good})
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["tasks"]["clauses"] = {**metrics["tasks"]["proslex"], "category": "contracts"}
    (run / "metrics.json").write_text(json.dumps(metrics))
    records = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records + [
        {**r, "task": "clauses"} for r in records]))
    out = compare(str(root / "*"), str(tmp_path / "report"), resamples=20)
    categories = {row["task"]: row["category"] for row in read_display(out)}
    assert categories["proslex: IPC 302"] == "proslex: per label"
    assert categories["clauses: IPC 302"] == "clauses: per label" and categories["clauses"] == "contracts"


@pytest.mark.slow  # starts W&B
def test_the_table_goes_to_an_active_wandb_run(runs_root, tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    run = wandb.init(project="legalft-test", dir=str(tmp_path))
    try:
        compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=20)
        assert "comparison" in run.summary.keys()
    finally:
        wandb.finish()
        wandb.teardown()  # stops the W&B service this process started (later runs must not share it)
        os.environ.pop("WANDB_SERVICE", None)


@pytest.mark.slow
def test_report_over_runs_the_entry_points_wrote(tmp_path, tiny_bert_dir, tiny_causal_lm_dir):
    """A data-efficiency study and an in-context baseline on the sample, then the report, all as a user runs them."""
    from commands import run_script

    runs = tmp_path / "runs"
    trained = run_script("train.py", "-m", "data=proslex_sample", f"model.pretrained={tiny_bert_dir}",
                         "model.max_length=64", "windows.stride=16", "windows.max_chunks=4", "method.lr=3e-3",
                         "method.head_lr=3e-3", "trainer.max_epochs=3", "logger=none", "protocol.train_size=24,48",
                         f"hydra.sweep.dir={runs}/finetune")
    assert trained.returncode == 0, trained.stderr[-3000:]
    prompted = run_script("evaluate.py", "prompt=proslex_fewshot", "model=smollm2",
                          f"model.pretrained={tiny_causal_lm_dir}", "data=proslex_sample", "prompt.max_new_tokens=6",
                          "prompt.max_input_words=60", f"hydra.run.dir={runs}/incontext")
    assert prompted.returncode == 0, prompted.stderr[-3000:]
    out = tmp_path / "report"
    result = run_script("report.py", f"runs={runs}/**", f"out={out}", "report.resamples=50")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"report: {out}/report.md" in result.stdout
    rows = measured_rows(out)
    columns = set(rows["proslex_sample"])
    from legalft.kit.fusion import model_label

    for size, folder in zip((24, 48), sorted((runs / "finetune").glob("[0-9]*"), key=lambda f: int(f.name))):
        use = json.loads((folder / "fusion.json").read_text())["use"]  # chosen on held-out macro-F1
        assert f"encoder {model_label('minilm', use)} n={size}" in columns
    assert any(c.startswith("incontext smollm2 few_shot") for c in columns)
    assert (out / "data_efficiency_proslex_sample.png").exists()
    assert "proslex_sample" in (out / "significance_tasks.csv").read_text()

    empty = run_script("report.py", f"runs={tmp_path}/nothing/**", f"out={tmp_path}/r2")
    assert empty.returncode == 2 and "matches nothing" in empty.stderr and not (tmp_path / "r2").exists()


@pytest.mark.slow
def test_a_report_with_logger_wandb_is_a_wandb_run_of_its_own(runs_root, tmp_path):
    from commands import run_script
    from helpers import wandb_records

    from conftest import ROOT

    out, wandb_home = tmp_path / "report", tmp_path / "checkpoints"
    stray = ROOT / "wandb_run_id"  # a run folder's file, which a report has none of
    stray_before = stray.exists()
    result = run_script("report.py", f"runs={runs_root}/*", f"out={out}", "report.resamples=20",
                        "logger=wandb", f"paths.checkpoints_dir={wandb_home}", env={"WANDB_API_KEY": ""})  # offline
    assert result.returncode == 0, result.stderr[-3000:]
    history, job_types, artifacts, tags, config = set(), set(), 0, set(), {}
    for record in wandb_records(wandb_home):
        kind = record.WhichOneof("record_type")
        if kind == "run":  # wandb.init's config arrives with the run record
            job_types.add(record.run.job_type)
            tags |= set(record.run.tags)
            config.update({item.key: json.loads(item.value_json) for item in record.run.config.update})
        if kind == "history":
            history |= {item.key or "/".join(item.nested_key) for item in record.history.item}
        artifacts += kind == "artifact" and record.artifact.type == "report"
    assert {"table/nrows", "significance_tasks/nrows"} <= history  # the long table and the paired tests
    assert any(key.startswith("figures/category_bars") for key in history)
    assert job_types == {"report"} and artifacts == 1  # the report folder, as an artifact
    assert tags == {"report", "report:compare"}, tags  # the command, and the report it wrote
    assert config["config"]["report"]["resamples"] == 20 and config["runs"] == f"{runs_root}/*"
    assert "logger" not in config["config"] and stray.exists() == stray_before
    assert not [p for p in out.rglob("*") if "wandb" in p.name]  # out holds the report and nothing else


def test_appendix_confusion_matrices_and_per_label_rows(runs_root, tmp_path):
    write_run(runs_root / "statutes", "encoder", "inlegalbert", 0,
              {"proslex": [["IPC 302"], ["IPC 302"], ["IPC 420"], ["IPC 201"]] * 3})
    out = compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=20)
    appendix = (out / "appendix.md").read_text()
    hearsay = appendix.split("## hearsay")[1].split("## ")[0]
    # the encoder's seed-0 run got examples 1 (gold No) and 2 (gold Yes) wrong: 9 right of each class
    encoder = hearsay.split("**encoder minilm**")[1].split("**")[0]
    assert re.search(r"\| no\s+\|\s+9 \|\s+1 \|", encoder) and re.search(r"\| yes\s+\|\s+1 \|\s+9 \|", encoder)
    proslex = appendix.split("## proslex")[1]
    assert "IPC 201" in proslex and "precision" in proslex and "recall" in proslex
    assert "[appendix.md](appendix.md)" in (out / "report.md").read_text()


def test_calibration_from_label_scores(runs_root, tmp_path):
    """An in-context run's label log-likelihoods: the reliability diagram pools its decisions and a
    confidence of softmax(scores) is what it draws."""
    from legalft.reporting.appendix import confidence_pairs
    from legalft.reporting.runs import read_run

    path = runs_root / "icl" / "predictions.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:  # the predicted label twice as likely as the other
        other = "No" if record["prediction"] == "Yes" else "Yes"
        record["scores"] = {record["prediction"]: math.log(2 / 3), other: math.log(1 / 3)}
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    confidence, correct = confidence_pairs(read_run(runs_root / "icl"))
    assert confidence == pytest.approx([2 / 3] * 20) and correct.sum() == 10
    out = compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=20)
    svg = (out / "calibration.svg").read_text()
    assert "ECE 0.167, 20 decisions" in svg  # |0.5 - 2/3| in the one bin that holds every decision


def test_a_lock_file_the_report_did_not_make_is_left_where_it_was(runs_root, tmp_path):
    """Only the lock file a report made is removed when it ends; one already there (another command's,
    or left by a killed report) stays."""
    lock = tmp_path / ".report.lock"
    lock.write_text("")
    compare(str(runs_root / "*"), str(tmp_path / "report"), resamples=20)
    assert lock.exists() and (tmp_path / "report" / "report.md").exists()
    compare(str(runs_root / "*"), str(tmp_path / "other"), resamples=20)
    assert not (tmp_path / ".other.lock").exists()  # its own, removed


def test_a_method_run_once_per_task_gets_each_tasks_interval_from_the_run_that_scored_it(tmp_path):
    """A multirun over tasks (one encoder or LLM-classifier run per task): every cell is one run's, and its
    interval over the test rows comes from the run that scored that task."""
    root = tmp_path / "runs"
    write_run(root / "hearsay", "encoder", "minilm", 0, {"hearsay": noisy(HEARSAY_GOLD, {1, 2}, YES_NO)},
              extra={"config_digest": "data.tasks=[hearsay]"})
    write_run(root / "abercrombie", "encoder", "minilm", 0, {"abercrombie": noisy(ABERCROMBIE_GOLD, {1}, MARKS)},
              extra={"config_digest": "data.tasks=[abercrombie]"})
    out = compare(str(root / "*"), str(tmp_path / "report"), resamples=50)
    rows = measured_rows(out)
    for task in ("hearsay", "abercrombie"):
        cell = rows[task]["encoder minilm"]
        assert re.fullmatch(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", cell), (task, cell)
