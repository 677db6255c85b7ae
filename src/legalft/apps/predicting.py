"""Classify documents nobody has labelled with a finished run (``predict.py run=DIR input=FILE``): the run's own
model, windows, fusion, thresholds and evidence scorer, exactly as it scored its test split. The run folder is
read, never written; the output (JSON Lines, or CSV where ``out`` ends in ``.csv``; standard output where
``out`` is not set) is written whole or not at all, beside a ``<out>.run.json`` that names the run, its config
digest and this project's version."""

from __future__ import annotations

import csv
import io
import json
import logging
import sys
from pathlib import Path

from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)


FORMATS = ("records", "fire2026")


def predict(run_dir: str, input_path: str, out: str | None = None, text_column: str | None = None,
            id_column: str | None = None, task: str | None = None, overwrite: bool = False,
            engine=None, with_evidence: bool = True, output_format: str = "records",
            cache_dir: str | None = None) -> list[dict]:
    """The records written (one per document, in input order); ``engine``: what answers an in-context or LoRA run's
    prompts (the engine group; None: an in-context run's own, a LoRA run's base loaded here); ``with_evidence``: each
    predicted section's evidence sentences, where the run gives them; ``output_format``: ``records`` (predict.py's
    lines) or ``fire2026`` (a FIRE 2026 Task 1 submission for the input, validated against it); ``cache_dir``: where
    tokenised windows are kept (None: the run's window cache is read, and nothing is written but ``out``)."""
    if output_format not in FORMATS:
        raise UserError(f"format={output_format}: choose one of {', '.join(FORMATS)}.")
    from legalft.data.unlabelled import read_documents
    from legalft.export import reading
    from legalft.runs.context import RunContext
    from legalft.runs.folder import RunFolder
    from legalft.runs.saved_config import recorded_method

    exported = reading.is_export(run_dir)  # a folder legalft.export wrote, else a run folder
    run = None if exported else RunFolder(run_dir)
    if run is not None:
        run.require_finished("predict")
    targets = outputs(out, overwrite, output_format, run_dir)  # refused before anything is read or loaded
    if exported:
        own_task = reading.read_record(Path(run_dir))["task"]
        if task is not None and task != own_task:
            raise UserError(f"task={task}: the export {run_dir} classifies {own_task} alone; leave task= out.")
        examples, skipped = read_documents(input_path, text_column, id_column)
        classified, record = reading.classify(run_dir, examples, with_evidence)
        method_name, digest, codes = record.get("method"), record.get("config_digest"), record.get("codes") or {}
        run_of_scores = record.get("run", "<the run folder it was exported from>")
    else:
        examples, skipped = read_documents(input_path, text_column, id_column)
        ctx = RunContext.for_saved_run(run, {}, engine=engine)
        ctx.datamodule = windows_cache_of(ctx.datamodule, cache_dir)
        method = recorded_method(run)
        classified = method.classify(ctx, examples, task)
        if not with_evidence:
            classified.evidence = None
        method_name, digest, codes = method.name, ctx.config_digest, ctx.label_codes()
        run_of_scores = run_dir
    records = classified.records(examples, codes)
    header = {"run": str(Path(run_dir).resolve()), "method": method_name, "task": classified.task.name,
              "config_digest": digest, "legalft": version(), "documents": len(records),
              "skipped_empty": skipped,
              "labels": list(classified.task.labels),
              "to_score": f"predict.py ignores labels: score labelled documents with evaluate.py run={run_of_scores} "
                          "data.test_path=FILE"}
    if output_format == "fire2026":
        records = submission(records, examples, classified.task, method_name, input_path)
    write(records, header, targets, classified.task.labels, overwrite)
    return records


def windows_cache_of(datamodule, cache_dir: str | None):
    """The run's batching config with its window cache read and never written, or kept in ``cache_dir`` where the
    command names one (a config without a cache is left as it is)."""
    from omegaconf import OmegaConf, open_dict

    if datamodule is None or "cache_dir" not in datamodule:
        return datamodule
    datamodule = OmegaConf.create(OmegaConf.to_container(datamodule))
    with open_dict(datamodule):
        datamodule.cache_writes = cache_dir is not None
        if cache_dir is not None:
            datamodule.cache_dir = str(cache_dir)
    return datamodule


