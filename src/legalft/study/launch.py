"""Running a study: here, one run after another, or on SLURM as job arrays and a report job; and what
those jobs run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from legalft.foundation.errors import UserError
from legalft.runs.lock import RunLock
from legalft.study.plan import (LOCK, ROOT, SCRIPTS, PlannedRun, Study, app_command, check_composes, read_record,
                                write_record)
from legalft.study.state import last_line, print_status, states


def to_run(study: Study, attempts: dict) -> list[PlannedRun]:
    current = states(study, attempts)
    for run in study.runs:
        if current[run.key].state == "changed":
            print(f"skipped {run.key}: {current[run.key].detail}")
    return [run for run in study.runs if current[run.key].state in ("failed", "pending")]


def dry_run(study: Study) -> int:
    """Each run's command and whether its config composes, and the report's command; nothing runs."""
    import shlex

    from legalft.study.plan import composition_problems

    attempts = read_record(study)["attempts"] if study.record_path.exists() else {}
    current = states(study, attempts)
    print(f"study {study.name}: {len(study.runs)} runs; folder {study.folder}")
    for run in study.runs:
        print(f"[{run.key}] ({current[run.key].state}) {shlex.join(run.command('python'))}")
    print(f"[report] {shlex.join(report_command(study, 'python'))}")
    problems = composition_problems(study)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 2 if problems else 0


def report_command(study: Study, python: str = sys.executable) -> list[str]:
    return [*app_command("report.py", python), "report=compare", f"runs={study.folder}/runs/*/*",
            f"out={study.folder}/report", "report.overwrite=true", *study.report_overrides]


class StudyLock(RunLock):
    """One command runs (or submits) a study at a time: a second one would start the first's runs again
    before their own folders are locked, and see them fail."""

    def __init__(self, study: Study) -> None:
        super().__init__(study.folder, LOCK)
        self.study = study

    def busy(self, holder: str) -> str:
        return (f"study {self.study.name} ({self.study.folder}) is being run by another command ({holder}). Wait for "
                "it to end (python study.py status ... shows where its runs stand), then run the study again for "
                "whatever it left.")

    def __enter__(self) -> "StudyLock":
        read_record(self.study)  # a folder that is not this study's is refused before anything is made in it
        self.study.folder.mkdir(parents=True, exist_ok=True)
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def run_locally(study: Study, jobs: int = 1) -> int:
    """The runs still to do, ``jobs`` at a time (each its own process), then the report over them."""
    if jobs < 1:
        raise UserError(f"--jobs {jobs}: a whole number of runs at a time, 1 or more.")
    check_composes(study)
    with StudyLock(study):
        return run_pending(study, jobs)


def run_pending(study: Study, jobs: int) -> int:
    from concurrent.futures import ThreadPoolExecutor
    from threading import Lock

    attempts = read_record(study)["attempts"]
    pending = to_run(study, attempts)
    write_record(study, attempts)
    print(f"study {study.name}: {len(study.runs)} runs, {len(study.runs) - len(pending)} finished or running, "
          f"{len(pending)} to run{f', {jobs} at a time' if jobs > 1 else ''}; folder {study.folder}")
    started, record_lock, ended = time.time(), Lock(), []

    def run_one(run: PlannedRun) -> None:
        log = study.log_of(run)
        log.parent.mkdir(parents=True, exist_ok=True)
        began = time.time()
        with open(log, "a") as out:
            code, peak_mb = measured(run.command(), out)
        with record_lock:  # one writer of the study's record and of the console at a time
            attempts[run.key] = {"mode": "local", "exit": code, "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
                                 "overrides": run.overrides, "seconds": round(time.time() - began, 1),
                                 "peak_rss_mb": peak_mb}
            write_record(study, attempts)
            ended.append(code)
            left = (time.time() - started) / len(ended) * (len(pending) - len(ended))
            outcome = "done" if code == 0 else f"FAILED (exit {code}): {last_line(log)}"
            print(f"[{len(ended)}/{len(pending)}] {run.key}: {outcome} in {time.time() - began:.0f} s; "
                  f"about {left:.0f} s left", flush=True)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(run_one, pending))
    failures = sum(code != 0 for code in ended)
    if not any_finished(study):
        print_status(study)
        return 1
    if pending or not (study.folder / "report" / "report.md").exists():
        code = subprocess.run(report_command(study)).returncode
        if code != 0:
            return code
    print_status(study)
    return 1 if failures else 0


def measured(command: list[str], out) -> tuple[int, int]:
    """Run ``command`` with its output in ``out``: (its exit code, its peak resident memory in MB, the largest of
    the process and the processes it waited for, as the kernel counts it for this child alone)."""
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        _, status, usage = os.wait4(process.pid, 0)
    except BaseException:  # the study stopped (Ctrl-C): its run with it, as subprocess.run does
        process.kill()
        process.wait()
        raise
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, round(usage.ru_maxrss / 1024)  # Linux counts kilobytes


def any_finished(study: Study) -> bool:
    """Whether any run has results to report; says so when none has."""
    if any((Path(run.folder) / "metrics.json").exists() for run in study.runs):
        return True
    print(f"error: no run of study {study.name} has finished, so there is no report to write: the failed runs' "
          f"logs are in {study.folder / 'logs'} (python study.py status ... prints each one's last line).",
          file=sys.stderr)
    return False


def submit(study: Study, sbatch_options: list[str]) -> int:
    """One job array per group (only the runs to do), and a report job after all of them (afterany)."""
    check_composes(study)
    with StudyLock(study):
        return submit_pending(study, sbatch_options)


def submit_pending(study: Study, sbatch_options: list[str]) -> int:
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
        logs = study.logs_of(group)
        logs.mkdir(parents=True, exist_ok=True)
        job = sbatch([*study.sbatch[group], *sbatch_options, f"--array={','.join(map(str, indices))}",
                      f"--job-name=study-{study.name}-{group}", f"--output={logs}/%a.log"],
                     "slurm/study_array.sbatch", str(study.record_path), group)
        arrays.append(job)
        for run in runs:
            if run.index in indices:
                attempts[run.key] = {"mode": "slurm", "job": f"{job}_{run.index}", "overrides": run.overrides}
        print(f"{group}: job array {job}, {len(indices)} runs")
    write_record(study, attempts)
    dependency = [f"--dependency=afterany:{':'.join(arrays)}"] if arrays else []
    report = sbatch([*dependency, *sbatch_options, f"--job-name=study-{study.name}-report",
                     f"--output={study.folder}/logs/report.log"], "slurm/study_report.sbatch", str(study.record_path))
    print(f"report: job {report}" + (f", after {', '.join(arrays)}" if arrays else ""))
    return 0


def sbatch(options: list[str], script: str, *arguments: str) -> str:
    """Submits a clone's ``slurm/`` file (its job.sh sets up the site's environment), from the clone's root."""
    if not (ROOT / script).is_file():
        raise UserError(f"study --slurm submits {script} of a clone of this project (its slurm/ folder sets up the "
                        "site's environment); this install has none: run the study from a clone, or without --slurm.")
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
    command = run.command()
    os.execv(command[0], command)


def run_report(record_path: Path) -> int:
    record, runs = planned_runs(record_path)
    folder = Path(record_path).parent
    study = Study(record["name"], folder, runs, record["sbatch"], record["report"])
    if not any_finished(study):
        return 1
    return subprocess.run(report_command(study)).returncode
