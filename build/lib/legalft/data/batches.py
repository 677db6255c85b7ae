"""Training batches whose order is a function of (seed, epoch) alone.

A run resumed in the middle of an epoch (after preemption or a time limit) must see the same
batches, in the same order, as a run that was never stopped: the order cannot come from the
global random state, which differs after a restart.

The sampler also shards the epoch across distributed ranks itself, so Lightning must not wrap it
(``use_distributed_sampler: false``). It orders and cuts *global* batches (``batch_size`` x the
number of ranks, as Lightning's per-device ``batch_size`` implies) and gives each rank its slice
of every global batch: a step over N ranks sees exactly the examples one rank would see with N
times the batch size, so the run's result does not depend on how many ranks it was spread over.
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

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    @property
    def sampler(self) -> "ResumableBatches":
        """Lightning calls ``set_epoch`` at the start of every epoch on a DataLoader's ``sampler`` and on its
        ``batch_sampler.sampler``, never on the batch sampler itself: without this, every epoch would
        repeat the first epoch's order."""
        return self

    def global_batches(self, world: int) -> list[list[int]]:
        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        size = self.batch_size * world
        if self.lengths is not None:
            from transformers.trainer_pt_utils import get_length_grouped_indices

            order = get_length_grouped_indices(self.lengths, size, generator=generator)
        else:
            order = torch.randperm(self.n_items, generator=generator).tolist()
        batches = [order[i : i + size] for i in range(0, len(order), size)]
        if batches and len(batches[-1]) < world:
            batches.pop()  # too few left for every rank to take a step (all ranks must step together)
        return batches

    def epoch_batches(self) -> list[list[int]]:
        rank, world = _rank_and_world()
        # The last global batch may be short: its examples are spread as evenly as the ranks allow.
        return [batch[rank::world] for batch in self.global_batches(world)]

    def __iter__(self) -> Iterator[list[int]]:
        skip, self.skip = self.skip, 0
        yield from self.epoch_batches()[skip:]

    def __len__(self) -> int:
        _, world = _rank_and_world()
        size = self.batch_size * world
        full, rest = divmod(self.n_items, size)
        return full + (rest >= world)


def _rank_and_world() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1
