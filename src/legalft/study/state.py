"""Where each run of a study stands: its results, its lock, SLURM's queue, its log."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from legalft.foundation.errors import UserError
from legalft.runs.folder import RunFolder
from legalft.study.plan import PlannedRun, Study, read_record


@dataclass(frozen=True)
class RunState:
    state: str  # done | running | queued (in SLURM's queue) | failed | pending | changed
    detail: str = ""


def recorded_overrides(folder: Path) -> list[str] | None:
    path = RunFolder(folder).hydra_record / "overrides.yaml"
    try:
        return [str(o) for o in yaml.safe_load(path.read_text()) or []]
    except (OSError, yaml.YAMLError):
        return None


def locked(folder: Path) -> bool:
    from legalft.runs.lock import LOCK_FILE, RunLock

    if not (folder / LOCK_FILE).exists():
        return False

    lock = RunLock(folder)
    try:
        lock.acquire()
    except UserError:
        return True
    lock.release()
    return False


HYDRA_HINT = "Set the environment variable HYDRA_FULL_ERROR=1"  # what Hydra prints after every failure


def last_line(path: Path) -> str:
    """What a run's log says last of why it ended: its ``error:`` line where it has one, else the last line
    that is not Hydra's hint about stack traces."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    lines = [line for line in lines if not line.startswith(HYDRA_HINT)]
    errors = [line for line in lines if line.startswith("error:")]
    return (errors or lines or ["empty log"])[-1][-300:]


def state_of(study: Study, run: PlannedRun, attempt: dict | None, queued: dict[str, str]) -> RunState:
    folder = Path(run.folder)
    if RunFolder(folder).metrics.exists():
        # train.py's folders keep Hydra's record of the overrides; evaluate.py's in-context folders keep none, and
        # the study's record says what it ran there (an older record that does not either: nothing says it changed)
        ran_with = recorded_overrides(folder)
        if ran_with is None:
            ran_with = (attempt or {}).get("overrides", run.overrides)
        if ran_with == run.overrides:
            return RunState("done")
        return RunState("changed", "finished with other overrides than the study now gives: move its folder away to rerun it")
    if attempt and attempt.get("job") in queued:
        return RunState("running" if queued[attempt["job"]] == "RUNNING" else "queued", f"job {attempt['job']}: "
                        f"{queued[attempt['job']].lower()}")
    if locked(folder):
        return RunState("running")
    if attempt is None:
        return RunState("pending")
    resumes = " (its checkpoint is kept: a rerun resumes)" if RunFolder(folder).last_checkpoint.exists() else ""
    return RunState("failed", last_line(study.log_of(run)) + resumes)


def slurm_queue(jobs: list[str]) -> dict[str, str]:
    """State of each queued array task (``<job>_<index>``) of ``jobs``; finished ones are absent."""
    if not jobs:
        return {}
    try:
        result = subprocess.run(["squeue", "-h", "-r", "-o", "%i %T", "-j", ",".join(sorted(set(jobs)))],
                                capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return {}
    return dict(line.split()[:2] for line in result.stdout.splitlines() if len(line.split()) >= 2)


def states(study: Study, attempts: dict) -> dict[str, RunState]:
    arrays = [a["job"].split("_")[0] for a in attempts.values() if a.get("job")]
    queued = slurm_queue(arrays)
    return {run.key: state_of(study, run, attempts.get(run.key), queued) for run in study.runs}


def print_status(study: Study) -> None:
    attempts = read_record(study)["attempts"]
    current = states(study, attempts)
    columns = ("done", "running", "failed", "pending", "changed")
    print(f"study {study.name}: {study.folder}")
    print(f"{'group':24}" + "".join(f"{c:>9}" for c in columns))
    for group, runs in study.groups().items():
        # a run waiting in SLURM's queue counts as pending
        counts = [sum(current[r.key].state.replace("queued", "pending") == c for r in runs) for c in columns]
        print(f"{group:24}" + "".join(f"{n:>9}" for n in counts))
    for run in study.runs:
        state = current[run.key]
        attempt = attempts.get(run.key) or {}
        if state.state in ("failed", "changed"):
            print(f"  {state.state}: {run.key}: {state.detail}")
        elif state.state == "done" and "seconds" in attempt:  # run here: what it took
            print(f"  done: {run.key}: {attempt['seconds'] / 60:.1f} min, peak {attempt['peak_rss_mb']} MB resident")
    report = study.folder / "report" / "report.md"
    print(f"report: {report}" if report.exists() else "report: not written yet")
