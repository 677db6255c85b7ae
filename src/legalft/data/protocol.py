"""The evaluation protocol (``conf/protocol``): how a run's documents are split, subset, folded and scored,
the same for every data source and method. A data source says where its documents are and what they mean
(``load``: the splits it has); the protocol then carves what a source lacks, in this order: a test split
out of train (``test_fraction``), a validation split out of train (``val_fraction``, for sources whose
train split may lend one: ``validation_from_train``), a stratified subset of train (``train_size``), the
first or a stratified ``limit`` of each test split. Cross-validation (``cv_folds``) is read by the methods
(``legalft.kit.folds``); every split and fold is stratified by label sets (``stratify``) and seeded
(``seed``). Whether a run's final model learns from the validation documents once it has chosen on them is
``refit``'s (``refits``), as scikit-learn's ``GridSearchCV(refit=True)`` refits on everything it may train on."""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, replace

from legalft.data.example import Example, Task
from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)

LIMIT_MODES = ("stratified", "first")


@dataclass(frozen=True)
class Protocol:
    cv_folds: int | None = None
    train_size: int | None = None
    val_fraction: float | None = 0.1
    test_fraction: float | None = None
    limit: int | None = None
    limit_mode: str = "stratified"
    stratify: bool = True
    seed: int = 0
    # auto: a validation share carved out of train (val_fraction) is learnt from once the run has chosen on it; a
    # validation split the data gave stays held out. true: the final model learns from either. false: never.
    refit: str | bool = "auto"

    @classmethod
    def from_config(cls, node) -> Protocol:
        """The protocol a config node (``cfg.protocol``) sets; None or a missing key: its default."""
        if node is None:
            return cls()
        known = cls.__dataclass_fields__
        unknown = sorted(set(node) - set(known))
        if unknown:
            raise UserError(f"protocol.{unknown[0]}: no such setting; the protocol's settings are "
                            f"{', '.join(known)}.")
        protocol = cls(**{key: node[key] for key in node if node[key] is not None or key != "seed"})
        if protocol.limit_mode not in LIMIT_MODES:
            raise UserError(f"protocol.limit_mode={protocol.limit_mode!r}: choose one of {', '.join(LIMIT_MODES)}.")
        if not (isinstance(protocol.refit, bool) or protocol.refit == "auto"):
            raise UserError(f"protocol.refit={protocol.refit!r}: choose auto, true or false.")
        return protocol

    def refits(self, task: Task) -> bool:
        """Whether the final model of ``task`` learns from its validation documents once the run has chosen on
        them (its epoch count, fusion, thresholds, regularisation): ``refit``."""
        if not task.val or self.refit is False:
            return False
        return self.refit is True or task.val_from_train

    def applied(self, tasks: list[Task], validation_from_train: bool) -> list[Task]:
        return [self.apply(task, validation_from_train) for task in tasks]

    def apply(self, task: Task, validation_from_train: bool) -> Task:
        """``task`` as the protocol splits it (the module's docstring says in what order)."""
        from legalft.data.splitting import stratified_split, stratified_subset

        train, val, test = task.train, task.val, task.test
        carved = task.val_from_train
        if test is None and self.test_fraction:
            train, test = stratified_split(train, self.test_fraction, self.seed, "protocol.test_fraction", self.stratify)
            log.info("no test split: %d stratified training examples became the test split", len(test))
        if validation_from_train and not val and self.val_fraction and train:
            train, val = stratified_split(train, self.val_fraction, self.seed, "protocol.val_fraction", self.stratify)
            carved = True
            log.info("no validation split given: %d stratified training examples became validation", len(val))
        if self.train_size is not None:
            train = stratified_subset(train, self.train_size, self.seed, "protocol.train_size", self.stratify)
            log.info("protocol.train_size=%d: training on a stratified subset of the train split", len(train))
        if test is not None and self.limit is not None and self.limit < len(test):
            test = limited(test, self.limit, classified=task.spec.kind == "label", mode=self.limit_mode)
        return replace(task, train=train, val=val, test=test, val_from_train=carved)

    @property
    def whole_test_split(self) -> bool:
        """False for a run scored on ``limit`` rows: not comparable with published results."""
        return self.limit is None


def limited(test: list[Example], limit: int, classified: bool, mode: str = "stratified") -> list[Example]:
    """``limit`` rows of a test split, the same for every run (seed 0, whatever the run's): stratified by
    label where the task classifies, a seeded random draw where answers are open; in the file's order.
    ``mode="first"``: the first rows."""
    if mode == "first":
        return test[:limit]
    if classified:
        from legalft.data.splitting import stratified_subset

        return stratified_subset(test, limit, seed=0, key="protocol.limit")
    return [test[i] for i in sorted(random.Random(0).sample(range(len(test)), limit))]
