"""Reading run folders for a report: every run is its ``metrics.json`` and ``predictions.jsonl``
(the contract in docs/results.md), whatever trained or prompted it."""

from __future__ import annotations

import glob
import hashlib
import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from legalft.runs.migrations import method_named
from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)
NOT_COMPARABLE = "†"  # trained on test data, a subset of the test split, or another metric mode


@dataclass
class Run:
    path: Path
    info: dict
    tasks: dict[str, dict]
    predictions: dict[str, list[dict]] = field(default_factory=dict)  # task -> records, in file order

    @property
    def seed(self) -> int | None:
        return self.info.get("seed")

    def test_set(self, task: str) -> str:
        """Which test examples a task was scored on: ids and gold answers, order-free."""
        lines = sorted(f"{r['id']}\t{json.dumps(r['gold'], sort_keys=True)}" for r in self.predictions.get(task, []))
        return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def lowest_seed(runs: list[Run]) -> Run:
    """The run of a method that paired tests and the appendix use: the one with the lowest seed."""
    return min(runs, key=lambda r: (r.seed is None, r.seed or 0))


PER_LABEL = "per label"


def per_label_category(task: str) -> str:
    """The category of a multi-label task's per-label F1 rows: their own, under the task's name, so that
    two multi-label tasks' labels never share one."""
    return f"{task}: {PER_LABEL}"


def is_per_label(category: str) -> bool:
    return category.endswith(f": {PER_LABEL}")


def trained(column: str) -> bool | None:
    """Whether a report column's method fits on the train split (False: in-context); None for a method
    this installation does not know."""
    cls = method_named(column.split()[0])
    return None if cls is None else cls.trains


def method_of(run: Run, metric_mode: str) -> str:
    """The column a run belongs to: what was run and how, without the seed (seeds are averaged).
    Runs whose numbers cannot stand beside the published ones get their own, marked column."""
    info = run.info
    recorded = str(info.get("method", "?"))
    cls = method_named(recorded)
    # each method says how its runs are told apart; one this installation lacks, by its name and model
    parts = cls.report_words(info) if cls is not None else [recorded, info.get("model", "?")]
    if info.get("train_size") is not None:
        parts.append(f"n={info['train_size']}")
    name = " ".join(str(p) for p in parts)
    if info.get("comparable") is False or info.get("metric_mode", metric_mode) != metric_mode:
        name += f" {NOT_COMPARABLE}"
    return name


def unfinished(folders: list[Path], scored: list[Path]) -> list[Path]:
    """Run folders (a config or Hydra's record) among ``folders`` without results."""
    return [f for f in folders if f not in scored and ((f / "config.yaml").exists() or (f / ".hydra").is_dir())]


def find_runs(pattern: str | Sequence[str]) -> tuple[list[Path], list[Path]]:
    """(run folders with results, every folder the glob, or any of a list of globs, matches). A run
    folder is a folder with a ``metrics.json``; one with a ``config.yaml`` alone is a run that never
    finished (crashed, still running, or an encoder run without a test split): it is listed and left out."""
    patterns = [pattern] if isinstance(pattern, str) else [str(p) for p in pattern]
    # 'x/**' yields 'x/' even when x is missing
    matched = sorted({Path(p) for one in patterns for p in glob.glob(one, recursive=True) if Path(p).exists()})
    if not matched:
        raise UserError(f"runs={pattern!r} matches nothing: point it at run folders, e.g. runs='checkpoints/**'.")
    folders = sorted({p if p.is_dir() else p.parent for p in matched})
    scored = [f for f in folders if (f / "metrics.json").exists()]
    unscored = unfinished(folders, scored)
    if unscored:
        log.warning("left out %d run folder(s) without metrics.json (unfinished, or never scored: "
                    "python evaluate.py run=DIR scores a trained run): %s", len(unscored), ", ".join(map(str, unscored)))
    if not scored:
        raise UserError(f"runs={pattern!r} matches {len(folders)} folder(s), none of them a scored run folder "
                        "(a folder with metrics.json, written by train.py or evaluate.py).")
    return scored, folders


