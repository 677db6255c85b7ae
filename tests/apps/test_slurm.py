"""The project's own sbatch files and SLURM launcher, submitted to a real single-node SLURM cluster that
these tests start (scripts/slurm_cluster.sh, as root) and stop by PID: a training job with a dependent
evaluation job, preemption with requeue and exact resume, a job array over LegalBench tasks, and an
Optuna sweep through submitit."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from conftest import ROOT, write_legalbench_task

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SMALL_JOB = ["--gpus-per-node=0", "--mem=1500M", "--cpus-per-task=1", "--time=20"]
TINY_ENCODER = ["data=proslex_sample", "model.max_length=64", "windows.stride=16", "windows.max_chunks=8",
                "method.lr=3e-3", "method.head_lr=3e-3", "datamodule.batch_size=2", "callbacks.early_stopping.patience=9"]


class Cluster:
    def __init__(self, conf: Path, logs: Path) -> None:
        inherited = {k: v for k, v in os.environ.items() if k != "WANDB_SERVICE"}  # jobs start W&B on their own
        self.env = {**inherited, "SLURM_CONF": str(conf), "HF_HUB_OFFLINE": "1",
                    "LEGALFT_VENV": str(Path(sys.executable).parent.parent)}
        self.logs = logs

    def run(self, *command: str, **kwargs) -> subprocess.CompletedProcess:
        kwargs.setdefault("env", self.env)
        return subprocess.run(list(command), cwd=ROOT, capture_output=True, text=True, **kwargs)

    def sbatch(self, script: str, *overrides: str, options: tuple[str, ...] = (), env: dict | None = None) -> str:
        output = str(self.logs / ("%x-%A_%a.out" if any(o.startswith("--array") for o in options) else "%x-%j.out"))
        result = self.run("sbatch", "--parsable", *SMALL_JOB, f"--output={output}", *options, script, *overrides,
                          env={**self.env, **(env or {})})
        assert result.returncode == 0, result.stderr
        return result.stdout.strip().split(";")[0]

    def state(self, job: str) -> list[dict[str, str]]:
        """One record per job (an array's tasks each get one), from ``scontrol show job -o``."""
        result = self.run("scontrol", "show", "job", "-o", job)
        return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in result.stdout.splitlines() if line.strip()]

    def wait(self, job: str, states: set[str], timeout: float = 600) -> list[dict[str, str]]:
        deadline = time.time() + timeout
        while time.time() < deadline:
            records = self.state(job)
            if records and all(r["JobState"] in states for r in records):
                return records
            if any(r["JobState"] in {"FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"} - states for r in records):
                break
            time.sleep(0.5)
        raise AssertionError(f"job {job} did not reach {states}: {self.state(job)}\n{self.log_text(job)}")

    def log_text(self, job: str) -> str:
        return "\n".join(p.read_text() for p in sorted(self.logs.glob(f"*-{job}*.out")))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if shutil.which("slurmctld") is None and os.geteuid() != 0:
        pytest.skip("SLURM is not installed and installing it (apt-get install slurm-wlm munge) needs root")
    state = tmp_path_factory.mktemp("slurm")
    env = {**os.environ, "LEGALFT_SLURM_DIR": str(state), "LEGALFT_SLURMCTLD_PORT": "6917",
           "LEGALFT_SLURMD_PORT": "6918"}
    with open(state / "start.log", "w") as log:
        started = subprocess.run(["bash", "scripts/slurm_cluster.sh", "start"], cwd=ROOT, env=env, stdout=log,
                                 stderr=subprocess.STDOUT, timeout=600)
    assert started.returncode == 0, (state / "start.log").read_text()
    logs = tmp_path_factory.mktemp("slurm_logs")
    yield Cluster(state / "slurm.conf", logs)
    subprocess.run(["bash", "scripts/slurm_cluster.sh", "stop"], cwd=ROOT, env=env, timeout=120)
    for daemon in ("munged", "slurmctld", "slurmd"):
        assert not (state / "run" / f"{daemon}.pid").exists(), f"{daemon} still running"


def metrics(run_dir: Path) -> dict:
    return json.loads((run_dir / "metrics.json").read_text())


