"""A LoRA run's adapter merged into its base model and exported (safetensors, tokenizer, and
``label_spaces.json``: the label space of each task the adapter was trained on); an LLM-classifier run's
merged classifier. ``legalft.export`` calls it for those runs.

The base is loaded in full precision even for QLoRA runs, so the merged weights are not 4-bit.
A base loaded from GGUF is already dequantised; its quantizer record is dropped so that
transformers agrees to save it.
"""

from __future__ import annotations

import json
from pathlib import Path

from legalft.errors import UserError
from legalft.runs.folder import RunFolder


def export(run_dir: str, out: str, adapter: str | None = None, command: str | None = None) -> Path:
    """The run's model merged and exported the way its method says (``Method.export_merged``), else as LoRA
    adapters are."""
    from legalft import registry
    from legalft.runs.saved_config import load_run_config

    method = registry.method_of_target(load_run_config(RunFolder(run_dir)).method.get("_target_"))
    own = getattr(method, "export_merged", None)
    if own is None:
        return export_merged(run_dir, out, adapter, command)
    if adapter is not None:
        raise UserError(f"--adapter {adapter!r}: a {method.name} run holds one model; leave --adapter out.")
    return own(run_dir, out)


def export_merged(run_dir: str, out: str, adapter: str | None = None, command: str | None = None) -> Path:
    """``command``: how the export was asked for, for the merged model's card."""
    from legalft.methods.lora.adapters import load_adapter
    from legalft.models.adapter_files import new_export_folder, save_merged
    from legalft.runs.saved_config import load_run_config

    run = RunFolder(run_dir)
    out_path = new_export_folder(out)
    cfg = load_run_config(run)
    run.require(run.adapters, "adapters")
    label_spaces = json.loads(run.require(run.label_spaces, "label spaces").read_text())
    names = sorted(label_spaces) if isinstance(label_spaces, dict) else []
    if adapter is None and len(names) != 1:
        raise UserError(f"{run.label_spaces} names {len(names)} adapters ({', '.join(names)}): choose one with --adapter.")
    name = adapter or names[0]
    if name not in names:
        raise UserError(f"--adapter {name!r}: the run trained no adapter of that name (it has {', '.join(names)}).")
    folder = run.require(run.adapter(name), f"adapter {name!r}")
    model, tokenizer = load_adapter(cfg.model, cfg.lora, folder, quantize=False)
    record = {"run": str(run.path), "adapter": name, "base": str(cfg.model.pretrained), "tasks": label_spaces[name]}
    return save_merged(model, tokenizer, out_path, {
        "label_spaces.json": json.dumps(record, indent=2) + "\n",
        "README.md": merged_model_card(run, name, str(cfg.model.pretrained), list(label_spaces[name]), command)})


def merged_model_card(run: RunFolder, name: str, base: str, tasks: list[str], command: str | None) -> str:
    """The merged model's card: the adapter's, with the run's test scores for its tasks and the command."""
    from legalft.methods.lora.adapters import model_card

    try:
        results = json.loads(run.metrics.read_text())
        scores = {t: s for t, s in results["tasks"].items() if s.get("adapter") == name}
        fingerprint = results["run"].get("data_fingerprint")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        scores, fingerprint = {}, None  # a run not scored yet: the card says what it was trained on
    return model_card(name, base, tasks, scores, fingerprint, command, merged=True)
