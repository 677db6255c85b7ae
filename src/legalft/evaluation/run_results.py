"""The two files every run ends in, ``predictions.jsonl`` and ``metrics.json``.

Their format is the contract between runners, the report and users' scripts (docs/results.md).
``metrics.json`` is written last, so its presence marks a complete result.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from legalft.data.example import Example
from legalft.foundation.io import atomic_write_json, atomic_write_jsonl

PREDICTIONS = "predictions.jsonl"
METRICS = "metrics.json"
VERSIONED_PACKAGES = ("legalft", "torch", "transformers", "lightning", "scikit-learn")


# The results schema: every field a run's record (metrics.json's "run") and a prediction record (a line
# of predictions.jsonl) may hold, and whether it is always there. docs/results.md describes exactly these
# (tests/apps/test_docs.py checks both ways), and write_run_results refuses results outside them.
RUN_FIELDS = {
    "method": True, "model": True, "seed": True, "metric_mode": True, "comparable": True, "config_digest": True,
    "data_fingerprint": True, "versions": True, "source": False, "pretrained": False, "model_revision": False,
    "fused_with": False, "cv_folds": False, "train_size": False, "resumed_from": False,
    "overlap_with_training": False, "classifier": False, "iterations": False, "epochs": False, "regime": False,
    "quantize": False, "answer": False, "prompt": False, "k": False, "selection": False, "scored_on": False,
    "engine": False, "served_model": False, "cost": False, "fusion_choice": False, "template_digest": False,
    "choices": False, "predicted_with": False, "data_notes": False, "dataset": False, "refit": False,
}
RECORD_FIELDS = {
    "task": True, "id": True, "gold": True, "prediction": True,
    "scores": False, "raw": False, "prediction_flexible": False, "explanations": False, "evidence": False,
    "reasoning": False,
}

# Counts, not scores: every other number in a task's results is a score in [0, 1].
COUNT_FIELDS = {"n", "invalid_outputs", "explanations", "support", "train_size", "cv_folds", "overlap_with_training",
                "evidence_quotes", "evidence_exact", "evidence_normalized", "evidence_not_in_facts",
                "evidence_sections_scored", "evidence_missing",
                "invalid_json_items"}
# Cosine similarities: BERTScore without baseline rescaling lies in [-1, 1]
SIGNED_SCORES = {"bertscore_p", "bertscore_r", "bertscore_f"}


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _score_problems(where: str, scores: dict) -> list[str]:
    problems = []
    for key, value in scores.items():
        if isinstance(value, dict):
            problems += _score_problems(f"{where}.{key}", value)
        elif key in COUNT_FIELDS:
            if not (_whole(value) and value >= 0):
                problems.append(f"{where}.{key}={value!r} is not a count")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            continue  # names and flags: metric, category, manual_grading, ...
        elif not ((-1.0 if key in SIGNED_SCORES else 0.0) <= value <= 1.0):  # NaN and infinities fail this too
            problems.append(f"{where}.{key}={value!r} is not a score in [0, 1]")
    return problems


def results_problems(metrics) -> list[str]:
    """What makes ``metrics`` (a parsed metrics.json) unfit for a report, per docs/results.md: the run's
    ``method``, ``model`` and ``seed``; each task an object with its count ``n`` and finite scores in
    [0, 1]. Empty when it is fit."""
    if not (isinstance(metrics, dict) and isinstance(metrics.get("run"), dict) and isinstance(metrics.get("tasks"), dict)):
        return ["not a results file (an object with 'run' and 'tasks')"]
    run, problems = metrics["run"], []
    for key in ("method", "model"):
        if not isinstance(run.get(key), str) or not run[key]:
            problems.append(f"run.{key} is {'missing' if key not in run else repr(run[key])}: a name is needed")
    if not _whole(run.get("seed")):
        problems.append(f"run.seed is {'missing' if 'seed' not in run else repr(run['seed'])}: a whole number is needed")
    for task, scores in metrics["tasks"].items():
        if not isinstance(scores, dict):
            problems.append(f"tasks.{task} is {type(scores).__name__}, not an object of scores")
            continue
        if "n" not in scores:
            problems.append(f"tasks.{task}.n is missing")
        problems += _score_problems(f"tasks.{task}", scores)
    return problems


def prediction_problem(record) -> str | None:
    """Why one line of predictions.jsonl is not a prediction record; None when it is one."""
    if not isinstance(record, dict):
        return "not an object"
    missing = [key for key, always in RECORD_FIELDS.items() if always and key not in record]
    if missing:
        return f"no {', '.join(missing)}"
    if not isinstance(record["task"], str) or not isinstance(record["id"], (str, int)) or isinstance(record["id"], bool):
        return "task or id is not a name"
    return None


def data_fingerprint(examples: Iterable[Example]) -> str:
    """Identifies a test set by its ids, texts and gold labels, independent of file order."""
    lines = sorted(
        json.dumps([e.id, hashlib.sha256(e.text.encode()).hexdigest(), list(e.labels)]) for e in examples
    )
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def config_digest(resolved_config_yaml: str) -> str:
    return hashlib.sha256(resolved_config_yaml.encode()).hexdigest()[:16]


_command_started = time.monotonic()


def start_clock() -> None:
    """The command starts now (the run folder's guard calls this as it claims the folder)."""
    global _command_started
    _command_started = time.monotonic()


def run_cost() -> dict:
    """What the run cost up to its results: wall seconds since the command started, the device, and the
    peak resident memory of this process and the processes it started (DDP ranks), with the GPU's peak
    where one was used."""
    import os
    import resource
    import sys

    peak_kb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    cost = {"wall_seconds": round(time.monotonic() - _command_started, 1), "device": f"cpu ({os.cpu_count()} cores)",
            "peak_memory_mb": round(peak_kb / 1024, 1)}
    torch = sys.modules.get("torch")  # only where the run used it
    if torch is not None and torch.cuda.is_available() and torch.cuda.max_memory_allocated() > 0:
        cost["device"] = torch.cuda.get_device_name(0)
        cost["peak_gpu_memory_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return cost


def package_versions() -> dict[str, str]:
    versions = {}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def source_commit() -> dict | None:
    """The git commit of the project's code, and whether it had uncommitted changes; None outside a git
    checkout (an installed wheel: ``versions`` says which release)."""
    import subprocess

    root = Path(__file__).resolve().parents[3]
    if not (root / ".git").exists():
        return None
    try:
        def git(*args):
            return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=5,
                                  check=True).stdout

        return {"commit": git("rev-parse", "HEAD").strip(),
                "dirty": bool(git("status", "--porcelain", "--untracked-files=no", "--", "src", "conf").strip())}
    except (OSError, subprocess.SubprocessError):
        return None


def model_revision(pretrained: str) -> str | None:
    """Which model files a run used: a local file or folder by the SHA-256 of its contents
    (``sha256:<16 hex>``; a folder's file names included), a hub name by the commit of the snapshot the
    local Hugging Face cache holds for it; None when neither is known."""
    path = Path(pretrained)
    if path.exists():
        digest = hashlib.sha256()
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            if path.is_dir():
                digest.update(file.relative_to(path).as_posix().encode() + b"\0")
            with open(file, "rb") as stream:
                for block in iter(lambda: stream.read(1 << 20), b""):
                    digest.update(block)
        return f"sha256:{digest.hexdigest()[:16]}"
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(pretrained, local_files_only=True)).name  # snapshots/<commit>
    except Exception:  # not a hub name, or never downloaded here
        return None


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
        "cost": run_cost(),
        **({"source": source} if (source := source_commit()) else {}),
        **extra,
        **({"model_revision": revision} if "pretrained" in extra and (revision := model_revision(extra["pretrained"]))
           else {}),
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


