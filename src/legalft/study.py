"""Studies: a grid of runs (fine-tuned, LoRA, in-context) and the report over them, in one command.

A study file (``conf/study/<name>.yaml``, plain YAML) names groups of runs; each group is one entry
point (``train.py`` or ``evaluate.py``), overrides every run of it shares, and a grid whose product
gives its runs. The study folder holds every run folder (``runs/<group>/<run>``), their logs, the
study's record (``study.json``: the plan and each run's last attempt) and the report (``report/``).

Running a study again skips runs that finished with the same overrides (Hydra's
``.hydra/overrides.yaml`` beside ``metrics.json``), leaves running ones alone, and runs the rest
again into their own folders, so a preempted run resumes from its checkpoint.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from legalft.errors import UserError
from legalft.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ("train.py", "evaluate.py")
RECORD = "study.json"


@dataclass(frozen=True)
class PlannedRun:
    group: str
    index: int  # position in its group: the job array's task id
    name: str
    script: str
    overrides: list[str]
    folder: str

    @property
    def key(self) -> str:
        return f"{self.group}/{self.name}"

    def command(self, python: str = sys.executable) -> list[str]:
        return [python, self.script, *self.overrides, f"hydra.run.dir={self.folder}"]


@dataclass
class Study:
    name: str
    folder: Path
    runs: list[PlannedRun]
    sbatch: dict[str, list[str]]  # per group: sbatch options (GPUs, time)
    report_overrides: list[str]

    def groups(self) -> dict[str, list[PlannedRun]]:
        grouped: dict[str, list[PlannedRun]] = {}
        for run in self.runs:
            grouped.setdefault(run.group, []).append(run)
        return grouped

    @property
    def record_path(self) -> Path:
        return self.folder / RECORD

    def log_of(self, run: PlannedRun) -> Path:
        return self.folder / "logs" / run.group / f"{run.index}.log"


def study_file(spec: str) -> Path:
    path = Path(spec)
    if path.suffix in (".yaml", ".yml"):
        return path
    path = ROOT / "conf" / "study" / f"{spec}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in (ROOT / "conf" / "study").glob("*.yaml")))
        raise UserError(f"study {spec!r}: no file conf/study/{spec}.yaml; the shipped studies are {known}, or give a path.")
    return path


def folder_name(combination: dict) -> str:
    """``data.train_size-32__seed-0``: readable, and a safe Hydra override value and path component."""
    if not combination:
        return "run"
    return "__".join(re.sub(r"[^A-Za-z0-9._-]+", "_", f"{key}-{override_value(value)}") for key, value in combination.items())


def override_value(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ",".join(override_value(v) for v in value) + "]"
    return str(value)


def load_study(spec: str, extra_overrides: list[str] = (), folder: str | None = None) -> Study:
    """The study's plan. The file is plain YAML (no interpolation, no ``_target_``): nothing in it runs."""
    path = study_file(spec)
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise UserError(f"{path}: cannot be read as YAML ({err}).") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("groups"), dict) or not raw["groups"]:
        raise UserError(f"{path}: a study file needs `groups:`, a mapping of group names to runs (see conf/study/).")
    name = str(raw.get("name") or path.stem)
    study_folder = Path(folder or raw.get("folder") or ROOT / "checkpoints" / "studies" / name).resolve()
    runs, sbatch = [], {}
    for group, spec_of_group in raw["groups"].items():
        where = f"{path}: groups.{group}"
        if not isinstance(spec_of_group, dict) or spec_of_group.get("script") not in SCRIPTS:
            raise UserError(f"{where}.script: say which entry point runs the group: one of {', '.join(SCRIPTS)}.")
        unknown = set(spec_of_group) - {"script", "overrides", "grid", "slurm"}
        if unknown:
            raise UserError(f"{where}: unknown keys {sorted(unknown)}; a group has script, overrides, grid and slurm.")
        grid = spec_of_group.get("grid") or {}
        if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
            raise UserError(f"{where}.grid: a mapping of override keys to non-empty lists of values.")
        shared = [str(o) for o in spec_of_group.get("overrides") or []]
        for index, values in enumerate(itertools.product(*grid.values())):
            combination = dict(zip(grid, values))
            overrides = shared + [f"{k}={override_value(v)}" for k, v in combination.items()] + list(extra_overrides)
            run_name = folder_name(combination)
            runs.append(PlannedRun(group, index, run_name, spec_of_group["script"], overrides,
                                   str(study_folder / "runs" / group / run_name)))
        sbatch[group] = [str(o) for o in spec_of_group.get("slurm") or []]
    return Study(name, study_folder, runs, sbatch, [str(o) for o in raw.get("report") or []])


