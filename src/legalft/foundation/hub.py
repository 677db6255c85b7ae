"""Asking the Hugging Face Hub for a model, with one clear message, at once, when it cannot answer."""

from __future__ import annotations

import functools
from pathlib import Path

from legalft.foundation.errors import UserError

HUB_TIMEOUT_S = 3.0


def not_found(name: str, key: str, err: Exception) -> UserError:
    if Path(name).exists():
        return UserError(f"{key}: {name} exists but could not be loaded ({err}).")
    return UserError(
        f"{key}: could not load {name!r}: it is not a local folder and the Hugging Face Hub could not "
        f"provide it{' (the hub is unreachable from here, and the model is not in the local cache)' if hub_unreachable() else ''}. With internet, run `hf download {name}` once (or leave HF_HUB_OFFLINE unset); "
        f"offline, set {key} to a folder holding the model{', or use model=minilm' if key.startswith('model.') else ''}."
    )


@functools.cache
def hub_unreachable() -> bool:
    """Whether the Hugging Face Hub cannot be asked: ``HF_HUB_OFFLINE`` is set, or no connection (name
    lookup included) within a few seconds. Without this check an offline machine waits out the hub
    client's retries, about a minute, before the message saying the model is not there."""
    import socket
    from concurrent.futures import ThreadPoolExecutor
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return True
    endpoint = urlparse(constants.ENDPOINT)
    address = (endpoint.hostname, endpoint.port or (443 if endpoint.scheme == "https" else 80))

    def connect() -> None:
        socket.create_connection(address, timeout=HUB_TIMEOUT_S).close()

    pool = ThreadPoolExecutor(max_workers=1)  # a name lookup has no timeout of its own
    try:
        pool.submit(connect).result(timeout=HUB_TIMEOUT_S)
        return False
    except Exception:  # OSError, or the lookup still hanging
        return True
    finally:
        pool.shutdown(wait=False)


def hub_options(name: str) -> dict:
    """``from_pretrained`` keywords: a hub name read from the local cache alone when the hub is unreachable."""
    return {"local_files_only": True} if not Path(name).exists() and hub_unreachable() else {}


def load_config(name: str, key: str):
    """A model's ``config.json`` (a hub name or a local folder): the cheap check that the model is there."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(name, **hub_options(name))
    except (OSError, ValueError) as err:
        raise not_found(name, key, err) from None