def test_train_job_then_dependent_evaluation_job(cluster, tmp_path, tiny_bert_dir):
    job = cluster.sbatch("slurm/train.sbatch", *TINY_ENCODER, f"model.pretrained={tiny_bert_dir}",
                         "trainer.max_epochs=2", "logger=none", f"paths.checkpoints_dir={tmp_path}")
    run_dir = tmp_path / "encoder_proslex_sample_minilm" / f"slurm-{job}"
    scoring = cluster.sbatch("slurm/evaluate.sbatch", f"run={run_dir}", options=(f"--dependency=afterok:{job}",))
    assert cluster.state(scoring)[0]["JobState"] == "PENDING"
    cluster.wait(scoring, {"COMPLETED"})
    assert cluster.state(job)[0]["JobState"] == "COMPLETED"
    trained = metrics(run_dir)
    assert trained["run"]["method"] == "encoder" and "proslex_sample" in trained["tasks"]
    assert f"metrics:    {run_dir}/metrics.json" in cluster.log_text(scoring)


def test_a_server_job_starts_its_server_scores_through_it_and_stops_it(cluster, tmp_path, tiny_causal_lm_dir):
    """slurm/vllm_incontext.sbatch with the reference OpenAI-compatible server (tests/openai_server.py)
    standing in for ``vllm serve``: started, waited for, scored through, stopped with the job."""
    import socket

    root = tmp_path / "legalbench"
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tThe witness number {i} repeated a rumour.\n" for i in range(6))
    write_legalbench_task(root, "hearsay", "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + rows)
    job = cluster.sbatch(
        "slurm/vllm_incontext.sbatch", "prompt=zero_shot", "prompt.answer=score", "model=smollm2",
        f"model.pretrained={tiny_causal_lm_dir}", "data=legalbench", f"data.root={root}", "data.tasks=[hearsay]",
        "engine.cache=null", f"hydra.run.dir={tmp_path}/run",
        env={"VLLM": f"python {ROOT}/tests/openai_server.py", "VLLM_MODEL": str(tiny_causal_lm_dir),
             "VLLM_LOG": str(tmp_path / "server.log")})
    cluster.wait(job, {"COMPLETED"})
    log = cluster.log_text(job)
    assert "vLLM answers at http://127.0.0.1:" in log
    run = metrics(tmp_path / "run")
    assert run["run"]["engine"] == "server" and run["run"]["served_model"] == str(tiny_causal_lm_dir)
    assert run["tasks"]["hearsay"]["n"] == 6
    port = int(re.search(r"starting on port (\d+)", log).group(1))
    with socket.socket() as probe:  # the server went with the job
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_a_training_job_stopped_by_sigterm_fails_and_its_afterok_job_never_runs(cluster, tmp_path, tiny_bert_dir):
    job = cluster.sbatch("slurm/train.sbatch", *TINY_ENCODER, f"model.pretrained={tiny_bert_dir}",
                         "trainer.max_epochs=200", "callbacks.early_stopping.patience=200", "logger=none",
                         f"paths.checkpoints_dir={tmp_path}")
    run_dir = tmp_path / "encoder_proslex_sample_minilm" / f"slurm-{job}"
    scoring = cluster.sbatch("slurm/evaluate.sbatch", f"run={run_dir}", options=(f"--dependency=afterok:{job}",))
    deadline = time.time() + 300
    while not (run_dir / "checkpoints" / "last.ckpt").exists():  # an epoch done: training is under way
        assert time.time() < deadline and cluster.state(job)[0]["JobState"] in {"PENDING", "RUNNING"}, \
            cluster.log_text(job)
        time.sleep(0.5)
    assert cluster.run("scancel", "--signal=TERM", job).returncode == 0  # what a preemption without USR1 sends
    (record,) = cluster.wait(job, {"FAILED"})
    assert record["ExitCode"] != "0:0"
    assert "stopped on SIGTERM before training finished" in cluster.log_text(job)
    time.sleep(2)
    (waiting,) = cluster.state(scoring)
    assert waiting["JobState"] == "PENDING" and waiting["Reason"] == "DependencyNeverSatisfied", waiting
    cluster.run("scancel", scoring)
    assert not (run_dir / "metrics.json").exists()


def resume_time(log: str) -> float:
    stamp = re.search(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})]\[legalft\.training\.preemption\]\[INFO\] - resuming", log)
    assert stamp, log[-3000:]
    return datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


