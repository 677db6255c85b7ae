"""Studies: the plan a study file gives, where each run stands, and a small study run here end to end
(tests/apps/test_slurm.py submits one to SLURM)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, write_legalbench_task
from legalft.foundation.errors import UserError
from legalft.study import load_study, state_of

STUDIES = sorted((ROOT / "studies").glob("*.yaml"))


@pytest.mark.parametrize("path", STUDIES, ids=[p.stem for p in STUDIES])
def test_every_run_of_a_shipped_study_composes(path, tmp_path):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    study = load_study(str(path), folder=str(tmp_path / "study"))
    assert len(study.runs) >= 4 and len(study.groups()) >= 2
    for run in study.runs:
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
            cfg = compose(run.script.removesuffix(".py"), overrides=run.overrides)  # every key exists
        assert cfg.method is not None or cfg.get("prompt") is not None


def test_no_shipped_study_needs_a_gpu():
    """A study runs where it is started: the trainer group's default finds the GPU where there is one."""
    for path in STUDIES:
        study = load_study(str(path))
        assert not [run.key for run in study.runs if "trainer=gpu" in run.overrides], path.name


def write_study(path: Path, groups: dict) -> Path:
    path.write_text(yaml.safe_dump({"name": "small", "groups": groups}, sort_keys=False))
    return path


def test_a_grid_gives_one_run_per_combination_with_its_own_folder(tmp_path):
    spec = write_study(tmp_path / "s.yaml", {
        "encoder": {"script": "train.py", "overrides": ["data=proslex_sample"],
                    "grid": {"seed": [0, 1], "protocol.train_size": [8, None]}},
        "prompted": {"script": "evaluate.py", "overrides": ["prompt=zero_shot"]},
    })
    study = load_study(str(spec), ["trainer.max_epochs=1"], folder=str(tmp_path / "out"))
    encoder = study.groups()["encoder"]
    assert [r.name for r in encoder] == ["seed-0__protocol.train_size-8", "seed-0__protocol.train_size-null",
                                         "seed-1__protocol.train_size-8", "seed-1__protocol.train_size-null"]
    assert encoder[1].overrides == ["data=proslex_sample", "seed=0", "protocol.train_size=null", "trainer.max_epochs=1"]
    assert encoder[1].command("python")[-1] == f"hydra.run.dir={tmp_path / 'out' / 'runs' / 'encoder' / encoder[1].name}"
    assert [r.name for r in study.groups()["prompted"]] == ["run"]


@pytest.mark.parametrize("group,message", [
    ({"script": "rm.py"}, "groups.g.script: say which entry point"),
    ({"script": "train.py", "grid": {"seed": 3}}, "groups.g.grid: a mapping"),
    ({"script": "train.py", "grids": {}}, "unknown keys ['grids']"),
])
def test_a_bad_study_file_is_named_with_its_key(tmp_path, group, message):
    spec = write_study(tmp_path / "s.yaml", {"g": group})
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_study(str(spec))


def test_a_run_is_done_only_with_results_from_the_same_overrides(tmp_path):
    spec = write_study(tmp_path / "s.yaml", {"g": {"script": "train.py", "grid": {"seed": [0]}}})
    study = load_study(str(spec), folder=str(tmp_path / "out"))
    (run,) = study.runs
    assert state_of(study, run, None, {}).state == "pending"
    folder = Path(run.folder)
    (folder / ".hydra").mkdir(parents=True)
    log = study.log_of(run)
    log.parent.mkdir(parents=True)
    log.write_text("loading\nRuntimeError: out of memory\n")
    failed = state_of(study, run, {"mode": "local", "exit": 1}, {})
    assert failed.state == "failed" and failed.detail == "RuntimeError: out of memory"
    assert state_of(study, run, {"mode": "slurm", "job": "7_0"}, {"7_0": "RUNNING"}).state == "running"
    (folder / "metrics.json").write_text("{}")
    (folder / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(["seed=0"]))
    assert state_of(study, run, None, {}).state == "done"
    (folder / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(["seed=1"]))
    assert state_of(study, run, None, {}).state == "changed"