# -- the study's record --------------------------------------------------------------------------------
def read_record(study: Study) -> dict:
    if not study.record_path.exists():
        if study.folder.exists() and any(study.folder.iterdir()):
            raise UserError(f"{study.folder} exists and is not a study folder (no {RECORD}): choose another with "
                            "--folder, or move it away.")
        return {"name": study.name, "attempts": {}}
    try:
        record = json.loads(study.record_path.read_text())
    except ValueError as err:
        raise UserError(f"{study.record_path}: not valid JSON ({err}); restore it, or start the study in a new "
                        "folder (--folder).") from None
    if record.get("name") != study.name:
        raise UserError(f"{study.folder} holds study {record.get('name')!r}, not {study.name!r}: choose another "
                        "folder with --folder.")
    return record


def write_record(study: Study, attempts: dict) -> None:
    study.folder.mkdir(parents=True, exist_ok=True)
    atomic_write_json(study.record_path, {"name": study.name, "runs": [asdict(r) for r in study.runs],
                                          "sbatch": study.sbatch, "report": study.report_overrides,
                                          "attempts": attempts})


# -- where each run stands -----------------------------------------------------------------------------
@dataclass(frozen=True)
class RunState:
    state: str  # done | running | failed | pending | changed
    detail: str = ""


def recorded_overrides(folder: Path) -> list[str] | None:
    path = folder / ".hydra" / "overrides.yaml"
    try:
        return [str(o) for o in yaml.safe_load(path.read_text()) or []]
    except (OSError, yaml.YAMLError):
        return None


def locked(folder: Path) -> bool:
    if not (folder / ".lock").exists():
        return False
    from legalft.run_lock import RunLock

    lock = RunLock(folder)
    try:
        lock.acquire()
    except UserError:
        return True
    lock.release()
    return False


def last_line(path: Path) -> str:
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1][-200:] if lines else "empty log"


def state_of(study: Study, run: PlannedRun, attempt: dict | None, queued: dict[str, str]) -> RunState:
    folder = Path(run.folder)
    if (folder / "metrics.json").exists():
        if recorded_overrides(folder) == run.overrides:
            return RunState("done")
        return RunState("changed", "finished with other overrides than the study now gives: move its folder away to rerun it")
    if attempt and attempt.get("job") in queued:
        return RunState("running" if queued[attempt["job"]] == "RUNNING" else "pending", f"job {attempt['job']}: "
                        f"{queued[attempt['job']].lower()}")
    if locked(folder):
        return RunState("running")
    if attempt is None:
        return RunState("pending")
    resumes = " (its checkpoint is kept: a rerun resumes)" if (folder / "checkpoints" / "last.ckpt").exists() else ""
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
        counts = [sum(current[r.key].state == c for r in runs) for c in columns]
        print(f"{group:24}" + "".join(f"{n:>9}" for n in counts))
    for run in study.runs:
        state = current[run.key]
        if state.state in ("failed", "changed"):
            print(f"  {state.state}: {run.key}: {state.detail}")
    report = study.folder / "report" / "report.md"
    print(f"report: {report}" if report.exists() else "report: not written yet")


# -- running ---------------------------------------------------------------------------------------------
def to_run(study: Study, attempts: dict) -> list[PlannedRun]:
    current = states(study, attempts)
    for run in study.runs:
        if current[run.key].state == "changed":
            print(f"skipped {run.key}: {current[run.key].detail}")
    return [run for run in study.runs if current[run.key].state in ("failed", "pending")
            and not current[run.key].detail.startswith("job ")]


def report_command(study: Study, python: str = sys.executable) -> list[str]:
    return [python, "evaluate.py", "report=compare", f"runs={study.folder}/runs/*/*",
            f"out={study.folder}/report", "report.overwrite=true", *study.report_overrides]


