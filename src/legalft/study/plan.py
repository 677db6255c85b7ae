"""Studies: a grid of runs (fine-tuned, LoRA, in-context) and the report over them, in one command.

A study file (``studies/<name>.yaml``, plain YAML) names groups of runs; each group is one entry
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
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from legalft.foundation.errors import UserError
from legalft.foundation.io import atomic_write_json
from legalft.foundation.path_names import component

ROOT = Path(__file__).resolve().parents[3]  # a clone's root: --slurm submits its slurm/ files
STUDIES = Path(__file__).resolve().parents[1] / "studies"  # the shipped studies (studies/ in a clone)
SCRIPTS = ("train.py", "evaluate.py")
RECORD = "study.json"
LOCK = ".study.lock"  # held by the one command running or submitting the study (legalft.study.launch)


def app_command(script: str, python: str = sys.executable) -> list[str]:
    """``train.py`` / ``evaluate.py`` as the installed package runs them, from any folder."""
    return [python, "-m", f"legalft.apps.{Path(script).stem}"]


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
        return [*app_command(self.script, python), *self.overrides, f"hydra.run.dir={self.folder}"]


@dataclass
class Study:
    name: str
    folder: Path
    runs: list[PlannedRun]
    sbatch: dict[str, list[str]]  # per group: sbatch options (GPUs, time)
    report_overrides: list[str]
    overrides: list[str] = field(default_factory=list)  # the command line's, for every run

    def groups(self) -> dict[str, list[PlannedRun]]:
        grouped: dict[str, list[PlannedRun]] = {}
        for run in self.runs:
            grouped.setdefault(run.group, []).append(run)
        return grouped

    @property
    def record_path(self) -> Path:
        return self.folder / RECORD

    def logs_of(self, group: str) -> Path:
        return self.folder / "logs" / component(group, "study group")

    def log_of(self, run: PlannedRun) -> Path:
        return self.logs_of(run.group) / f"{run.index}.log"


def study_file(spec: str) -> Path:
    path = Path(spec)
    if path.suffix in (".yaml", ".yml"):
        return path
    path = STUDIES / f"{component(spec, 'study')}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in STUDIES.glob("*.yaml")))
        raise UserError(f"study {spec!r}: no file studies/{spec}.yaml; the shipped studies are {known}, or give a path.")
    return path


def folder_name(combination: dict) -> str:
    """``protocol.train_size-32__seed-0``: readable, and a safe Hydra override value and path component."""
    if not combination:
        return "run"
    name = "__".join(re.sub(r"[^A-Za-z0-9._-]+", "_", f"{key}-{override_value(value)}") for key, value in combination.items())
    return component(name, "study grid")


def override_value(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ",".join(override_value(v) for v in value) + "]"
    return str(value)


def split_overrides(overrides, groups) -> tuple[list[str], dict[str, list[str]]]:
    """The command line's overrides: for every run, and ``<group>:<key>=<value>`` for one group's runs only (a
    key only that group's entry point has, ``lora:trainer.max_epochs=1``)."""
    shared, per_group = [], {}
    for override in overrides:
        key = override.split("=", 1)[0]
        if ":" not in key:
            shared.append(override)
            continue
        group, _, rest = override.partition(":")
        if group not in groups:
            raise UserError(f"{override}: the study has no group {group!r} (its groups: {', '.join(groups)}); write "
                            "<group>:<key>=<value> for one group's runs, <key>=<value> for all.")
        per_group.setdefault(group, []).append(rest)
    return shared, per_group


def load_study(spec: str, extra_overrides: list[str] = (), folder: str | None = None,
               groups: list[str] | None = None) -> Study:
    """The study's plan (``groups``: only these groups' runs). The file is plain YAML (no interpolation, no
    ``_target_``): nothing in it runs."""
    path = study_file(spec)
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise UserError(f"{path}: cannot be read as YAML ({err}).") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("groups"), dict) or not raw["groups"]:
        raise UserError(f"{path}: a study file needs `groups:`, a mapping of group names to runs (see studies/).")
    name = str(raw.get("name") or path.stem)
    # a folder the study file names (or --folder) is the user's choice; a name only ever names a folder under
    # checkpoints/studies
    study_folder = Path(folder or raw.get("folder") or Path("checkpoints") / "studies" / component(name, "name")).resolve()
    runs, sbatch = [], {}
    from legalft.runs.migrations import forwarded, forwarded_key

    # keys of earlier releases, in the study file or on the command line, read where they are now (and said so)
    shared_overrides, group_overrides = split_overrides(forwarded(list(extra_overrides)), raw["groups"])
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
        shared = forwarded([str(o) for o in spec_of_group.get("overrides") or []])
        keys = [forwarded_key(str(key), shared) for key in grid]
        for index, values in enumerate(itertools.product(*grid.values())):
            combination = dict(zip(keys, values))
            overrides = (shared + [f"{k}={override_value(v)}" for k, v in combination.items()] + shared_overrides
                         + group_overrides.get(group, []))
            run_name = folder_name(combination)
            runs.append(PlannedRun(group, index, run_name, spec_of_group["script"], overrides,
                                   str(study_folder / "runs" / component(group, "study group") / run_name)))
        sbatch[group] = [str(o) for o in spec_of_group.get("slurm") or []]
    if groups:
        unknown = [g for g in groups if g not in raw["groups"]]
        if unknown:
            raise UserError(f"--groups {','.join(groups)}: the study has no group {unknown[0]!r}; its groups are "
                            f"{', '.join(raw['groups'])}.")
        runs = [run for run in runs if run.group in groups]
        sbatch = {group: options for group, options in sbatch.items() if group in groups}
    return Study(name, study_folder, runs, sbatch, [str(o) for o in raw.get("report") or []], list(extra_overrides))