def test_status_without_overrides_describes_the_runs_the_study_ran_with_its_overrides(tmp_path):
    from legalft.study import load_study_as_run
    from legalft.study.plan import write_record

    spec = write_study(tmp_path / "s.yaml", {"g": {"script": "train.py", "grid": {"seed": [0, 1]}}})
    ran = load_study(str(spec), ["trainer.max_epochs=1"], folder=str(tmp_path / "out"))
    write_record(ran, {})  # what `study.py run s.yaml trainer.max_epochs=1` records
    for run in ran.runs:  # both finished
        (Path(run.folder) / ".hydra").mkdir(parents=True)
        (Path(run.folder) / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(run.overrides))
        (Path(run.folder) / "metrics.json").write_text("{}")
    status = load_study_as_run(str(spec), [], folder=str(tmp_path / "out"))  # `study.py status s.yaml`
    assert [state_of(status, run, None, {}).state for run in status.runs] == ["done", "done"]
    other = load_study_as_run(str(spec), ["trainer.max_epochs=2"], folder=str(tmp_path / "out"))
    assert [state_of(other, run, None, {}).state for run in other.runs] == ["changed", "changed"]


def test_a_finished_evaluate_run_without_hydra_s_record_is_done_by_the_study_s_record(tmp_path):
    spec = write_study(tmp_path / "s.yaml", {"g": {"script": "evaluate.py", "grid": {"prompt": ["zero_shot"]}}})
    study = load_study(str(spec), folder=str(tmp_path / "out"))
    (run,) = study.runs
    Path(run.folder).mkdir(parents=True)
    (Path(run.folder) / "metrics.json").write_text("{}")  # evaluate.py prompt=... writes no .hydra/overrides.yaml
    assert state_of(study, run, {"mode": "local", "exit": 0, "overrides": run.overrides}, {}).state == "done"
    assert state_of(study, run, {"mode": "local", "exit": 0}, {}).state == "done"  # a record from before it said
    changed = state_of(study, run, {"mode": "local", "exit": 0, "overrides": ["prompt=base_prompt"]}, {})
    assert changed.state == "changed"


def test_options_may_come_after_the_overrides(tmp_path, monkeypatch):
    """study.py run <study> --jobs 2 data.tasks=[...] (the order docs/cluster.md shows) and the reverse."""
    from legalft import study as study_package
    from legalft.apps import study as app

    spec = write_study(tmp_path / "s.yaml", {"g": {"script": "train.py"}})
    seen = []
    monkeypatch.setattr(study_package, "run_locally", lambda plan, jobs: seen.append((plan.overrides, jobs)) or 0)
    for argv in (["run", str(spec), "--jobs", "2", "data.tasks=[a,b]", "seed=1"],
                 ["run", str(spec), "data.tasks=[a,b]", "--jobs", "2", "seed=1"],
                 ["run", "--jobs", "2", str(spec), "data.tasks=[a,b]", "seed=1"]):
        monkeypatch.setattr(sys, "argv", ["study.py", *argv, "--folder", str(tmp_path / "out")])
        assert app.main() == 0
    assert seen == [(["data.tasks=[a,b]", "seed=1"], 2)] * 3


def test_a_second_command_on_a_running_study_is_refused_and_starts_nothing(tmp_path):
    from legalft.study import run_locally
    from legalft.study.plan import LOCK

    spec = write_study(tmp_path / "s.yaml", {"g": {"script": "train.py", "grid": {"seed": [0, 1]}}})
    study = load_study(str(spec), folder=str(tmp_path / "out"))
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from legalft.runs.lock import RunLock; "
         f"Path(sys.argv[1]).mkdir(parents=True); RunLock(Path(sys.argv[1]), {LOCK!r}).acquire(); print('held', "
         "flush=True); time.sleep(60)", str(study.folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match=r"study small .* is being run by another command \(host .*PID "
                                            rf"{holder.pid}.*study.py status"):
            run_locally(study, jobs=2)
        assert sorted(p.name for p in study.folder.iterdir()) == [LOCK]  # no run started, no record written
    finally:
        holder.kill()
        holder.wait()


