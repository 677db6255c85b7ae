"""Run folders from someone else are read, never run: saved configs build only the project's classes, folders that
cannot be rescored say what they are, foreign checkpoints are refused, overlap with the training data is counted."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from conftest import ROOT, proslex_doc, write_collection
from legalft.foundation.errors import UserError
from legalft.runs.folder import RunFolder
from legalft.runs.saved_config import check_rescorable, instantiate_from_run

from run_folders import train_command


# --- run folders from someone else --------------------------------------------------------------------
@pytest.mark.parametrize("planted, key", [
    ({"data": {"_target_": "os.system", "command": "touch /tmp/owned"}}, r"data._target_='os.system'"),
    ({"data": {"_target_": "legalft.data.proslex.ProslexSource",
               "label_map": {"_target_": "builtins.exec", "source": "1"}}}, r"data.label_map._target_='builtins.exec'"),
    ({"data": {"_target_": "legalft.data.proslex.ProslexSource", "root": "${wandb_run_id:/tmp}"}}, r"data.root=.* is an interpolation"),
    ({"data": {"_target_": ["os.system"], "command": "touch /tmp/owned"}}, r"data._target_=\['os.system'\] is not one of"),
    ({"data": {"_target_": {"nested": "os.system"}}}, r"data._target_=\{'nested': 'os.system'\} is not one of"),
])
def test_a_run_folder_config_builds_only_the_projects_classes(tmp_path, planted, key):
    config = tmp_path / "config.yaml"
    with pytest.raises(UserError, match=rf"config.yaml: {key}"):
        instantiate_from_run(OmegaConf.create(planted).data, "data", config)


def test_a_run_folder_config_builds_a_data_source(tmp_path):
    write_collection(tmp_path / "Test", "a.json", {"x1": proslex_doc()})
    node = OmegaConf.create({"_target_": "legalft.data.proslex.ProslexSource", "root": str(tmp_path),
                             "label_map": {"s3": {"label": "IPC 302"}}})
    (task,) = instantiate_from_run(node, "data", tmp_path / "config.yaml").load_test()
    assert [e.id for e in task.test] == ["x1"]


@pytest.mark.parametrize("case, message", [
    ("missing", "no such folder"),
    ("not a run", r"not a run folder \(it has no config.yaml\)"),
    ("in-context", "an in-context run; it has no trained weights to rescore"),
    ("in-context, recorded method", "an in-context run; it has no trained weights to rescore"),
    ("in-context, previous release", "an in-context run; it has no trained weights to rescore"),
    ("read-only", r"read-only, and scoring writes metrics.json.*cp -r"),
    ("target is a list", r"method._target_ is a list \(\['os.system'\]\), not the name of a class"),
])
def test_folders_that_cannot_be_rescored_say_what_they_are(tmp_path, monkeypatch, case, message):
    folder = tmp_path / "run"
    if case != "missing":
        folder.mkdir()
    if case == "in-context":
        (folder / "config.yaml").write_text("incontext:\n  strategy: base_prompt\nseed: 0\n")
    if case == "in-context, recorded method":  # what evaluate.py prompt=... writes now
        (folder / "config.yaml").write_text("method:\n  _target_: legalft.methods.incontext.IncontextMethod\n"
                                            "prompt:\n  strategy: base_prompt\nseed: 0\n")
    if case == "in-context, previous release":  # where the class lived then
        (folder / "config.yaml").write_text("method:\n  _target_: legalft.incontext.runner.IncontextMethod\n"
                                            "prompt:\n  strategy: base_prompt\nseed: 0\n")
    if case == "target is a list":
        (folder / "config.yaml").write_text("method:\n  _target_: [os.system]\nseed: 0\n")
    if case == "read-only":  # tests run as root, whom chmod does not stop: the check asks os.access
        (folder / "config.yaml").write_text("trainer:\n  max_epochs: 1\n")
        monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != folder)
    with pytest.raises(UserError, match=message) as refused:
        check_rescorable(folder)
    assert folder.exists() == (case != "missing")
    assert "hydra.run.dir set to this folder" not in str(refused.value)  # never advice that would overwrite it


@pytest.mark.slow
def test_evaluate_creates_nothing_for_a_folder_it_cannot_rescore(tmp_path):
    from commands import run_script

    result = run_script("evaluate.py", f"run={tmp_path / 'nothing'}")
    assert result.returncode == 2 and "no such folder" in result.stderr and not (tmp_path / "nothing").exists()


# --- rescoring on the run's own training data ---------------------------------------------------------
def test_overlap_with_the_training_data_is_counted_by_task_and_text_or_document_id(tmp_path):
    from legalft.data.example import Example, TaskSpec

    proslex = TaskSpec("proslex", ("IPC 147", "IPC 302"), True)
    run = RunFolder(tmp_path)
    trained = [Example(id="a", text="The accused fled.", labels=("IPC 302",)),
               Example(id="b", text="A mob rioted.", labels=("IPC 147",))]
    assert run.overlap_with_training([(proslex, trained)]) is None  # an older run folder: not recorded
    run.write_training_data([(proslex, trained)])
    scored = [Example(id="a", text="other text", labels=("IPC 302",)),  # same document id
              Example(id="z", text="A mob rioted.", labels=("IPC 147",)),  # same text
              Example(id="y", text="New facts.", labels=("IPC 147",))]
    assert run.overlap_with_training([(proslex, scored)]) == 2
    assert json.loads(run.training_data.read_text())["tasks"]["proslex"]["ids"] == ["a", "b"]
    assert run.flag_overlap([(proslex, scored)]) == {"comparable": False, "overlap_with_training": 2}
    assert run.trained_on_exactly([(proslex, trained)]) and not run.trained_on_exactly([(proslex, trained[:1])])


def test_legalbench_row_numbers_and_other_tasks_rows_are_not_overlap(tmp_path):
    """LegalBench numbers each split's rows from 0, and one task's ids say nothing of another's."""
    from legalft.data.example import Example, TaskSpec

    hearsay = TaskSpec("hearsay", ("No", "Yes"), False, ids_name_documents=False)
    abercrombie = TaskSpec("abercrombie", ("generic", "fanciful"), False, ids_name_documents=False)
    run = RunFolder(tmp_path)
    run.write_training_data([(hearsay, [Example(id=str(i), text=f"train {i}", labels=("Yes",)) for i in range(4)]),
                             (abercrombie, [Example(id="0", text="shared text", labels=("generic",))])])
    test_hearsay = [Example(id=str(i), text=f"test {i}", labels=("No",)) for i in range(6)]
    test_abercrombie = [Example(id=str(i), text=f"mark {i}", labels=("generic",)) for i in range(3)]
    assert run.overlap_with_training([(hearsay, test_hearsay), (abercrombie, test_abercrombie)]) == 0
    assert run.flag_overlap([(hearsay, test_hearsay)]) == {}
    repeated = [Example(id="9", text="train 2", labels=("No",)), Example(id="8", text="shared text", labels=("No",))]
    assert run.overlap_with_training([(hearsay, repeated)]) == 1  # the same text in the same task only


