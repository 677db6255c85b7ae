"""Reading run folders for a report: every run is its ``metrics.json`` and ``predictions.jsonl``
(the contract in DESIGN.md), whatever trained or prompted it."""

from __future__ import annotations

import glob
import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from legalft.errors import UserError

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


def method_of(run: Run, metric_mode: str) -> str:
    """The column a run belongs to: what was run and how, without the seed (seeds are averaged).
    Runs whose numbers cannot stand beside the published ones get their own, marked column."""
    info = run.info
    parts = [info.get("method", "?"), info.get("model", "?")]
    if info.get("method") == "lora":
        parts[0] = "qlora" if info.get("quantize") not in (None, "none") else "lora"
        parts.append(info.get("regime", "pooled"))
    if info.get("method") == "incontext":
        parts += [info.get("prompt", "?"), f"k={info.get('k', 0)}", info.get("answer", "?")]
    if info.get("train_size") is not None:
        parts.append(f"n={info['train_size']}")
    name = " ".join(str(p) for p in parts)
    if info.get("comparable") is False or info.get("metric_mode", metric_mode) != metric_mode:
        name += f" {NOT_COMPARABLE}"
    return name


def find_runs(pattern: str) -> list[Path]:
    """Run folders under a glob: folders holding a ``metrics.json`` or a ``config.yaml``."""
    matched = [Path(p) for p in sorted(glob.glob(pattern, recursive=True)) if Path(p).exists()]  # 'x/**' yields 'x/' even when x is missing
    if not matched:
        raise UserError(f"runs={pattern!r} matches nothing: point it at run folders, e.g. runs='checkpoints/**'.")
    folders = sorted({p if p.is_dir() else p.parent for p in matched})
    runs = [f for f in folders if (f / "metrics.json").exists() or (f / "config.yaml").exists()]
    if not runs:
        raise UserError(f"runs={pattern!r} matches {len(folders)} folder(s), none of them a run folder "
                        "(a folder with metrics.json, written by train.py or evaluate.py).")
    return runs


def read_run(folder: Path) -> Run:
    metrics_path = folder / "metrics.json"
    if not metrics_path.exists():
        raise UserError(f"{folder}: no metrics.json. Score the run first (python evaluate.py run={folder}), "
                        "or leave it out of runs=.")
    metrics = json.loads(metrics_path.read_text())
    predictions: dict[str, list[dict]] = defaultdict(list)
    predictions_path = folder / "predictions.jsonl"
    if predictions_path.exists():
        for line in predictions_path.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                predictions[record["task"]].append(record)
    return Run(path=folder, info=metrics["run"], tasks=metrics["tasks"], predictions=dict(predictions))


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
            if len(seen) > 1:
                first, second = list(seen.values())[:2]
                raise UserError(
                    f"method {method!r}: runs {first} and {second} scored {task} on different test sets. "
                    "Report runs of one method on the same test split (same data.root / data.test_path, no data.limit)."
                )
    return dict(methods)
