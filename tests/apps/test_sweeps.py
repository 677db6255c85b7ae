"""Sweeps as a user starts them, run here with Hydra's local launcher: an Optuna study that continues
where it stopped, and the mistakes that must stop a sweep before it starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

TINY = ["data=proslex_sample", "model.max_length=64", "windows.stride=16", "windows.max_chunks=4",
        "trainer.max_epochs=2", "trainer.enable_progress_bar=false", "logger=none"]


def train(*overrides: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "train.py", *overrides], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})


def test_optuna_search_records_trials_and_continues_an_interrupted_study(tmp_path, tiny_bert_dir):
    import optuna

    sweep = ["-m", "hparams_search=proslex_optuna", "experiment=proslex_inlegalbert", "trainer=cpu", *TINY,
             f"model.pretrained={tiny_bert_dir}",
             f"paths.checkpoints_dir={tmp_path}", "hydra.sweeper.n_trials=2", "hydra.sweeper.n_jobs=1"]
    first = train(*sweep, f"hydra.sweep.dir={tmp_path}/round1")
    assert first.returncode == 0, first.stderr[-3000:]
    storage = f"sqlite:///{tmp_path}/encoder_proslex_sample_inlegalbert_optuna.db"
    study = optuna.load_study(study_name="encoder_proslex_sample_inlegalbert", storage=storage)
    values = [t.value for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(values) == 2 and all(0.0 <= v <= 1.0 for v in values)
    assert {"method.lr", "method.head_lr", "datamodule.batch_size"} <= set(study.trials[0].params)
    assert len(list((tmp_path / "round1").glob("*/metrics.json"))) == 2

    second = train(*sweep, f"hydra.sweep.dir={tmp_path}/round2")  # the same study, two more trials
    assert second.returncode == 0, second.stderr[-3000:]
    assert len(optuna.load_study(study_name="encoder_proslex_sample_inlegalbert", storage=storage).trials) == 4



def test_a_recipe_search_maximises_the_cross_validated_macro_f1(tmp_path, tiny_bert_dir):
    import json

    import optuna

    sweep = ["-m", "hparams_search=proslex_recipe_cv", *TINY, f"model.pretrained={tiny_bert_dir}", "protocol.cv_folds=2",
             f"paths.checkpoints_dir={tmp_path}",
             "hydra.sweeper.n_trials=2", "hydra.sweeper.n_jobs=1", f"hydra.sweep.dir={tmp_path}/sweep"]
    result = train(*sweep)
    assert result.returncode == 0, result.stderr[-3000:]
    study = optuna.load_study(study_name="proslex_sample_recipe_cv",
                              storage=f"sqlite:///{tmp_path}/proslex_sample_recipe_cv_optuna.db")
    trials = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(trials) == 2 and {"windows.pooling", "model.pos_weight", "method.lr"} <= set(trials[0].params)
    # each trial's value is its run's mean out-of-fold macro-F1
    runs = sorted((tmp_path / "sweep").glob("*/cv.json"))
    means = sorted(json.loads(r.read_text())["proslex_sample"]["mean"]["macro_f1"] for r in runs)
    assert len(runs) == 2 and sorted(t.value for t in trials) == pytest.approx(means)

def test_a_sweep_over_a_key_the_config_lacks_fails_before_any_run(tmp_path):
    result = train("-m", *TINY, "model.nonexistent=1,2", f"hydra.sweep.dir={tmp_path}/sweep")
    assert result.returncode != 0
    assert "model.nonexistent" in result.stderr
    assert not list(tmp_path.glob("sweep/*/metrics.json"))


def test_slurm_launcher_where_slurm_is_missing_says_so(tmp_path):
    no_slurm = tmp_path / "bin"
    no_slurm.mkdir()
    result = train("-m", "hydra/launcher=slurm", *TINY, "seed=1,2", f"hydra.sweep.dir={tmp_path}/sweep",
                   env={"PATH": str(no_slurm)})
    assert result.returncode != 0
    assert "hydra/launcher=slurm submits each run with sbatch, which this machine does not have" in result.stderr


def test_wandb_api_key_stays_out_of_the_run_folder_and_logs(tmp_path, tiny_bert_dir):
    key = "0123456789abcdef" * 2 + "deadbeef"
    run_dir = tmp_path / "run"
    result = train(*TINY, "logger=wandb", "logger.wandb.offline=true", f"model.pretrained={tiny_bert_dir}",
                   f"hydra.run.dir={run_dir}", env={"WANDB_API_KEY": key, "WANDB_MODE": "offline",
                                                     "WANDB_DIR": str(tmp_path), "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr[-3000:]
    assert list(run_dir.glob("wandb/offline-run-*"))  # W&B did log, offline, into the run folder
    assert key not in result.stdout + result.stderr
    leaked = [p for p in Path(tmp_path).rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert not leaked