def test_groups_select_a_study_s_runs_and_an_unknown_one_is_named(tmp_path):
    spec = write_study(tmp_path / "s.yaml", {
        "cpu": {"script": "train.py", "overrides": ["method=classical"], "grid": {"seed": [0, 1]}},
        "gpu": {"script": "train.py", "overrides": ["experiment=proslex_inlegalbert"], "slurm": ["--gpus-per-node=1"]},
    })
    study = load_study(str(spec), folder=str(tmp_path / "out"), groups=["cpu"])
    assert [r.key for r in study.runs] == ["cpu/seed-0", "cpu/seed-1"] and list(study.sbatch) == ["cpu"]
    with pytest.raises(UserError, match="--groups cpu,tpu: the study has no group 'tpu'; its groups are cpu, gpu"):
        load_study(str(spec), groups=["cpu", "tpu"])


def test_a_study_run_a_few_groups_at_a_time_keeps_every_group_it_planned_in_its_folder(tmp_path):
    from legalft.study.plan import read_record, write_record

    spec = write_study(tmp_path / "s.yaml", {
        "cpu": {"script": "train.py", "overrides": ["method=classical"], "grid": {"seed": [0, 1]}},
        "gpu": {"script": "train.py", "overrides": ["experiment=proslex_inlegalbert"], "slurm": ["--gpus-per-node=1"]},
    })
    folder = str(tmp_path / "out")
    write_record(load_study(str(spec), folder=folder, groups=["cpu"]), {"cpu/seed-0": {"exit": 0}})
    gpu = load_study(str(spec), folder=folder, groups=["gpu"])
    write_record(gpu, read_record(gpu)["attempts"])
    record = read_record(gpu)
    assert [r["folder"].split("/runs/")[1] for r in record["runs"]] == ["cpu/seed-0", "cpu/seed-1", "gpu/run"]
    assert record["sbatch"] == {"cpu": [], "gpu": ["--gpus-per-node=1"]}
    write_record(load_study(str(spec), folder=folder, groups=["gpu"]), {})  # a group planned again: once
    assert len(read_record(gpu)["runs"]) == 3


