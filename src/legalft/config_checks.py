"""Settings checked before a run writes anything: a value of the wrong kind gets one message naming
its key, instead of a traceback from deep inside Lightning or the tokenizer minutes later."""

from __future__ import annotations

from collections.abc import Callable

from omegaconf import DictConfig, OmegaConf

from legalft.errors import UserError

_UNSET = object()


def whole(value, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def whole_or_none(least: int) -> Callable[[object], bool]:
    return lambda value: value is None or whole(value, least)


def one_of(*choices: str) -> Callable[[object], bool]:
    return lambda value: value in choices


def rules() -> list[tuple[str, Callable[[object], bool], str]]:
    from legalft.data.chunking import LAST_WINDOWS
    from legalft.models.components.chunked_classifier import CHUNK_EMBEDDINGS, POOLINGS

    return [
        ("trainer.max_epochs", lambda v: v == -1 or whole(v, 1), "a whole number of epochs, 1 or more (-1: no limit)"),
        ("datamodule.batch_size", lambda v: whole(v, 1), "a whole number, 1 or more"),
        ("model.max_length", lambda v: whole(v, 8), "a whole number of tokens per window, 8 or more"),
        ("model.stride", lambda v: whole(v, 0), "a whole number of tokens, 0 or more"),
        ("model.max_chunks", lambda v: whole(v, 1), "a whole number of windows, 1 or more"),
        ("model.last_window", one_of(*LAST_WINDOWS), f"one of {', '.join(LAST_WINDOWS)}"),
        ("model.pooling", one_of(*POOLINGS), f"one of {', '.join(POOLINGS)}"),
        ("model.chunk_embedding", one_of(*CHUNK_EMBEDDINGS), f"one of {', '.join(CHUNK_EMBEDDINGS)}"),
        ("data.limit", whole_or_none(1), "null (every test row) or a whole number of rows, 1 or more"),
        ("data.train_size", whole_or_none(1), "null (the whole train split) or a whole number of documents, 1 or more"),
        ("data.folds", lambda v: whole(v, 2), "a whole number of folds, 2 or more"),
        ("data.cv_folds", whole_or_none(2), "null (a validation split) or a whole number of folds, 2 or more"),
    ]


def check_config(cfg: DictConfig) -> None:
    """Every rule whose key the config has, then the windows' geometry."""
    for key, valid, requirement in rules():
        value = OmegaConf.select(cfg, key, default=_UNSET)
        if value is not _UNSET and not valid(value):
            raise UserError(f"{key}={value!r}: must be {requirement}.")
    length, stride = OmegaConf.select(cfg, "model.max_length"), OmegaConf.select(cfg, "model.stride")
    if isinstance(length, int) and isinstance(stride, int) and stride >= length - 2:
        raise UserError(f"model.stride={stride} must be smaller than model.max_length={length} minus the window's "
                        "special tokens (2), so that each window adds new tokens; e.g. model.stride="
                        f"{max(length // 4, 0)}.")
