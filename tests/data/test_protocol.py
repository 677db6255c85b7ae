"""The evaluation protocol (conf/protocol, legalft.data.protocol): one group that splits, subsets and folds
every source's documents alike; the keys earlier releases kept in the data group still work, and say
where they are now."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from legalft.data.example import Example, Task, TaskSpec
from legalft.data.protocol import Protocol
from legalft.foundation.errors import UserError

SPEC = TaskSpec(name="t", labels=("a", "b", "c"), multi_label=True)


def task(n: int = 60, test: bool = False) -> Task:
    examples = [Example(id=str(i), text=f"text {i}", labels=(("a", "b", "c")[i % 3],)) for i in range(n)]
    return Task(spec=SPEC, train=examples, test=examples[:10] if test else None)


def test_the_same_protocol_splits_every_source_alike_and_only_where_a_source_lacks_a_split():
    protocol = Protocol(val_fraction=0.2, test_fraction=0.25, train_size=20, seed=1)
    (carved,) = protocol.applied([task()], validation_from_train=True)
    assert len(carved.test) == 15 and len(carved.val) == 9 and len(carved.train) == 20
    ids = [e.id for split in (carved.train, carved.val, carved.test) for e in split]
    assert len(ids) == len(set(ids))  # nothing in two splits
    assert protocol.applied([task()], True)[0] == carved  # seeded: the same every time
    (kept,) = protocol.applied([task()], validation_from_train=False)  # LegalBench's train splits lend nothing
    assert kept.val == [] and len(kept.test) == 15


@pytest.mark.parametrize("stratify", [True, False])
def test_folds_are_stratified_unless_the_protocol_says_not(stratify):
    from legalft.evaluation.cross_validation import stratified_folds

    pool = task(30).train
    folds = stratified_folds(pool, 3, seed=0, stratify=stratify)
    assert sorted(i for _, held in folds for i in held) == list(range(30))
    per_fold = [sorted(pool[i].labels[0] for i in held) for _, held in folds]
    if stratify:  # every label 10 times: 3 or 4 of each in every fold
        assert all(3 <= labels.count(label) <= 4 for labels in per_fold for label in "abc")
    assert stratified_folds(pool, 3, seed=0, stratify=stratify) == folds


def test_an_unknown_protocol_key_and_a_bad_limit_mode_are_named():
    with pytest.raises(UserError, match=r"protocol.folds: no such setting; the protocol's settings are cv_folds"):
        Protocol.from_config(OmegaConf.create({"folds": 5}))
    with pytest.raises(UserError, match=r"protocol.limit_mode='last': choose one of stratified, first"):
        Protocol.from_config(OmegaConf.create({"limit_mode": "last"}))
    assert Protocol.from_config(OmegaConf.create({"cv_folds": 5, "seed": 2})) == Protocol(cv_folds=5, seed=2)


def test_a_key_of_an_earlier_release_on_the_command_line_is_read_where_it_is_now(capsys):
    from legalft.runs.migrations import forwarded

    given = ["data=proslex", "data.cv_folds=5", "~data.limit", "data.root=/x", "data.train_size=8,16", "model.lr=1e-3",
             "data.regime=full", "lora.lr=2e-4", "checkpoints.keep_last=true"]
    assert forwarded(given) == ["data=proslex", "protocol.cv_folds=5", "~protocol.limit", "data.root=/x",
                                "protocol.train_size=8,16", "method.lr=1e-3", "method.regime=full", "method.lr=2e-4",
                                "checkpoints.keep_optimizer=true"]
    said = capsys.readouterr().err
    assert "note: data.cv_folds is protocol.cv_folds now (conf/protocol): read as protocol.cv_folds=5" in said
    assert "note: model.lr is method.lr now (conf/method): read as method.lr=1e-3" in said
    assert "note: data.regime is method.regime now (conf/method): read as method.regime=full" in said
    assert said.count("note:") == 7


@pytest.mark.parametrize("added", ["+model.lr=1e-3", "+data.limit=3", "++data.regime=full"])
def test_adding_a_renamed_key_is_refused_naming_its_successor(added):
    """Hydra's advice for a key the config lacks (+key=) would add a key nothing reads."""
    from legalft.runs.migrations import forwarded

    old, _, value = added.lstrip("+").partition("=")
    with pytest.raises(UserError, match=rf"{old.replace('.', '[.]')} is .* now .*adding the old key would be ignored. "
                                        rf"Write (method|protocol)[.]\w+={value}"):
        forwarded(["data=proslex", added])


def test_a_data_key_of_an_earlier_release_in_a_config_names_its_successor():
    from legalft.apps.config_checks import check_config

    cfg = OmegaConf.create({"data": {"_target_": "legalft.data.proslex.ProslexSource", "label_map": {},
                                     "cv_folds": 5}})
    with pytest.raises(UserError, match=r"data.cv_folds: protocol.cv_folds now \(conf/protocol\): set protocol.cv_folds"):
        check_config(cfg)


def test_window_keys_of_an_earlier_release_are_read_from_the_windows_group(capsys):
    """Windows were model.* keys (encoders) and method.* keys (the LLM classifier); SetFit's own
    method.max_length stays its own."""
    from legalft.runs.migrations import forwarded

    assert forwarded(["model.stride=16", "model.max_length=64", "method.max_chunks=2", "method.max_length=32"]) \
        == ["windows.stride=16", "model.max_length=64", "windows.max_chunks=2", "windows.max_length=32"]
    assert forwarded(["method=setfit", "method.max_length=128"]) == ["method=setfit", "method.max_length=128"]
    assert "note: model.stride is windows.stride now (conf/windows): read as windows.stride=16" in capsys.readouterr().err