def submission(records: list[dict], examples, task, method_name: str, input_path: str) -> list[dict]:
    """The records as FIRE 2026 Task 1 submission lines, validated against the input's own facts (every case
    answered, every ``exact_fact`` verbatim) before anything is written."""
    from legalft.reporting.fire2026 import submission_lines, validation_problems

    facts = {e.id: e.text for e in examples}
    lines = submission_lines(records, task.label_descriptions, f"{method_name} run", facts)
    problems = validation_problems(list(enumerate(lines, 1)), facts)
    if problems:
        raise UserError(f"the submission for {input_path} would not validate: {'; '.join(problems)}.")
    return lines


def version() -> str:
    from legalft import __version__

    return __version__


def outputs(out: str | None, overwrite: bool, output_format: str = "records",
            run_dir: str | None = None) -> tuple[Path, Path] | None:
    """(the predictions file, its run record) to write, or None for standard output; existing files refused
    unless ``overwrite``, and a file inside the run or export folder ``run_dir`` always (it is read, never written)."""
    if out is None or out == "-":
        return None
    path = Path(out)
    if run_dir is not None and path.absolute().resolve().is_relative_to(Path(run_dir).resolve()):
        raise UserError(f"out={out} is inside {run_dir}, which predict.py reads and never writes (its own "
                        "predictions.jsonl is the run's result): choose an out elsewhere.")
    if path.suffix.lower() not in ((".jsonl",) if output_format == "fire2026" else (".jsonl", ".csv")):
        raise UserError(f"out={out}: end it in .jsonl (JSON Lines)"
                        f"{'' if output_format == 'fire2026' else ' or .csv'}.")
    if path.is_dir():
        raise UserError(f"out={out} is a folder: name a file in it (e.g. {path / 'predictions.jsonl'}).")
    side = path.with_name(path.name + ".run.json")
    existing = [p for p in (path, side) if p.exists()]
    if existing and not overwrite:
        raise UserError(f"out={out}: {existing[0]} exists. Choose another out=..., or set overwrite=true.")
    if not path.parent.is_dir():
        raise UserError(f"out={out}: the folder {path.parent} does not exist. Create it first.")
    from legalft.foundation.io import leftovers_beside

    leftovers_beside(path)
    return path, side


def write(records: list[dict], header: dict, targets, labels, overwrite: bool = False) -> None:
    """The records on standard output, or into ``targets`` whole, replacing a file there only with ``overwrite``:
    one that appeared after the start's check (another command's) is left as it is, and this one is not written."""
    from legalft.foundation.io import atomic_write_json, atomic_write_text

    text = as_csv(records, labels) if targets and targets[0].suffix.lower() == ".csv" else "".join(
        json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    if targets is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        print(f"{header['documents']} documents classified{skipped_said(header)} by {header['run']} (legalft "
              f"{header['legalft']}, config "
              f"{header['config_digest']})", file=sys.stderr)
        return
    path, side = targets
    try:
        atomic_write_text(path, text, replace=overwrite)
    except FileExistsError:
        raise UserError(f"out={path}: a file appeared there while this command ran (another command's, most likely); "
                        "it is left as it is and these predictions are not written. Choose another out=..., or set "
                        "overwrite=true.") from None
    atomic_write_json(side, header)
    print(f"{header['documents']} documents classified{skipped_said(header)}: {path} (the run, the skipped ids and "
          f"how to score: {side})", file=sys.stderr)


def skipped_said(header: dict) -> str:
    skipped = header.get("skipped_empty") or []
    return f", {len(skipped)} empty skipped" if skipped else ""


def as_csv(records: list[dict], labels) -> str:
    """id, the predicted labels joined by "; ", then each label's score; evidence as JSON."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(["id", "prediction", *(f"score {label}" for label in labels), "evidence"])
    for r in records:
        predicted = r["prediction"] if isinstance(r["prediction"], list) else [r["prediction"]]
        writer.writerow([r["id"], "; ".join(p for p in predicted if p), *(r.get("scores", {}).get(label, "")
                                                                          for label in labels),
                         json.dumps(r.get("evidence", {}), ensure_ascii=False) if r.get("evidence") else ""])
    return buffer.getvalue()