def test_the_real_size_study_lists_every_way_of_predicting_proslex(tmp_path):
    result = subprocess.run([sys.executable, "study.py", "run", "proslex_real_size", "--dry-run", "--folder",
                             str(tmp_path / "s"), "data.train_path=/data/fire2026/task1.jsonl",
                             "data.test_path=/data/PROSLEX/Dataset/Validation"], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    listed = {line.split("]")[0].strip("[").split("/")[0] for line in result.stdout.splitlines() if line.startswith("[")}
    assert listed == {"classical", "recipe", "minilm", "evidence", "setfit", "lora_classifier", "lora", "zero_shot",
                      "similar_cases", "inlegalbert", "legalbert", "longformer", "llm_zero_shot", "llm_similar_cases",
                      "report"}
    assert "data.train_path=/data/fire2026/task1.jsonl" in result.stdout and "(pending)" in result.stdout


def test_a_study_reads_keys_of_earlier_releases_where_they_are_now_and_says_so(tmp_path, capsys):
    """data.test_fraction in a study file, a grid key or on the command line reads as protocol.test_fraction, as
    train.py reads it, with the same note."""
    spec = write_study(tmp_path / "s.yaml", {
        "classical": {"script": "train.py", "overrides": ["method=classical", "data.test_fraction=0.25"]},
        "grid": {"script": "train.py", "overrides": ["method=classical"], "grid": {"data.val_fraction": [0.2]}}})
    study = load_study(str(spec), ["data.cv_folds=3"], folder=str(tmp_path / "out"))
    first, second = study.runs
    assert first.overrides == ["method=classical", "protocol.test_fraction=0.25", "protocol.cv_folds=3"]
    assert second.overrides == ["method=classical", "protocol.val_fraction=0.2", "protocol.cv_folds=3"]
    said = capsys.readouterr().err
    for old, new in (("data.test_fraction", "protocol.test_fraction"), ("data.val_fraction", "protocol.val_fraction"),
                     ("data.cv_folds", "protocol.cv_folds")):
        assert f"note: {old} is {new} now (conf/protocol)" in said


def test_an_override_goes_to_every_run_or_to_one_groups_runs(tmp_path):
    spec = write_study(tmp_path / "s.yaml", {"trained": {"script": "train.py", "overrides": ["method=classical"]},
                                             "prompted": {"script": "evaluate.py", "overrides": ["prompt=zero_shot"]}})
    study = load_study(str(spec), ["seed=3", "trained:trainer.max_epochs=1"], folder=str(tmp_path / "out"))
    by_group = {run.group: run.overrides for run in study.runs}
    assert by_group == {"trained": ["method=classical", "seed=3", "trainer.max_epochs=1"],
                        "prompted": ["prompt=zero_shot", "seed=3"]}
    with pytest.raises(UserError, match=r"lora:x=1: the study has no group 'lora' \(its groups: trained, prompted\)"):
        load_study(str(spec), ["lora:x=1"])


def test_runs_that_do_not_compose_stop_the_study_before_any_starts(tmp_path):
    from legalft.study import run_locally

    spec = write_study(tmp_path / "s.yaml", {"trained": {"script": "train.py", "overrides": ["method=classical"]},
                                             "prompted": {"script": "evaluate.py", "overrides": ["prompt=zero_shot"]}})
    study = load_study(str(spec), ["trainer.max_epochs=1"], folder=str(tmp_path / "out"))
    with pytest.raises(UserError, match=r"1 of the study's runs do not compose, so none was started:\n  prompted/run: "
                                        r"Could not override 'trainer.max_epochs'"):
        run_locally(study)
    assert not (tmp_path / "out").exists()


def test_a_dry_run_lists_the_commands_and_runs_nothing(tmp_path):
    spec = write_study(tmp_path / "s.yaml", {"trained": {"script": "train.py", "overrides": ["method=classical"],
                                                          "grid": {"seed": [0, 1]}},
                                             "prompted": {"script": "evaluate.py", "overrides": ["prompt=zero_shot"]}})
    result = subprocess.run([sys.executable, "study.py", "run", str(spec), "--dry-run", "--folder", str(tmp_path / "out"),
                             "prompted:prompt.k=2"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"study small: 3 runs; folder {tmp_path / 'out'}"
    assert "[trained/seed-1] (pending) python -m legalft.apps.train method=classical seed=1 hydra.run.dir=" in lines[2]
    assert "prompt=zero_shot prompt.k=2" in lines[3] and lines[4].startswith("[report] python -m legalft.apps.report")
    assert not (tmp_path / "out").exists()
    bad = subprocess.run([sys.executable, "study.py", "run", str(spec), "--dry-run", "trainer.max_epochs=1"], cwd=ROOT,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "error: prompted/run: Could not override 'trainer.max_epochs'" in bad.stderr


def test_a_failed_runs_summary_is_its_error_not_hydras_hint(tmp_path):
    from legalft.study.state import last_line

    log = tmp_path / "0.log"
    log.write_text("[INFO] loading\nerror: data.root: /x has no tasks/ folder.\n"
                   "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n")
    assert last_line(log) == "error: data.root: /x has no tasks/ folder."
    log.write_text("Traceback (most recent call last):\nRuntimeError: out of memory\n"
                   "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n")
    assert last_line(log) == "RuntimeError: out of memory"


def test_a_folder_that_is_not_the_study_s_is_refused(tmp_path):
    spec = write_study(tmp_path / "s.yaml", {"g": {"script": "train.py"}})
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "thesis.txt").write_text("mine")
    result = subprocess.run([sys.executable, "study.py", "run", str(spec), "--folder", str(tmp_path / "out")],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2 and "is not a study folder" in result.stderr
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["thesis.txt"]


def small_study(tmp_path: Path, tiny_bert_dir, tiny_causal_lm_dir) -> Path:
    """The encoder quick start x 2 seeds, two in-context prompts on hearsay, a tiny LoRA run."""
    root = tmp_path / "legalbench"
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tstatement number {i}\n" for i in range(6))
    write_legalbench_task(root, "hearsay", "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + rows)
    legalbench = ["model=smollm2", f"model.pretrained={tiny_causal_lm_dir}", "data=legalbench", f"data.root={root}",
                  "data.tasks=[hearsay]", "logger=none"]
    return write_study(tmp_path / "small.yaml", {
        "encoder": {"script": "train.py", "grid": {"seed": [0, 1]},
                    "overrides": ["experiment=quickstart", f"model.pretrained={tiny_bert_dir}", "model.max_length=64",
                                  "windows.stride=16", "windows.max_chunks=8", "trainer.max_epochs=2", "logger=none",
                                  "trainer.enable_progress_bar=false"]},
        "in_context": {"script": "evaluate.py", "overrides": legalbench, "grid": {"prompt": ["zero_shot", "base_prompt"]}},
        "lora": {"script": "train.py", "overrides": ["experiment=legalbench_lora", *legalbench[1:], "trainer.max_epochs=1",
                                                     "trainer.enable_progress_bar=false"]},
    })


def report_runs(study_folder: Path) -> set[str]:
    report = (study_folder / "report" / "report.md").read_text()
    return {line.split("/runs/")[1] for part in report.split("## Runs")[1].split("##")[0].split()
            for line in [part.strip(",")] if "/runs/" in line}


@pytest.mark.slow
def test_a_small_study_runs_here_reports_every_run_and_reruns_only_a_killed_run(tmp_path, tiny_bert_dir,
                                                                                  tiny_causal_lm_dir):
    spec, folder = small_study(tmp_path, tiny_bert_dir, tiny_causal_lm_dir), tmp_path / "study"
    command = [sys.executable, "study.py", "run", str(spec), "--jobs", "2", "--folder", str(folder)]
    first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lock = folder / "runs" / "encoder" / "seed-1" / ".lock"  # the second run: kill it while it trains
    deadline = time.time() + 300
    while not (lock.exists() and lock.read_text().strip()) and time.time() < deadline:
        time.sleep(0.05)
    os.kill(json.loads(lock.read_text())["pid"], signal.SIGKILL)
    out, _ = first.communicate(timeout=600)
    assert first.returncode == 1, out  # a run failed
    assert "5 to run, 2 at a time" in out and re.search(r"\[[1-5]/5\] encoder/seed-1: FAILED \(exit -9\)", out)
    assert re.search(r"\[[1-5]/5\] lora/run: done", out) and "[5/5]" in out
    assert report_runs(folder) == {"encoder/seed-0", "in_context/prompt-zero_shot", "in_context/prompt-base_prompt",
                                   "lora/run"}
    status = subprocess.run([sys.executable, "study.py", "status", str(spec), "--folder", str(folder)], cwd=ROOT,
                            capture_output=True, text=True).stdout
    assert "encoder                         1        0        1        0" in status, status
    # what each run took here, as the kernel counted its process
    assert re.search(r"done: encoder/seed-0: \d+\.\d min, peak \d+ MB resident", status), status
    record = json.loads((folder / "study.json").read_text())["attempts"]["encoder/seed-0"]
    assert record["seconds"] > 0 and 200 < record["peak_rss_mb"] < 20_000  # a Python process with torch in it
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "4 finished or running, 1 to run" in again.stdout and "[1/1] encoder/seed-1: done" in again.stdout
    assert len(report_runs(folder)) == 5  # the report now holds every run
    last = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert last.returncode == 0 and "0 to run" in last.stdout and "[1/" not in last.stdout


def test_a_study_whose_runs_all_fail_says_so_instead_of_reporting_nothing(tmp_path):
    spec = write_study(tmp_path / "s.yaml", {"g": {"script": "train.py", "grid": {"seed": [0]},
                                                   "overrides": ["method.lr=abc"]}})
    result = subprocess.run([sys.executable, "study.py", "run", str(spec), "--folder", str(tmp_path / "out")],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert "FAILED (exit 2)" in result.stdout and "method.lr='abc'" in result.stdout
    assert "error: no run of study small has finished, so there is no report to write" in result.stderr
    assert "matches nothing" not in result.stdout + result.stderr and not (tmp_path / "out" / "report").exists()
