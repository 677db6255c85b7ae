"""The two files every run ends in, ``predictions.jsonl`` and ``metrics.json``.

Their format is the contract between runners, the report and users' scripts (docs/results.md).
``metrics.json`` is written last, so its presence marks a complete result.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from legalft.data.example import Example
from legalft.io import atomic_write_json, atomic_write_jsonl

PREDICTIONS = "predictions.jsonl"
METRICS = "metrics.json"
VERSIONED_PACKAGES = ("legalft", "torch", "transformers", "lightning", "scikit-learn")


def data_fingerprint(examples: Iterable[Example]) -> str:
    """Identifies a test set by its ids, texts and gold labels, independent of file order."""
    lines = sorted(
        json.dumps([e.id, hashlib.sha256(e.text.encode()).hexdigest(), list(e.labels)]) for e in examples
    )
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def config_digest(resolved_config_yaml: str) -> str:
    return hashlib.sha256(resolved_config_yaml.encode()).hexdigest()[:16]


def package_versions() -> dict[str, str]:
    versions = {}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def run_info(
    method: str,
    model: str,
    seed: int,
    data_fingerprint: str,
    config_digest: str,
    metric_mode: str = "paper",
    comparable: bool = True,
    **extra,
) -> dict:
    return {
        "method": method,
        "model": model,
        "seed": seed,
        "metric_mode": metric_mode,
        "comparable": comparable,
        "config_digest": config_digest,
        "data_fingerprint": data_fingerprint,
        "versions": package_versions(),
        **extra,
    }


def recorded_model(run_dir: str | Path, default: str) -> str:
    """The model a run was trained with, by its config choice (``minilm``): what its metrics.json records
    (rescoring keeps it), else what Hydra recorded when it started (``.hydra/hydra.yaml``), else ``default``."""
    import yaml

    path, hydra_record = Path(run_dir) / METRICS, Path(run_dir) / ".hydra" / "hydra.yaml"
    try:
        if path.exists():
            return json.loads(path.read_text())["run"]["model"]
        if hydra_record.exists():
            return yaml.safe_load(hydra_record.read_text())["hydra"]["runtime"]["choices"]["model"]
    except (ValueError, KeyError, TypeError, yaml.YAMLError):
        pass  # a damaged record: the run is rescored and its metrics.json written anew
    return default


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def write_run_results(run_dir: str | Path, run: dict, tasks: dict[str, dict], predictions: list[dict]) -> Path:
    run_dir = Path(run_dir)
    atomic_write_jsonl(run_dir / PREDICTIONS, predictions)
    atomic_write_json(run_dir / METRICS, {"run": run, "tasks": tasks})
    return run_dir / METRICS


def publish(run_dir: str | Path, info: dict, scores: dict[str, dict], records: list[dict], loggers=()) -> Path:
    """What every method ends with: the two result files, each task's scores and where they are, and
    the results in ``loggers`` (runs without a trainer of their own: in-context runs, rescoring)."""
    path = write_run_results(run_dir, info, scores, records)
    if loggers:
        from legalft.results_logging import log_results

        log_results(list(loggers), info, scores, records)
    for name, task_scores in scores.items():
        print(format_scores(name, task_scores))
    print(f"run folder: {run_dir}\nmetrics:    {path}")
    return path


def format_scores(task: str, scores: dict) -> str:
    """A plain-text table of one task's scores: summary line, then one row per label."""
    summary = "  ".join(
        f"{name} {value:.3f}" if isinstance(value, float) else f"{name} {value}"
        for name, value in scores.items()
        if name not in ("per_label", "metric", "category")
    )
    lines = [f"{task}: {summary}"]
    per_label = scores.get("per_label")
    if per_label:
        width = max(len(label) for label in per_label)
        lines.append(f"  {'label':<{width}}  precision  recall     f1  support")
        for label, s in per_label.items():
            lines.append(
                f"  {label:<{width}}  {s['precision']:9.3f}  {s['recall']:6.3f}  {s['f1']:5.3f}  {s['support']:7d}"
            )
    return "\n".join(lines)