def wait_until_unlocked(run_dir: Path, timeout: float) -> None:
    from legalft.foundation.errors import UserError
    from legalft.runs.lock import RunLock

    deadline = time.time() + timeout
    while True:
        lock = RunLock(run_dir)
        try:
            lock.acquire()
            lock.release()
            return
        except UserError:
            assert time.time() < deadline, f"{run_dir} still locked after {timeout} s"
            time.sleep(0.2)


DDP_ON_CPU = ["trainer.accelerator=cpu", "trainer.precision=32-true"]  # train_multigpu.sbatch's GPU defaults, off


def test_preempted_two_rank_job_requeues_and_resumes_to_the_uninterrupted_result(cluster, tmp_path, tiny_bert_dir):
    """slurm/train_multigpu.sbatch with two tasks: Lightning takes ranks and world size from SLURM, gloo
    DDP on CPUs. USR1 to the job's steps stops both ranks at the same batch; the requeued job resumes
    both ranks' positions and random states and ends where an uninterrupted two-rank job ends."""
    common = [*TINY_ENCODER, f"model.pretrained={tiny_bert_dir}", "trainer.max_epochs=8", "logger=wandb",
              "logger.wandb.offline=true", *DDP_ON_CPU]
    cluster.env["WANDB_MODE"] = "offline"
    two_tasks = ("--ntasks-per-node=2",)
    # the stopped job first: the cluster's two CPUs run one two-task job at a time
    stopped = cluster.sbatch("slurm/train_multigpu.sbatch", *common, f"paths.checkpoints_dir={tmp_path}/stopped",
                             options=two_tasks)
    straight = cluster.sbatch("slurm/train_multigpu.sbatch", *common, f"paths.checkpoints_dir={tmp_path}/straight",
                              options=two_tasks)
    run_dir = tmp_path / "stopped" / "encoder_proslex_sample_minilm" / f"slurm-{stopped}"
    last = run_dir / "checkpoints" / "last.ckpt"
    deadline = time.time() + 300
    while not last.exists() and time.time() < deadline:
        time.sleep(0.1)
    signalled = time.time()
    assert cluster.run("scancel", "--signal=USR1", stopped).returncode == 0  # what --signal=USR1@180 sends
    record = cluster.wait(stopped, {"PENDING"})[0]  # requeued: held by SLURM until its BeginTime
    requeued = time.time()
    assert record["Restarts"] == "1"
    # Release SLURM's hold (about 120 s) once the stopped run has exited (its run folder's lock is free):
    # released while the old batch step is still being torn down, slurmd refuses the relaunch ("already
    # killed") and the job fails. The hold may already be over, or the job between states, so the outcome
    # is judged by the job completing, not by this command.
    wait_until_unlocked(run_dir, timeout=120)
    cluster.run("scontrol", "update", f"JobId={stopped}", "StartTime=now")
    released = time.time()
    try:
        cluster.wait(stopped, {"COMPLETED"})
    except AssertionError:
        # Slurm 22.05 sometimes relaunches a job requeued from inside itself before its old batch step is
        # gone, and slurmd refuses the launch ("already killed"): the job fails without running. A
        # scheduler race, not the resume under test: requeue it once more, as an operator would.
        (record,) = cluster.state(stopped)
        assert record["JobState"] == "FAILED" and "restart 1" not in cluster.log_text(stopped), record
        assert cluster.run("scontrol", "requeue", stopped).returncode == 0
        cluster.wait(stopped, {"PENDING"})
        cluster.run("scontrol", "update", f"JobId={stopped}", "StartTime=now")
        released = time.time()
        cluster.wait(stopped, {"COMPLETED"})
    cluster.wait(straight, {"COMPLETED"})

    log = cluster.log_text(stopped)
    assert "stopped on the requeue signal" in log and re.search(r"restart [12]\b", log)
    overhead = (requeued - signalled) + (resume_time(log) - released)
    print(f"\nrequeue overhead: {overhead:.1f} s from the signal to resumed training "
          f"(stop and requeue {requeued - signalled:.1f} s; restart to resumed training "
          f"{resume_time(log) - released:.1f} s), not counting SLURM's hold of the requeued job")
    resumed = metrics(run_dir)
    uninterrupted = metrics(tmp_path / "straight" / "encoder_proslex_sample_minilm" / f"slurm-{straight}")
    assert resumed["tasks"] == uninterrupted["tasks"]
    attempts = {p.name.rsplit("-", 1)[-1] for p in (run_dir / "wandb").glob("offline-run-*")}
    assert len(list((run_dir / "wandb").glob("offline-run-*"))) == 2 and len(attempts) == 1  # one W&B run
    # both ranks resumed mid-epoch (the requeued job's rank 1 logs to a train_rank_1.<time>.log of its own)
    assert "resuming epoch" in "".join(p.read_text() for p in run_dir.glob("train_rank_1.*log"))
    for folder in (run_dir, tmp_path / "straight" / "encoder_proslex_sample_minilm" / f"slurm-{straight}"):
        assert (folder / "train_rank_1.log").exists()  # the second rank ran, in the same run folder ...
        assert "epoch 0 validation on rank 1" in (folder / "train_rank_1.log").read_text()
        assert sorted(p.name for p in (folder / ".hydra").iterdir()) == ["config.yaml", "hydra.yaml", "overrides.yaml"]