def schema_problems(run: dict, predictions: list[dict]) -> list[str]:
    """Where ``run`` and ``predictions`` leave the results schema (``RUN_FIELDS``, ``RECORD_FIELDS``)."""
    problems = [f"run.{key} is missing" for key, always in RUN_FIELDS.items() if always and key not in run]
    problems += [f"run.{key} is not a results field" for key in run if key not in RUN_FIELDS]
    unknown = {key for record in predictions for key in record if key not in RECORD_FIELDS}
    problems += [f"predictions hold {key!r}, not a prediction field" for key in sorted(unknown)]
    return problems


def write_run_results(run_dir: str | Path, run: dict, tasks: dict[str, dict], predictions: list[dict]) -> Path:
    """The two files, written atomically, predictions first; results outside the schema are refused before
    either is written (a method that writes a new field declares it above and documents it in docs/results.md)."""
    if problems := schema_problems(run, predictions):
        raise ValueError(f"results outside the schema of docs/results.md: {'; '.join(problems)}")
    run_dir = Path(run_dir)
    atomic_write_jsonl(run_dir / PREDICTIONS, predictions)
    atomic_write_json(run_dir / METRICS, {"run": run, "tasks": tasks})
    return run_dir / METRICS


def publish(run_dir: str | Path, info: dict, scores: dict[str, dict], records: list[dict], loggers=()) -> Path:
    """What every method ends with: the two result files, each task's scores and where they are, and
    the results in ``loggers`` (runs without a trainer of their own: in-context runs, rescoring)."""
    path = write_run_results(run_dir, info, scores, records)
    if loggers:
        from legalft.evaluation.results_logging import log_results

        log_results(list(loggers), info, scores, records)
    for name, task_scores in scores.items():
        print(format_scores(name, task_scores))
    if info.get("predicted_with"):
        print(f"predicted with {info['predicted_with']}")
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