def read_json(path: Path, what: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise UserError(f"{path}: {what} is not valid JSON ({err}); the run folder {path.parent} is damaged. "
                        "Rescore it (python evaluate.py run=DIR) or leave it out of runs=.") from None


def read_run(folder: Path) -> Run:
    """A run folder's results, checked against the results schema (``run_results.results_problems``)."""
    from legalft.evaluation.run_results import prediction_problem, results_problems

    from legalft.runs.folder import RunFolder

    metrics_path, predictions_path = RunFolder(folder).metrics, RunFolder(folder).predictions
    metrics = read_json(metrics_path, "metrics.json")
    problems = results_problems(metrics)
    if problems:
        raise UserError(f"{metrics_path}: {'; '.join(problems[:3])}{' ...' if len(problems) > 3 else ''}; the run "
                        f"folder {folder} is damaged. Rescore it or leave it out of runs=.")
    predictions: dict[str, list[dict]] = defaultdict(list)
    if predictions_path.exists():
        for number, line in enumerate(predictions_path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if line.strip():
                try:
                    record = json.loads(line)
                except ValueError:
                    record = None
                problem = prediction_problem(record) if record is not None else "not JSON"
                if problem:
                    raise UserError(f"{predictions_path}: line {number} is not a prediction record ({problem}: "
                                    f"truncated or damaged); rescore the run folder {folder} or leave it out of "
                                    "runs=.")
                predictions[record["task"]].append(record)
    return Run(path=folder, info=metrics["run"], tasks=metrics["tasks"], predictions=dict(predictions))


def read_runs(folders: list[Path]) -> tuple[list[Run], list[tuple[Path, str]]]:
    """The runs that read, and each folder left out with its reason (damaged results)."""
    runs, left_out = [], []
    for folder in folders:
        try:
            runs.append(read_run(folder))
        except UserError as err:
            left_out.append((folder, str(err)))
            log.warning("left out: %s", err)
    return runs, left_out


def without_duplicates(runs: list[Run], metric_mode: str) -> tuple[list[Run], list[tuple[Path, str]]]:
    """One run per (method, config digest, seed): a copied run folder is the same run, not another seed."""
    kept: dict[tuple, Run] = {}
    left_out = []
    for run in runs:
        key = (method_of(run, metric_mode), run.info.get("config_digest"), run.seed)
        if key in kept:
            reason = (f"{run.path}: the same run as {kept[key].path} (method, config digest and seed {run.seed} "
                      "alike, e.g. a copied run folder): counted once, not as another seed")
            left_out.append((run.path, reason))
            log.warning("left out: %s", reason)
        else:
            kept[key] = run
    return list(kept.values()), left_out


def dataset_identity(run: Run, task: str) -> str | None:
    """Which data a run read for ``task``, where it recorded it (``run.dataset``): the ``datasets`` config, revision and
    the contents of its files, not where they lie (a cluster mounts them elsewhere)."""
    origin = (run.info.get("dataset") or {}).get(task)
    if not isinstance(origin, dict):
        return None
    return json.dumps([origin.get("name"), origin.get("revision"), sorted((origin.get("files") or {}).values())])


def group_by_method(runs: list[Run], metric_mode: str) -> dict[str, list[Run]]:
    """Runs per method; refuses a method whose runs scored one task on different test sets."""
    methods: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        methods[method_of(run, metric_mode)].append(run)
    for method, members in methods.items():
        for task in {t for r in members for t in r.tasks}:
            seen: dict[str, Path] = {}
            for run in members:
                if task in run.tasks and run.predictions.get(task):
                    seen.setdefault(run.test_set(task), run.path)
            if len(seen) < 2:  # the same ids and answers from another revision or other files (data=hf's record)
                seen = {}
                for run in members:
                    if (origin := dataset_identity(run, task)) is not None:
                        seen.setdefault(origin, run.path)
            if len(seen) > 1:
                first, second = list(seen.values())[:2]
                raise UserError(
                    f"method {method!r}: runs {first} and {second} scored {task} on different test sets. "
                    "Report runs of one method on the same test split (same data.root / data.test_path, no protocol.limit)."
                )
    return dict(methods)