def test_array_job_trains_one_legalbench_task_per_index(cluster, tmp_path, tiny_causal_lm_dir):
    root = tmp_path / "legalbench"
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tstatement number {i}\n" for i in range(6))
    for index, name in enumerate(("abercrombie", "canada_tax_court_outcomes")):  # the catalog's tasks 0 and 1
        write_legalbench_task(root, name, "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + rows)
    array = cluster.sbatch("slurm/legalbench_array.sbatch", "experiment=legalbench_lora",
                           f"model.pretrained={tiny_causal_lm_dir}", f"data.root={root}", "trainer.max_epochs=1",
                           "logger=none", f"paths.checkpoints_dir={tmp_path}", options=("--array=0-1",))
    cluster.wait(array, {"COMPLETED"})
    for index, name in enumerate(("abercrombie", "canada_tax_court_outcomes")):
        scored = metrics(tmp_path / "lora_legalbench_smollm2" / f"slurm-{array}_{index}")
        assert list(scored["tasks"]) == [name]


def test_submit_checks_overrides_before_anything_is_queued(cluster):
    before = cluster.run("squeue", "-h", "-o", "%i").stdout.split()
    result = cluster.run("bash", "slurm/submit", *SMALL_JOB, "slurm/train.sbatch", "trainer.max_epoch=3")
    assert result.returncode != 0 and "Could not override 'trainer.max_epoch'" in result.stderr
    assert cluster.run("squeue", "-h", "-o", "%i").stdout.split() == before
    queued = cluster.run("bash", "slurm/submit", "--parsable", *SMALL_JOB, "--hold", "slurm/train.sbatch",
                         "trainer.max_epochs=1")
    assert queued.returncode == 0, queued.stderr
    job = queued.stdout.strip()
    assert cluster.state(job)[0]["JobState"] == "PENDING"  # held, so it never runs
    cluster.run("scancel", job)


SWEEP_ENCODER = [o for o in TINY_ENCODER if o.split("=")[0] not in ("method.lr", "method.head_lr", "datamodule.batch_size")]


def test_optuna_search_through_the_slurm_launcher(cluster, tmp_path, tiny_bert_dir):
    """A Hydra sweep sent to SLURM by submitit (hydra/launcher=slurm), driven by the Optuna sweeper."""
    import optuna

    result = cluster.run(
        sys.executable, "train.py", "-m", "hparams_search=proslex_optuna", "experiment=proslex_inlegalbert",
        "trainer=cpu", "hydra/launcher=slurm", *SWEEP_ENCODER, f"model.pretrained={tiny_bert_dir}",
        "trainer.max_epochs=1", "logger=none", "hydra.sweeper.n_trials=2", "hydra.sweeper.n_jobs=2",
        "hydra.launcher.gpus_per_node=0", "hydra.launcher.mem_gb=1", "hydra.launcher.cpus_per_task=1",
        "hydra.launcher.timeout_min=20", f"paths.checkpoints_dir={tmp_path}", f"hydra.sweep.dir={tmp_path}/sweep",
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    study = optuna.load_study(study_name="encoder_proslex_sample_inlegalbert",
                              storage=f"sqlite:///{tmp_path}/encoder_proslex_sample_inlegalbert_optuna.db")
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 2
    assert list((tmp_path / "sweep" / ".submitit").glob("*/*_submission.sh"))  # it went through sbatch
    import yaml

    for trial in study.trials:  # each job trained with the learning rate Optuna suggested for it
        run_dir = tmp_path / "sweep" / str(trial.number)
        assert metrics(run_dir)["run"]["method"] == "encoder"
        assert yaml.safe_load((run_dir / "config.yaml").read_text())["method"]["lr"] == pytest.approx(trial.params["method.lr"])


def test_a_small_study_submitted_to_slurm_reports_every_run_and_resubmits_only_a_killed_run(
        cluster, tmp_path, tiny_bert_dir, tiny_causal_lm_dir):
    """One job array per group and a report job after them; a cancelled array task shows up as failed
    and as missing from the report, and the next submission sends it alone (and the report) again."""
    from test_study import report_runs, small_study

    spec, folder = small_study(tmp_path, tiny_bert_dir, tiny_causal_lm_dir), tmp_path / "study"
    options = [f"--sbatch={o}" for o in SMALL_JOB]
    command = [sys.executable, "study.py", "run", str(spec), "--slurm", "--folder", str(folder), *options]
    submitted = cluster.run(*command, "--sbatch=--hold")  # held: one task is cancelled before it runs
    assert submitted.returncode == 0, submitted.stderr
    arrays = dict(re.findall(r"^(\w+): job array (\d+)", submitted.stdout, re.M))
    report_job = re.search(r"^report: job (\d+)", submitted.stdout, re.M).group(1)
    assert set(arrays) == {"encoder", "in_context", "lora"}
    assert cluster.run("scancel", f"{arrays['encoder']}_1").returncode == 0
    for job in [*arrays.values(), report_job]:
        cluster.run("scontrol", "release", job)
    cluster.wait(report_job, {"COMPLETED"}, timeout=900)
    assert report_runs(folder) == {"encoder/seed-0", "in_context/prompt-zero_shot", "in_context/prompt-base_prompt",
                                   "lora/run"}
    status = cluster.run(sys.executable, "study.py", "status", str(spec), "--folder", str(folder)).stdout
    assert "encoder                         1        0        1        0" in status, status

    again = cluster.run(*command)
    assert again.returncode == 0, again.stderr
    resubmitted = {group: runs for group, _, runs in re.findall(r"^(\w+): job array (\d+), (\d+) runs", again.stdout, re.M)}
    assert resubmitted == {"encoder": "1"}, again.stdout
    cluster.wait(re.search(r"^report: job (\d+)", again.stdout, re.M).group(1), {"COMPLETED"}, timeout=900)
    assert len(report_runs(folder)) == 5
    last = cluster.run(*command)
    assert last.returncode == 0 and "nothing submitted" in last.stdout


def test_a_two_task_lora_job_trains_one_adapter_and_rank_zero_alone_writes(cluster, tmp_path, tiny_causal_lm_dir):
    root = tmp_path / "legalbench"
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tstatement number {i}\n" for i in range(10))
    write_legalbench_task(root, "hearsay", "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + rows)
    job = cluster.sbatch("slurm/train_multigpu.sbatch", "experiment=legalbench_lora", f"model.pretrained={tiny_causal_lm_dir}",
                         f"data.root={root}", "data.tasks=[hearsay]", "trainer.max_epochs=1", "logger=none",
                         "datamodule.batch_size=2", *DDP_ON_CPU, f"paths.checkpoints_dir={tmp_path}",
                         options=("--ntasks-per-node=2",))
    cluster.wait(job, {"COMPLETED"})
    run_dir = tmp_path / "lora_legalbench_smollm2" / f"slurm-{job}"
    assert metrics(run_dir)["tasks"]["hearsay"]["n"] == 10
    assert (run_dir / "adapters" / "pooled" / "adapter_model.safetensors").exists()
    assert (run_dir / "train_rank_1.log").exists()  # the second task trained, in the same run folder
    assert cluster.log_text(job).count("metrics:") == 1  # and one process wrote results (both tasks print here)