def test_a_run_folder_of_an_older_release_is_checked_by_its_flat_record(tmp_path):
    from legalft.data.example import Example, TaskSpec

    run = RunFolder(tmp_path)
    run.training_data.write_text(json.dumps({"ids": ["0", "d1"], "text_sha256": []}))
    legalbench = TaskSpec("hearsay", ("No", "Yes"), False, ids_name_documents=False)
    custom = TaskSpec("custom", ("a", "b"), False)
    assert run.overlap_with_training([(legalbench, [Example(id="0", text="x", labels=("No",))])]) == 0
    assert run.overlap_with_training([(custom, [Example(id="d1", text="x", labels=("a",))])]) == 1
    run.training_data.write_text("{damaged")
    assert run.overlap_with_training([(custom, [])]) is None


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, tiny_bert_dir) -> Path:
    from commands import run_script

    run_dir = tmp_path_factory.mktemp("safety") / "run"
    result = run_script("train.py", *train_command(tiny_bert_dir, run_dir, "trainer.max_epochs=2")[2:])
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


@pytest.mark.slow
def test_rescoring_a_planted_config_builds_nothing(trained_run, tmp_path):
    import shutil

    import yaml

    from commands import run_script

    copy = tmp_path / "shared_run"
    shutil.copytree(trained_run, copy)
    config = yaml.safe_load((copy / "config.yaml").read_text())
    config["datamodule"] = {"_target_": "os.system", "command": f"touch {tmp_path / 'owned'}"}
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    before = (copy / "metrics.json").read_text()
    result = run_script("evaluate.py", f"run={copy}")
    assert result.returncode == 2 and "datamodule._target_='os.system' is not one of the classes" in result.stderr
    assert not (tmp_path / "owned").exists() and (copy / "metrics.json").read_text() == before