def run_locally(study: Study) -> int:
    attempts = read_record(study)["attempts"]
    pending = to_run(study, attempts)
    write_record(study, attempts)
    print(f"study {study.name}: {len(study.runs)} runs, {len(study.runs) - len(pending)} finished or running, "
          f"{len(pending)} to run; folder {study.folder}")
    failures, started = 0, time.time()
    for position, run in enumerate(pending, start=1):
        log = study.log_of(run)
        log.parent.mkdir(parents=True, exist_ok=True)
        began = time.time()
        with open(log, "a") as out:
            code = subprocess.run(run.command(), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT).returncode
        attempts[run.key] = {"mode": "local", "exit": code, "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
        write_record(study, attempts)
        failures += code != 0
        took = time.time() - began
        left = (time.time() - started) / position * (len(pending) - position)
        outcome = "done" if code == 0 else f"FAILED (exit {code}): {last_line(log)}"
        print(f"[{position}/{len(pending)}] {run.key}: {outcome} in {took:.0f} s; about {left:.0f} s left", flush=True)
    if pending or not (study.folder / "report" / "report.md").exists():
        code = subprocess.run(report_command(study), cwd=ROOT).returncode
        if code != 0:
            return code
    print_status(study)
    return 1 if failures else 0


def submit(study: Study, sbatch_options: list[str]) -> int:
    """One job array per group (only the runs to do), and a report job after all of them (afterany)."""
    attempts = read_record(study)["attempts"]
    pending = to_run(study, attempts)
    report_missing = not (study.folder / "report" / "report.md").exists()
    if not pending and not report_missing:
        print(f"study {study.name}: every run finished and the report is written; nothing submitted.")
        return 0
    write_record(study, attempts)
    arrays = []
    for group, runs in study.groups().items():
        indices = [r.index for r in runs if r in pending]
        if not indices:
            continue
        logs = study.folder / "logs" / group
        logs.mkdir(parents=True, exist_ok=True)
        job = sbatch([*study.sbatch[group], *sbatch_options, f"--array={','.join(map(str, indices))}",
                      f"--job-name=study-{study.name}-{group}", f"--output={logs}/%a.log"],
                     "slurm/study_array.sbatch", str(study.record_path), group)
        arrays.append(job)
        for run in runs:
            if run.index in indices:
                attempts[run.key] = {"mode": "slurm", "job": f"{job}_{run.index}"}
        print(f"{group}: job array {job}, {len(indices)} runs")
    write_record(study, attempts)
    dependency = [f"--dependency=afterany:{':'.join(arrays)}"] if arrays else []
    report = sbatch([*dependency, *sbatch_options, f"--job-name=study-{study.name}-report",
                     f"--output={study.folder}/logs/report.log"], "slurm/study_report.sbatch", str(study.record_path))
    print(f"report: job {report}" + (f", after {', '.join(arrays)}" if arrays else ""))
    return 0


def sbatch(options: list[str], script: str, *arguments: str) -> str:
    result = subprocess.run(["sbatch", "--parsable", *options, script, *arguments], cwd=ROOT, capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise UserError(f"sbatch {script} refused the job: {result.stderr.strip()}")
    return result.stdout.strip().split(";")[0]


# -- inside a job ----------------------------------------------------------------------------------------
def planned_runs(record_path: Path) -> tuple[dict, list[PlannedRun]]:
    record = json.loads(Path(record_path).read_text())
    return record, [PlannedRun(**r) for r in record["runs"]]


def run_task(record_path: Path, group: str, index: int) -> None:
    """An array task: the run's command, from the plan the study wrote (entry point checked again)."""
    _, runs = planned_runs(record_path)
    (run,) = [r for r in runs if r.group == group and r.index == index]
    if run.script not in SCRIPTS:
        raise UserError(f"{record_path}: run {run.key} names {run.script!r}, not one of {', '.join(SCRIPTS)}.")
    # exec, not a child process: SLURM's requeue signal must reach the training process itself
    os.chdir(ROOT)
    command = run.command()
    os.execv(command[0], command)


def run_report(record_path: Path) -> int:
    record, runs = planned_runs(record_path)
    folder = Path(record_path).parent
    study = Study(record["name"], folder, runs, record["sbatch"], record["report"])
    return subprocess.run(report_command(study), cwd=ROOT).returncode
