"""Carving a validation split out of train, stratified so rare labels land on both sides."""

from __future__ import annotations

import logging

import numpy as np

from legalft.data.example import Example
from legalft.errors import UserError

log = logging.getLogger(__name__)


def stratified_split(examples: list[Example], fraction: float, seed: int) -> tuple[list[Example], list[Example]]:
    """Split into (kept, held_out), iteratively stratified over the label sets."""
    from iterstrat.ml_stratifiers import MultilabelStratifiedShuffleSplit

    if not 0 < fraction < 1:
        raise UserError(f"data.val_fraction={fraction}: use a fraction strictly between 0 and 1.")
    labels = sorted({label for e in examples for label in e.labels})
    targets = np.array([[label in e.labels for label in labels] for e in examples], dtype=int)
    splitter = MultilabelStratifiedShuffleSplit(n_splits=1, test_size=fraction, random_state=seed)
    kept, held_out = next(splitter.split(np.zeros(len(examples)), targets))
    return [examples[i] for i in sorted(kept)], [examples[i] for i in sorted(held_out)]


def stratified_subset(examples: list[Example], size: int, seed: int, key: str = "data.train_size") -> list[Example]:
    """``size`` examples drawn stratified over the label sets (for data-efficiency studies)."""
    if not 0 < size < len(examples):
        raise UserError(f"{key}={size}: choose between 1 and {len(examples) - 1} (the split has {len(examples)} examples).")
    from iterstrat.ml_stratifiers import MultilabelStratifiedShuffleSplit

    labels = sorted({label for e in examples for label in e.labels})
    targets = np.array([[label in e.labels for label in labels] for e in examples], dtype=int)
    splitter = MultilabelStratifiedShuffleSplit(n_splits=1, train_size=size, test_size=len(examples) - size,
                                                random_state=seed)
    kept, rest = next(splitter.split(np.zeros(len(examples)), targets))
    # iterstrat's split can miss the asked size by an example or two: exactly ``size``, topped up or cut at random
    order = np.random.default_rng(seed).permutation(len(rest))
    kept = list(kept[:size]) + [rest[i] for i in order[: max(size - len(kept), 0)]]
    return [examples[i] for i in sorted(kept)]


def with_validation(train: list[Example], val: list[Example] | None, fraction: float,
                    seed: int) -> tuple[list[Example], list[Example]]:
    """(train, val): ``val`` as given, or, where a source has no validation split, a stratified ``fraction`` of
    ``train`` carved out as one (said in the log)."""
    if val is not None:
        return train, val
    train, val = stratified_split(train, fraction, seed)
    log.info("no validation split given: %d stratified training examples became validation", len(val))
    return train, val
