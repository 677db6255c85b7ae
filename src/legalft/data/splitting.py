"""Carving a split or a subset out of another, stratified over label sets so rare labels land on both sides
(``legalft.data.protocol`` applies them)."""

from __future__ import annotations

import numpy as np

from legalft.data.example import Example
from legalft.foundation.errors import UserError


def shuffle_splitter(stratify: bool, **sizes):
    """One seeded shuffle split: iteratively stratified over the label sets, or, ``stratify=False``, plain."""
    if stratify:
        from iterstrat.ml_stratifiers import MultilabelStratifiedShuffleSplit

        return MultilabelStratifiedShuffleSplit(n_splits=1, **sizes)
    from sklearn.model_selection import ShuffleSplit

    return ShuffleSplit(n_splits=1, **sizes)


def label_targets(examples: list[Example]) -> np.ndarray:
    labels = sorted({label for e in examples for label in e.labels})
    return np.array([[label in e.labels for label in labels] for e in examples], dtype=int)


def stratified_split(examples: list[Example], fraction: float, seed: int, key: str = "protocol.val_fraction",
                     stratify: bool = True) -> tuple[list[Example], list[Example]]:
    """Split into (kept, held_out), iteratively stratified over the label sets."""
    if not 0 < fraction < 1:
        raise UserError(f"{key}={fraction}: use a fraction strictly between 0 and 1.")
    splitter = shuffle_splitter(stratify, test_size=fraction, random_state=seed)
    kept, held_out = next(splitter.split(np.zeros(len(examples)), label_targets(examples)))
    return [examples[i] for i in sorted(kept)], [examples[i] for i in sorted(held_out)]


def stratified_subset(examples: list[Example], size: int, seed: int, key: str = "protocol.train_size",
                      stratify: bool = True) -> list[Example]:
    """``size`` examples drawn stratified over the label sets (for data-efficiency studies)."""
    if not 0 < size < len(examples):
        raise UserError(f"{key}={size}: choose between 1 and {len(examples) - 1} (the split has {len(examples)} examples).")
    splitter = shuffle_splitter(stratify, train_size=size, test_size=len(examples) - size, random_state=seed)
    kept, rest = next(splitter.split(np.zeros(len(examples)), label_targets(examples)))
    # iterstrat's split can miss the asked size by an example or two: exactly ``size``, topped up or cut at random
    order = np.random.default_rng(seed).permutation(len(rest))
    kept = list(kept[:size]) + [rest[i] for i in order[: max(size - len(kept), 0)]]
    return [examples[i] for i in sorted(kept)]


def check_disjoint(splits: dict[str, list[Example]]) -> None:
    """Refuse document ids shared between splits: that is train/test leakage."""
    seen: dict[str, str] = {}
    for split, examples in splits.items():
        for example in examples:
            if example.id in seen and seen[example.id] != split:
                raise UserError(
                    f"document {example.id!r} is in both the {seen[example.id]} and the {split} split "
                    f"({example.meta.get('source_file', '?')}): remove it from one of them."
                )
            seen[example.id] = split