@pytest.mark.slow
@pytest.mark.parametrize("damage, message", [
    ("pickled payload", "best.ckpt: this file holds code, not weights: it was not loaded"),
    ("another run's labels", r"best.ckpt: this checkpoint classifies 7 labels .*but the run folder's task has 8"),
])
def test_rescoring_a_foreign_checkpoint_is_refused_with_a_message(trained_run, tmp_path, damage, message):
    import shutil

    import torch

    from commands import run_script

    copy = tmp_path / "run"
    shutil.copytree(trained_run, copy)
    if damage == "pickled payload":
        class Payload:
            def __reduce__(self):
                return (os.system, (f"touch {tmp_path / 'owned'}",))

        torch.save({"state_dict": {}, "evil": Payload()}, copy / "checkpoints" / "best.ckpt")
    else:
        task = json.loads((copy / "label_map.json").read_text())
        task["labels"].append("IPC 999")
        (copy / "label_map.json").write_text(json.dumps(task))
    before = (copy / "metrics.json").read_text()
    result = run_script("evaluate.py", f"run={copy}")
    assert result.returncode == 2 and re.search(message, result.stderr), result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "weights_only=False" not in result.stderr + result.stdout
    assert not (tmp_path / "owned").exists() and (copy / "metrics.json").read_text() == before


@pytest.mark.slow
def test_rescoring_on_the_runs_own_training_documents_is_not_comparable(trained_run, tmp_path):
    import shutil

    from conftest import SAMPLE
    from commands import run_script

    copy = tmp_path / "run"
    shutil.copytree(trained_run, copy)
    (copy / "metrics.json").unlink()  # as when the run had no test split: the model is named from the config
    result = run_script("evaluate.py", f"run={copy}", f"data.test_path={SAMPLE / 'Train'}")
    assert result.returncode == 0, result.stderr[-3000:]
    run = json.loads((copy / "metrics.json").read_text())["run"]
    train_docs = sum(len(json.loads(p.read_text())) for p in (SAMPLE / "Train").glob("*.json"))
    assert run["comparable"] is False and run["overlap_with_training"] == train_docs
    assert "scored examples are ones the run trained or validated on" in result.stdout + result.stderr
    from legalft.kit.fusion import model_label

    use = json.loads((copy / "fusion.json").read_text())["use"]  # the option chosen on held-out macro-F1
    assert run["model"] == model_label("minilm", use)  # named from the config's model and fusion.json


@pytest.mark.slow
def test_a_run_folder_from_before_methods_were_named_rescores(trained_run, tmp_path):
    import shutil

    import yaml

    from commands import run_script

    copy = tmp_path / "old_run"
    shutil.copytree(trained_run, copy)
    config = yaml.safe_load((copy / "config.yaml").read_text())
    assert config.pop("method")["_target_"] == "legalft.methods.encoder.EncoderMethod"
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    before = (copy / "predictions.jsonl").read_text()
    result = run_script("evaluate.py", f"run={copy}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (copy / "predictions.jsonl").read_text() == before


def test_an_incontext_run_without_a_model_says_which_to_add_and_makes_no_folder(tmp_path):
    result = subprocess.run([sys.executable, "evaluate.py", "prompt=base_prompt", "data=legalbench", "data.tasks=[hearsay]",
                             f"paths.checkpoints_dir={tmp_path / 'checkpoints'}"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == ("error: prompt=... needs a causal LM to prompt: add model=smollm2 (offline), or model=llama3_8b, "
                             "mistral_7b or qwen2_7b (from the hub).\n")
    assert not (tmp_path / "checkpoints").exists()
