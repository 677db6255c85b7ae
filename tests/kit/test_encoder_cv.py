"""``protocol.cv_folds=K`` with the encoder method: fold models, out-of-fold thresholds, a final model,
and a rerun that goes on from the folds already done."""

from __future__ import annotations

import json

import numpy as np
import pytest

from commands import run_script
from helpers import FAST_MODEL, read_jsonl

pytestmark = pytest.mark.slow

CV_RUN = ["data=proslex_sample", "protocol.cv_folds=3", *FAST_MODEL, "trainer.max_epochs=4"]


@pytest.fixture(scope="module")
def cv_run(tmp_path_factory, tiny_bert_dir):
    run_dir = tmp_path_factory.mktemp("cv") / "run"
    result = run_script("train.py", *CV_RUN, f"model.pretrained={tiny_bert_dir}", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir, result


def test_each_document_is_scored_once_by_a_model_that_did_not_train_on_it(cv_run):
    run_dir, result = cv_run
    cv = json.loads((run_dir / "cv.json").read_text())["proslex_sample"]
    assert cv["folds"] == 3 and sum(f["n"] for f in cv["per_fold"]) == 98 + 35  # train and validation, folded
    assert cv["mean"]["macro_f1"] == pytest.approx(np.mean([f["macro_f1"] for f in cv["per_fold"]]))
    held = [json.loads((run_dir / "checkpoints" / "cv" / f"fold_{k}.json").read_text())["ids"] for k in range(3)]
    assert sorted(i for ids in held for i in ids) == sorted(json.loads((run_dir / "training_data.json").read_text())["tasks"]["proslex_sample"]["ids"])
    log = (run_dir / "train.log").read_text()
    assert "fold 3 of 3: training on" in log and "final model: training on all 133 documents" in log


def test_the_final_model_is_scored_with_out_of_fold_thresholds(cv_run):
    run_dir, _ = cv_run
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["cv_folds"] == 3 and metrics["tasks"]["proslex_sample"]["n"] == 35
    thresholds = json.loads((run_dir / "thresholds.json").read_text())
    assert len(thresholds) == 7 and (run_dir / "checkpoints" / "best.ckpt").is_file()
    assert len(read_jsonl(run_dir / "predictions.jsonl")) == 35
    # learnt something: better than every statute for every document (about 0.3 macro-F1 here)
    assert metrics["tasks"]["proslex_sample"]["macro_f1"] > 0.4


def test_a_rerun_reads_the_finished_folds_and_the_run_rescores(cv_run, tiny_bert_dir, tmp_path):
    import shutil

    run_dir = shutil.copytree(cv_run[0], tmp_path / "run")  # the rerun and the rescoring write into a copy of its own
    before = (run_dir / "cv.json").read_text()
    result = run_script("train.py", *CV_RUN, f"model.pretrained={tiny_bert_dir}", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    log = result.stdout  # the rerun logs to a train.<time>.log of its own; the first run's train.log stays
    assert "fold 3 of 3: scores read from" in log and "fold 3 of 3: scores read from" not in (
        run_dir / "train.log").read_text()
    assert (run_dir / "cv.json").read_text() == before
    metrics = json.loads((run_dir / "metrics.json").read_text())
    rescored = run_script("evaluate.py", f"run={run_dir}")
    assert rescored.returncode == 0, rescored.stderr[-3000:]
    # the fused final model: the classical side refitted on every document gives back the same scores
    rescored_metrics = json.loads((run_dir / "metrics.json").read_text())
    assert rescored_metrics["tasks"] == metrics["tasks"] and rescored_metrics["run"]["cv_folds"] == 3


def test_cross_validation_scores_the_fusion_and_each_side_alone(cv_run, tmp_path):
    run_dir, _ = cv_run
    cv = json.loads((run_dir / "cv.json").read_text())["proslex_sample"]
    assert set(cv["parts"]) == {"encoder", "classical"}
    # the classical side is method=classical on the same folds
    classical = run_script("train.py", "method=classical", "data=proslex_sample", "protocol.cv_folds=3",
                           f"hydra.run.dir={tmp_path / 'classical'}")
    assert classical.returncode == 0, classical.stderr[-3000:]
    assert json.loads((tmp_path / "classical" / "cv.json").read_text())["proslex_sample"] == cv["parts"]["classical"]
    assert cv["parts"]["encoder"]["mean"]["macro_f1"] > 0.4  # the encoder alone learnt something too
    assert json.loads((run_dir / "fusion.json").read_text())["trained_on"] == "train+val"
    run = json.loads((run_dir / "metrics.json").read_text())["run"]
    # every option scored on the same out-of-fold decisions of the sample's 133 documents: enough to choose on
    choice = run["choices"]["fusion"]
    assert choice["n"] == sum(fold["n"] for fold in cv["per_fold"]) == 133 and choice["prior"] == "fused"
    assert set(choice["scores"]) == {"fused", "encoder", "classical"}
    best = max(choice["scores"], key=lambda option: (choice["scores"][option], option == "fused"))
    if choice["chosen_on"] == "out_of_fold":  # the best, by more than its standard error (or the prior, ahead)
        assert choice["option"] == best and (best == "fused" or choice["margin"] > choice["margin_se"])
    else:
        assert choice["option"] == "fused" and "within its standard error" in choice["reason"]
    assert cv["use"] == choice["option"] == run["fusion_choice"]["use"]
    assert run["choices"]["thresholds"]["chosen_on"] in ("out_of_fold", "prior")
    assert run["choices"]["epoch"]["option"] == "last" and "cross-validated" in run["choices"]["epoch"]["reason"]
    said = {"fused": "minilm fused with tfidf_logreg; fusion: fused, ", "encoder": "minilm; fusion: encoder, ",
            "classical": "tfidf_logreg alone (the classical side of the fusion; minilm did not predict); fusion: "}
    assert run["predicted_with"].startswith(said[cv["use"]])
    assert cv["mean"] == (cv["fused"] if cv["use"] == "fused" else cv["parts"][cv["use"]])["mean"]
    assert run["fused_with"] == "tfidf_logreg" and run["model"].endswith("tfidf_logreg") == (cv["use"] != "encoder")


def test_a_fold_file_from_other_data_is_refused(cv_run, tiny_bert_dir, tmp_path):
    import shutil

    run_dir = tmp_path / "copy"
    shutil.copytree(cv_run[0], run_dir)
    fold = run_dir / "checkpoints" / "cv" / "fold_0.json"
    record = json.loads(fold.read_text())
    fold.write_text(json.dumps({**record, "ids": record["ids"][1:]}))
    result = run_script("train.py", *CV_RUN, f"model.pretrained={tiny_bert_dir}", f"hydra.run.dir={run_dir}")
    assert result.returncode == 2 and "fold_0.json: this fold held out other documents" in result.stderr
    assert "Traceback" not in result.stderr


def test_cross_validation_trains_on_one_device(tmp_path, tiny_bert_dir):
    result = run_script("train.py", *CV_RUN, f"model.pretrained={tiny_bert_dir}", "trainer=ddp", "trainer.devices=2",
                        "trainer.accelerator=cpu", f"hydra.run.dir={tmp_path / 'run'}")
    assert result.returncode == 2 and "trains its models one after another on one device" in result.stderr
    assert not (tmp_path / "run").exists()


def test_a_legalbench_task_without_validation_trains_fixed_epochs(tmp_path, tiny_bert_dir):
    from conftest import write_legalbench_task

    words = {"Yes": "the witness repeated what another person said out of court",
             "No": "the defendant testified about what he saw himself"}

    def rows(n):
        return "index\tanswer\ttext\n" + "".join(f"{i}\t{a}\t{words[a]} case {i}\n" for i in range(n) for a in words)

    root = tmp_path / "legalbench"
    write_legalbench_task(root, "hearsay", rows(6), rows(10))
    write_legalbench_task(root, "proa", rows(6), rows(10))
    run_dir = tmp_path / "run"
    common = ["data=legalbench", f"data.root={root}", f"model.pretrained={tiny_bert_dir}", *FAST_MODEL]
    result = run_script("train.py", *common, "data.tasks=[hearsay]", "trainer.max_epochs=8", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "has no validation split: training for trainer.max_epochs=8 epochs" in (run_dir / "train.log").read_text()
    hearsay = json.loads((run_dir / "metrics.json").read_text())["tasks"]["hearsay"]
    assert hearsay["metric"] == "balanced_accuracy" and hearsay["n"] == 20 and hearsay["balanced_accuracy"] >= 0.9
    assert not (run_dir / "thresholds.json").exists()  # single-label: the top label, no thresholds

    both = run_script("train.py", *common, "data.tasks=[hearsay,proa]", f"hydra.run.dir={tmp_path / 'both'}")
    assert both.returncode == 2 and "run one per task (python train.py -m data.tasks=[a],[b],...)" in both.stderr
    assert not (tmp_path / "both").exists()


def test_a_run_stopped_mid_fold_resumes_to_the_same_result(cv_run, tiny_bert_dir, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT

    run_dir = tmp_path / "stopped"
    command = [sys.executable, "train.py", *CV_RUN, f"model.pretrained={tiny_bert_dir}", f"hydra.run.dir={run_dir}",
               "trainer.enable_progress_bar=false"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(command, cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first_fold = run_dir / "checkpoints" / "cv" / "fold_0.json"
    deadline = time.time() + 300
    while not first_fold.exists() and process.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    # The second fold is about to train: signal until it checkpoints (outside training the signal is noted
    # and ignored); then no more, since one landing while the interpreter shuts down would kill it.
    stopped_fold = run_dir / "checkpoints" / "cv" / "fold_1.last.ckpt"
    while not stopped_fold.exists() and process.poll() is None and time.time() < deadline:
        process.send_signal(signal.SIGUSR1)
        time.sleep(0.3)
    out, err = process.communicate()
    assert process.returncode == 0 and "stopped on the requeue signal" in out, err[-3000:]
    assert stopped_fold.is_file() and not (run_dir / "cv.json").exists()

    resumed = subprocess.run(command, cwd=ROOT, env=env, text=True, capture_output=True)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    log = resumed.stdout  # also in the resumed run's own train.<time>.log
    assert "fold 1 of 3: scores read from" in log and "resuming from" in log
    straight = cv_run[0]
    assert (run_dir / "cv.json").read_text() == (straight / "cv.json").read_text()
    assert (run_dir / "predictions.jsonl").read_text() == (straight / "predictions.jsonl").read_text()


def test_each_fold_model_is_freed_before_the_next_fold_trains(tiny_bert_dir, tmp_path, monkeypatch):
    """A Lightning module and its trainer refer to each other, so a finished fold's weights and optimiser
    state would wait for Python's cycle collector; on a GPU they would sit beside the next fold's."""
    import gc
    import weakref

    from hydra.utils import instantiate
    from helpers import compose_train

    from legalft.methods import encoder
    from legalft.kit.document_steps import one_task
    from legalft.runs.context import RunContext
    from legalft.runs.folder import RunFolder

    cfg = compose_train(["data=proslex_sample", *FAST_MODEL, f"model.pretrained={tiny_bert_dir}", "trainer.max_epochs=1",
                         "logger=none", "trainer.enable_progress_bar=false", "protocol.cv_folds=3",
                         "method.fuse_classical=false"], tmp_path)
    data = one_task(instantiate(cfg.data).load(), "encoder")
    built, alive_at_build = [], []

    def build_module(*args, **kwargs):
        alive_at_build.append(sum(ref() is not None for ref in built))
        module = original(*args, **kwargs)
        built.append(weakref.ref(module))
        return module

    # On a CPU with AVX512-BF16, bitsandbytes' first import (through transformers' optimisation module) logs
    # a warning whose record, kept by pytest's log capture, holds every frame of the importing stack: the
    # first fold's module with them. Import it before any module exists, as a training run's other steps do.
    import transformers.optimization  # noqa: F401

    original = encoder.build_module
    monkeypatch.setattr(encoder, "build_module", build_module)
    gc.disable()  # only what the fold loop frees itself counts
    try:
        context = RunContext.for_new_run(cfg, RunFolder(tmp_path), "minilm")
        instantiate(cfg.method).cross_validate(context, data, fusing=False)
        assert alive_at_build == [0, 0, 0] and all(ref() is None for ref in built)
    finally:
        gc.enable()


def test_no_epoch_limit_without_a_validation_split_is_refused_with_a_message():
    from omegaconf import OmegaConf

    from legalft.foundation.errors import UserError
    from legalft.kit.folds import on_one_device

    with pytest.raises(UserError, match=r"trainer.max_epochs=-1 trains until early stopping, which needs a validation"):
        on_one_device(OmegaConf.create({"max_epochs": -1, "devices": 1}))
    on_one_device(OmegaConf.create({"max_epochs": 3, "devices": 1}))
