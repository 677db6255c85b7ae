"""Training batches whose order is a function of (seed, epoch) alone.

A run resumed in the middle of an epoch (after preemption or a time limit) must see the same
batches, in the same order, as a run that was never stopped: the order cannot come from the
global random state, which differs after a restart. The sampler also shards batches across
distributed ranks itself, so Lightning must not wrap it (``use_distributed_sampler: false``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from torch.utils.data import Sampler


class ResumableBatches(Sampler[list[int]]):
    def __init__(self, n_items: int, batch_size: int, seed: int, lengths: Sequence[int] | None = None) -> None:
        self.n_items, self.batch_size, self.seed = n_items, batch_size, seed
        self.lengths = list(lengths) if lengths is not None else None  # set: batches of similar length
        self.epoch = 0
        self.skip = 0  # batches of the current epoch already trained on (set when resuming)

    def set_epoch(self, epoch: int) -> None:  # Lightning calls this at the start of every epoch
        self.epoch = epoch

    def epoch_batches(self) -> list[list[int]]:
        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        if self.lengths is not None:
            from transformers.trainer_pt_utils import get_length_grouped_indices

            order = get_length_grouped_indices(self.lengths, self.batch_size, generator=generator)
        else:
            order = torch.randperm(self.n_items, generator=generator).tolist()
        batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        rank, world = _rank_and_world()
        per_rank = len(batches) // world if world > 1 else len(batches)
        return batches[rank::world][:per_rank]  # every rank takes as many steps as the others

    def __iter__(self) -> Iterator[list[int]]:
        skip, self.skip = self.skip, 0
        yield from self.epoch_batches()[skip:]

    def __len__(self) -> int:
        rank, world = _rank_and_world()
        batches = -(-self.n_items // self.batch_size)
        return batches // world if world > 1 else batches


def _rank_and_world() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1
