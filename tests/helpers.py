"""What several test files share beside the fixtures of conftest.py: a fast tiny-model recipe, reading JSON Lines,
composing a config as train.py does, documents to classify and a run folder's digest, a two-label LegalBench task,
an offline W&B run's records."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import open_dict

from conftest import ROOT, write_legalbench_task

CONF = ROOT / "conf"



FAST_MODEL = ["model.max_length=64", "windows.stride=16", "windows.max_chunks=16", "method.lr=3e-3", "method.head_lr=3e-3"]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def compose_train(overrides: list[str], tmp_path, config_name: str = "train"):
    from legalft.configuration.resolvers import register_resolvers

    register_resolvers()  # what the entry points do before Hydra composes: ${package_path:...} and the others
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name, overrides=overrides, return_hydra_config=True)
    from hydra.core.hydra_config import HydraConfig

    HydraConfig.instance().set_config(cfg)
    with open_dict(cfg):
        cfg.paths.root_dir = str(ROOT)
        cfg.paths.output_dir = str(tmp_path)
        del cfg.hydra
    return cfg


CASES = [("c1", "The accused and his men, armed with lathis, formed an unlawful assembly and attacked the village."),
         ("c2", "The husband and his mother demanded dowry and subjected the wife to cruelty for years."),
         ("c3", "He induced the complainant to pay for land he did not own and cheated him of the money.")]


def folder_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def read_only(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def write_two_label_task(root):
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\t{'a hearsay statement' if i % 2 else 'a plain fact'} {i}\n"
                   for i in range(16))
    tests = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\t{'a hearsay statement' if i % 2 else 'a plain fact'} {i}\n"
                    for i in range(40, 52))
    write_legalbench_task(root, "hearsay", "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + tests)


def wandb_records(run_dir: Path):
    """The records of the offline W&B run in ``run_dir``: its ``.wandb`` file is a LevelDB-style log of
    protobuf records (32 KiB blocks, 7-byte record headers) after a 7-byte file header."""
    import struct

    from wandb.proto import wandb_internal_pb2

    (path,) = run_dir.glob("wandb/offline-run-*/run-*.wandb")
    data, pos, block, pending = path.read_bytes(), 7, 32768, b""
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _checksum, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        pending = chunk if kind in (1, 2) else pending + chunk  # full / first, else middle / last
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record
