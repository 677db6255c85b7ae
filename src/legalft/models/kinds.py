"""What kind of model a ``model`` config is (its ``kind`` key), which decides what a method can do with it:
an ``encoder`` classifier is fine-tuned (method=encoder) or embeds (SetFit, kNN prompts); a ``causal_lm``
is prompted or LoRA-tuned; an ``api`` model is only a name a server answers under."""

from __future__ import annotations

from collections.abc import Mapping

ENCODER, CAUSAL_LM, API = "encoder", "causal_lm", "api"
KINDS = (ENCODER, CAUSAL_LM, API)


def kind_of(model: Mapping | None) -> str | None:
    """A model config's kind; configs saved before models said it: an encoder where the config builds a
    classifier (``_target_``), a causal LM otherwise."""
    if model is None:
        return None
    if model.get("kind") is not None:
        return str(model.get("kind"))
    return ENCODER if "_target_" in model else CAUSAL_LM