def composition_problems(study: Study) -> list[str]:
    """Each run whose overrides its entry point's config does not take (a key its config lacks, an option a
    group lacks), found by composing every run's config before any runs (Hydra's compose: no model, no data)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from legalft.configuration.resolvers import CONFIG_DIR, register_resolvers

    register_resolvers()
    problems = []
    for run in study.runs:
        GlobalHydra.instance().clear()
        try:
            with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
                compose(config_name=Path(run.script).stem, overrides=run.overrides)
        except Exception as err:  # Hydra's own errors name the key
            problems.append(f"{run.key}: {str(err).splitlines()[0]}")
        finally:
            GlobalHydra.instance().clear()
    return problems


def check_composes(study: Study) -> None:
    problems = composition_problems(study)
    if problems:
        raise UserError(f"{len(problems)} of the study's runs do not compose, so none was started:\n  "
                        + "\n  ".join(problems[:10]) + ("\n  ..." if len(problems) > 10 else "")
                        + "\nAn override only some groups' entry points take goes to those groups alone: "
                        "<group>:<key>=<value> (e.g. lora:trainer.max_epochs=1).")


def load_study_as_run(spec: str, extra_overrides: list[str] = (), folder: str | None = None,
                      groups: list[str] | None = None) -> Study:
    """For ``status``: the study with the overrides it was last run with (its record), when the command
    gives none, so that ``study.py status <study>`` describes the runs ``study.py run <study> ...`` made."""
    study = load_study(spec, extra_overrides, folder, groups)
    if not extra_overrides:
        recorded = read_record(study).get("overrides") or []
        if recorded:
            study = load_study(spec, [str(o) for o in recorded], folder, groups)
    return study


# -- the study's record --------------------------------------------------------------------------------
def read_record(study: Study) -> dict:
    if not study.record_path.exists():
        if study.folder.exists() and any(p.name != LOCK for p in study.folder.iterdir()):
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
    """The plan and each run's last attempt. A study run a few groups at a time (``--groups``) keeps the groups an
    earlier command planned in the same folder, so its record and report hold every group that ran there."""
    study.folder.mkdir(parents=True, exist_ok=True)
    earlier = read_record(study)
    planned = set(study.groups())
    runs = [r for r in earlier.get("runs", []) if r["group"] not in planned] + [asdict(r) for r in study.runs]
    sbatch = {g: o for g, o in earlier.get("sbatch", {}).items() if g not in planned} | study.sbatch
    atomic_write_json(study.record_path, {"name": study.name, "runs": runs, "sbatch": sbatch,
                                          "report": study.report_overrides, "overrides": study.overrides,
                                          "attempts": attempts})
