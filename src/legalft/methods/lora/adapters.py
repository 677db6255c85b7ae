"""Loading the base model, creating, saving and loading adapters."""

from __future__ import annotations

import json
import logging
from contextlib import nullcontext
from pathlib import Path

from legalft.errors import UserError
from legalft.io import atomic_write_text, make_folders

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


def check_base(folder: Path, model_cfg) -> None:
    """Refuses an adapter trained on another base than the config's ``model.pretrained``."""
    from legalft.models.causal_lm import hub_source

    saved_base = json.loads((folder / "adapter_config.json").read_text()).get("base_model_name_or_path")
    expected = hub_source(str(model_cfg.pretrained))[0]
    if saved_base and saved_base != expected:
        raise UserError(f"{folder}: this adapter was trained on {saved_base!r}, but the config's model.pretrained "
                        f"is {expected!r}: set model.pretrained to the adapter's base.")


def load_adapter(model_cfg, lora_cfg, folder: Path, quantize: bool = True):
    """The base model with a saved adapter on top, refusing an adapter trained on another base
    (``quantize=False``: the base in full precision, for merging and export)."""
    from peft import PeftModel

    from legalft.checkpoint_io import refusing_code

    check_base(folder, model_cfg)
    model, tokenizer = load_base(model_cfg, lora_cfg.quantize if quantize else None)
    with refusing_code(folder):  # a pickled adapter_model.bin
        return PeftModel.from_pretrained(model, folder), tokenizer


def new_export_folder(out: str) -> Path:
    """``out`` as the folder an export will create, refused when it exists (nothing is overwritten)."""
    out_path = Path(out)
    if out_path.exists():
        raise UserError(f"{out_path} exists: choose a new folder (nothing was overwritten).")
    return out_path


def save_merged(model, tokenizer, out_path: Path, files: dict[str, str], problem_type: str | None = None) -> Path:
    """``model``'s adapters (on a base loaded in full precision) merged into it and saved as safetensors with
    the tokenizer and ``files`` (name -> text) in ``out_path``, which appears whole or not at all.
    ``problem_type``: how a classifier's logits become probabilities (transformers' loss, vLLM's sigmoid or
    softmax)."""
    from legalft.io import atomic_folder
    from legalft.models.causal_lm import without_gguf_quantizer

    merged = without_gguf_quantizer(model.merge_and_unload())
    if problem_type is not None:
        merged.config.problem_type = problem_type
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_folder(out_path) as partial:
        merged.save_pretrained(partial, safe_serialization=True)
        tokenizer.save_pretrained(partial)
        for name, text in files.items():
            (partial / name).write_text(text)
    return out_path


def gathered_adapter(trainer, model):
    """ZeRO-3 leaves each rank a shard of every weight: gather the adapter's whole before saving it."""
    from lightning.pytorch.strategies import DeepSpeedStrategy

    if isinstance(trainer.strategy, DeepSpeedStrategy) and trainer.strategy.zero_stage_3:
        import deepspeed

        return deepspeed.zero.GatheredParameters([p for p in model.parameters() if p.requires_grad])
    return nullcontext()


def save_adapter(trainer, model, tokenizer, folder: Path, card: str) -> None:
    """The adapter (peft's format: its weights, and a head peft trains in full), the tokenizer and the model
    card ``card``, written by rank 0 into ``folder``, this command's own."""
    with gathered_adapter(trainer, model):
        if trainer.is_global_zero:
            make_folders(folder)  # this command's own: its card is completed once the run has scored
            model.save_pretrained(folder)  # the adapter's weights only
            tokenizer.save_pretrained(folder)
            atomic_write_text(folder / "README.md", card)
    trainer.strategy.barrier()


def base_model_name(base: str) -> str:
    """How a card names the base: its hub name, or "local GGUF file <name>" / "local folder <name>" (a
    path means nothing on another machine)."""
    path = Path(base)
    if path.is_file() or base.endswith(".gguf"):
        return f"local GGUF file {path.name}"
    if path.exists() or base.startswith(("/", ".")):
        return f"local folder {path.name}"
    return base


def model_card(name: str, base: str, tasks: list[str], scores: dict | None = None, data_fingerprint: str | None = None,
               command: str | None = None, merged: bool = False) -> str:
    """A LoRA adapter's (or a merged model's) model card, in place of PEFT's blank template: its base, the
    tasks it was trained on, and once the run has scored it, its test scores, the test data's fingerprint
    and the command that made it. ``base_model`` (the hub's metadata) is set only for a hub name."""
    shown_base = base_model_name(base)
    header = ("---\n" + ("library_name: transformers\n" if merged else "library_name: peft\n")
              + (f"base_model: {base}\n" if shown_base == base else "") + "tags: [legalft, lora]\n---\n")
    what = (f"`{name}` merged into its base model" if merged else "A LoRA adapter")
    lines = [f"{header}", f"# {name}", "",
             f"{what}, trained by legalft (`method=lora`) on the train splits of: {', '.join(tasks)}.", "",
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
    if merged:
        lines += ["", "Load it with `transformers.AutoModelForCausalLM.from_pretrained(<this folder>)`; "
                  "`label_spaces.json` holds each task's labels."]
    else:
        lines += ["", "Score it with `python evaluate.py run=<run folder>`, merge it with "
                  "`python -m legalft.export_adapter <run folder> <out>`, or load it with "
                  "`peft.PeftModel.from_pretrained(base_model, <this folder>)`."]
    return "\n".join(lines) + "\n"
