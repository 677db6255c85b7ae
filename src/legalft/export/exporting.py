"""A finished run exported for use outside this project, with a model card, and optionally pushed to the Hugging Face
Hub (the command: ``legalft.export.command``).

Each method writes its own model (``Method.export``): an encoder run the stock transformers sequence classifier of
its architecture (``legalft.export.hf_export``); a LoRA run an adapter merged into its base; an LLM-classifier run
its merged classifier; a classical run its TF-IDF classifier as plain files (``legalft.models.tfidf``); a SetFit
run setfit's own format. Every export holds ``README.md`` (``legalft.export.card``), and a classifier's
``legalft.json``: the method that wrote it, which reads it back (``legalft.export.reading``), and what its library
does not apply (per-label thresholds, how documents longer than one window are read and pooled, the fusion with the
classical side, the evidence scorer's file), as plain numbers and text. ``out`` is new and appears whole or not at
all; the run folder is only read."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)
FORMAT = 1


def export(run_dir: str, out: str, adapter: str | None = None, command: str | None = None,
           task: str | None = None) -> Path:
    """``out``, new, holding the run's model as its method exports it (``Method.export``); ``adapter`` or ``task``:
    which of the run's models (a LoRA run's adapter, a several-task run's task); ``command``: how the export was
    asked for, for the log."""
    from legalft.foundation.io import atomic_folder, leftovers_beside
    from legalft.models.adapter_files import new_export_folder
    from legalft.runs.context import RunContext
    from legalft.runs.folder import RunFolder
    from legalft.runs.saved_config import recorded_method

    run = RunFolder(run_dir)
    run.require_finished("export it")
    out_path = new_export_folder(out)
    leftovers_beside(out_path)
    method = recorded_method(run)
    ctx = RunContext.for_saved_run(run, {})
    with atomic_folder(out_path, make_parents=True) as partial:
        exported = method.export(ctx, partial, adapter if adapter is not None else task)  # first: one that cannot says so
        record = {}
        if exported.task is not None:  # a classifier: what its decisions need beyond its library
            record = inference_record(ctx, method, exported)
            if exported.evidence is not None:
                (partial / EVIDENCE).write_text(exported.evidence.to_json())
                record["evidence"] = {"file": EVIDENCE, "note": "a sentence scorer per label (vocabulary, idf, "
                                                                "weights): legalft.evaluation.evidence reads it"}
            (partial / RECORD).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
        write_card(partial, ctx, method, exported, record, out_path.name)
    log.info("exported %s to %s%s", run.path, out_path, f" ({command})" if command else "")
    return out_path


RECORD = "legalft.json"
EVIDENCE = "evidence.json"


def inference_record(ctx, method, exported) -> dict:
    """``legalft.json``: what a user of the exported model applies beyond its library, as numbers and text; what
    ``predict.py run=<the export>`` reads (``legalft.export.reading``, through the method it names)."""
    from legalft import __version__

    task = exported.task
    return {"format": FORMAT, "legalft": __version__, "run": str(ctx.folder.path.resolve()), "method": method.name,
            "config_digest": ctx.config_digest, "task": task.name, "multi_label": task.multi_label,
            "labels": list(task.labels), "codes": ctx.label_codes(),
            "descriptions": task.label_descriptions,
            "thresholds": dict(zip(task.labels, map(float, exported.thresholds))),
            "decision": ("each label whose score is at or above its threshold" if task.multi_label
                         else "the label with the highest score"), **exported.record}


def write_card(folder: Path, ctx, method, exported, record: dict, name: str | None = None) -> None:
    """``README.md`` in ``folder`` (the export named ``name``, else the folder's name); ``record``: the export's
    ``legalft.json`` (empty for a merged LoRA export, which has none)."""
    from legalft.models.adapter_files import hub_id
    from legalft.export.card import CardFacts, card, read_json, training_counts
    from legalft.foundation.registry import source_of_target

    run = ctx.folder
    results = read_json(run.metrics)
    task_name = record.get("task") or next(iter(results.get("tasks", {})), "?")
    try:
        counts = training_counts(ctx.tasks(), task_name)
    except UserError as err:  # the training data moved: the card says so
        log.warning("training documents per label left out of the card: %s", err)
        counts = {}
    data = ctx.data or {}
    source = source_of_target(data.get("_target_"))
    pretrained = str(ctx.model.pretrained) if ctx.model is not None and "pretrained" in ctx.model else None
    notes = [record[key]["note"] for key in ("windows", "fusion") if key in record]
    facts = CardFacts(
        name=name or folder.name, method=method.name, model=str(results.get("run", {}).get("model", "?")),
        base_model=hub_id(pretrained) if pretrained else None,
        data=str(data.get("name", "data")), license=getattr(source, "license", "unknown"), task=task_name,
        labels=record.get("labels", []), multi_label=bool(record.get("multi_label")),
        library_name=exported.library_name, pipeline_tag=exported.pipeline_tag, load=exported.load,
        descriptions=record.get("descriptions", {}), codes=record.get("codes", {}),
        thresholds=record.get("thresholds", {}), training_counts=counts, run=results.get("run", {}),
        test=results.get("tasks", {}).get(task_name, {}), cv=read_json(run.path / "cv.json").get(task_name, {}),
        notes=notes)
    (folder / "README.md").write_text(card(facts))


def push(folder: Path, repo_id: str | None, private: bool = True, token: str | None = None) -> str:
    """Upload ``folder`` to the Hub repository ``repo_id`` (created, private unless ``private=False``); the Hub out of
    reach, or a token it refuses, is one message each, naming how to retry the push alone."""
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    check_repo_id(repo_id)
    retry = f"push it later with python -m legalft.export out={folder} push_to_hub=true hub.repo_id={repo_id}"
    if token is None and get_token() is None:
        raise UserError(f"push_to_hub=true: no Hugging Face token. Log in (hf auth login) or set HF_TOKEN, then {retry} "
                        "(the export is on disk).")
    api = HfApi(token=token)
    try:
        url = api.create_repo(repo_id, private=private, exist_ok=True)
        api.upload_folder(folder_path=str(folder), repo_id=repo_id, commit_message="legalft export")
    except OfflineModeIsEnabled:
        raise UserError(f"push_to_hub=true: the Hub is switched off here (HF_HUB_OFFLINE=1); {retry} where it can be "
                        "reached.") from None
    except HfHubHTTPError as err:
        status = getattr(err.response, "status_code", None)
        if status in (401, 403):
            raise UserError(f"push_to_hub=true: the Hub refused the token for {repo_id} ({status}): log in with an "
                            f"account that may write there (hf auth login), then {retry}.") from None
        raise UserError(f"push_to_hub=true: the Hub answered {status or 'with an error'} "
                        f"({str(err).splitlines()[0][:200]}); {retry}.") from None
    except OSError as err:  # the network: a connection refused, a name that does not resolve, a timeout
        raise UserError(f"push_to_hub=true: the Hub cannot be reached ({type(err).__name__}); {retry}.") from None
    return str(url)


def existing_export(out: str) -> Path:
    """The export folder ``out`` already holds, to push alone."""
    folder = Path(out)
    if not (folder / "README.md").is_file():
        raise UserError(f"out={out}: not an export this project wrote (no README.md card); export a run into it "
                        "first: python -m legalft.export run=checkpoints/<run> out=...")
    return folder


def check_repo_id(repo_id: str | None) -> None:
    """A repository id the Hub takes (``<user or organisation>/<name>``), refused before anything is exported."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if not repo_id:
        raise UserError("push_to_hub=true: name the repository with hub.repo_id=<user or organisation>/<name>.")
    try:
        validate_repo_id(str(repo_id))
        if str(repo_id).count("/") != 1:
            raise HFValidationError("it must be <user or organisation>/<name>")
    except HFValidationError as err:
        raise UserError(f"hub.repo_id={repo_id!r} is not a Hub repository id ({str(err).splitlines()[0][:160]}): "
                        "write <user or organisation>/<name>, e.g. me/statutes. Nothing was exported.") from None
