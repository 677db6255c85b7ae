"""LoRA adapters of generative runs: the base model loaded, an adapter created and loaded again, its model card.
How adapter folders are saved, checked and merged is ``legalft.models.adapter_files``'s (the LLM classifier's too)."""

from __future__ import annotations

import logging
from pathlib import Path

from legalft.models.adapter_files import base_model_name, check_base

log = logging.getLogger(__name__)


def load_base(model_cfg, quantize: str | None):
    """The run's base model and tokenizer, 4-bit when ``quantize`` names a QLoRA format."""
    import torch

    from legalft.models.causal_lm import load_causal_lm
    from legalft.models.lora import quantization_config

    compute = "bfloat16" if torch.cuda.is_available() else "float32"
    return load_causal_lm(
        model_cfg.pretrained, dtype=model_cfg.get("dtype", "float32"), pad_token=model_cfg.get("pad_token"),
        quantization_config=quantization_config(quantize, compute) if quantize else None, require_pad=True,
    )


def new_adapter(model_cfg, lora_cfg):
    """(peft model, tokenizer) for one adapter to train."""
    from legalft.models.lora import add_lora, trainable_share

    model, tokenizer = load_base(model_cfg, lora_cfg.quantize)
    model = add_lora(model, lora_cfg.r, lora_cfg.alpha, lora_cfg.dropout, list(lora_cfg.target_modules),
                     model_cfg.get("gradient_checkpointing", False),
                     quantized=lora_cfg.quantize not in (None, "none"))
    log.info("%.2f%% of the model's weights are trainable", 100 * trainable_share(model))
    return model, tokenizer


def load_adapter(model_cfg, lora_cfg, folder: Path, quantize: bool = True):
    """The base model with a saved adapter on top, refusing an adapter trained on another base
    (``quantize=False``: the base in full precision, for merging and export)."""
    from peft import PeftModel

    from legalft.training.checkpoints import refusing_code

    check_base(folder, model_cfg)
    model, tokenizer = load_base(model_cfg, lora_cfg.quantize if quantize else None)
    with refusing_code(folder):  # a pickled adapter_model.bin
        return PeftModel.from_pretrained(model, folder), tokenizer


def model_card(name: str, base: str, tasks: list[str], scores: dict | None = None, data_fingerprint: str | None = None,
               command: str | None = None) -> str:
    """A LoRA adapter's model card, in place of PEFT's blank template: its base, the tasks it was trained on, and
    once the run has scored it, its test scores, the test data's fingerprint and the command that made it.
    ``base_model`` (the hub's metadata) is set only for a hub name."""
    shown_base = base_model_name(base)
    header = ("---\nlibrary_name: peft\n" + (f"base_model: {base}\n" if shown_base == base else "")
              + "tags: [legalft, lora]\n---\n")
    lines = [f"{header}", f"# {name}", "",
             f"A LoRA adapter, trained by legalft (`method=lora`) on the train splits of: {', '.join(tasks)}.", "",
             f"- Base model: {shown_base}", "- Method: lora"]
    if data_fingerprint:
        lines.append(f"- Test data fingerprint: `{data_fingerprint}` (metrics.json `data_fingerprint`)")
    if command:
        lines.append(f"- Made by: `{command}`")
    if scores:
        lines += ["", "## Test scores", "", "| task | metric | score | n |", "| --- | --- | --- | --- |"]
        for task, task_scores in scores.items():
            metric = task_scores.get("metric") or "macro_f1"
            value = task_scores.get(metric)
            shown = f"{value:.3f}" if isinstance(value, float) else "graded by hand"
            lines.append(f"| {task} | {metric} | {shown} | {task_scores.get('n', '')} |")
    lines += ["", "Score it with `python evaluate.py run=<run folder>`, merge it with "
              "`python -m legalft.export run=<run folder> out=<out>`, or load it with "
              "`peft.PeftModel.from_pretrained(base_model, <this folder>)`."]
    return "\n".join(lines) + "\n"


def export_merged(ctx, folder, part: str | None = None):
    """An adapter (``adapter=``, where the run trained several) merged into its base, loaded in full precision
    even for a QLoRA run (a base read from GGUF is dequantised): safetensors, the tokenizer, and
    ``label_spaces.json``, the labels of each task it was trained on."""
    import json

    from legalft.foundation.errors import UserError
    from legalft.kit.base import Exported
    from legalft.models.adapter_files import merge_into

    run = ctx.folder
    run.require(run.adapters, "adapters")
    label_spaces = json.loads(run.require(run.label_spaces, "label spaces").read_text())
    names = sorted(label_spaces) if isinstance(label_spaces, dict) else []
    if part is None and len(names) != 1:
        raise UserError(f"{run.label_spaces} names {len(names)} adapters ({', '.join(names)}): choose one with "
                        "adapter=<name>.")
    name = part or names[0]
    if name not in names:
        raise UserError(f"adapter={name}: the run trained no adapter of that name (it has {', '.join(names)}).")
    model, tokenizer = load_adapter(ctx.model, ctx.lora, run.require(run.adapter(name), f"adapter {name!r}"),
                                    quantize=False)
    merge_into(model, tokenizer, folder)
    record = {"run": str(run.path.resolve()), "adapter": name, "base": str(ctx.model.pretrained),
              "tasks": label_spaces[name]}
    (folder / "label_spaces.json").write_text(json.dumps(record, indent=2) + "\n")
    load = 'from transformers import AutoModelForCausalLM\nmodel = AutoModelForCausalLM.from_pretrained("<this folder>")'
    return Exported(None, None, "transformers", "text-generation", load)
