"""The Lightning datamodule of chunked documents for the encoder classifier (``legalft.data.chunked_batches``):
each split tokenised and chunked once; training batches group documents of similar length in a resumable
order, evaluation batches are sorted by length."""

from __future__ import annotations

import lightning as L
import torch
from torch.utils.data import DataLoader

from legalft.data.batches import ResumableBatches
from legalft.data.chunked_batches import ChunkCollator, EncodedSplit, by_length, encoded_split
from legalft.data.example import Example, TaskSpec


class EncoderDataModule(L.LightningDataModule):
    """Tokenises and chunks each split once; serves length-grouped training batches in a resumable order."""

    def __init__(
        self,
        task: TaskSpec,
        train: list[Example],
        val: list[Example],
        test: list[Example] | None,
        tokenizer,
        max_length: int,
        stride: int,
        max_chunks: int,
        batch_size: int,
        last_window: str = "rest",
        eval_batch_size: int | None = None,
        group_by_length: bool = True,
        num_workers: int = 0,
        seed: int = 0,
        train_sentences: list[list[tuple[str, tuple[str, ...]]]] | None = None,
        cache_dir: str | None = None,
        cache_writes: bool = True,
    ) -> None:
        """``train_sentences``: per training example, (sentence, the labels it is evidence for), read alone in the
        same batches (evidence-supervised training, ``legalft.evaluation.evidence.expert_sentences``); ``cache_dir``:
        where tokenised windows are kept between runs (``legalft.data.window_cache``; None: nowhere); ``cache_writes``:
        false reads that cache and never writes it (predict.py)."""
        super().__init__()
        self.task = task
        self.examples = {"train": train, "val": val, "test": test or []}
        self.tokenizer = tokenizer
        self.chunking = {"max_length": max_length, "stride": stride, "max_chunks": max_chunks,
                         "last_window": last_window}
        self.batch_size = batch_size
        self.eval_batch_size = eval_batch_size or batch_size
        self.group_by_length = group_by_length
        self.num_workers = num_workers
        self.seed = seed
        self.train_sentences = train_sentences
        self.cache_dir, self.cache_writes = cache_dir, cache_writes
        self.collate = ChunkCollator(tokenizer)
        self.splits: dict[str, EncodedSplit] = {}

    def encode(self, split: str) -> EncodedSplit:
        if split not in self.splits:
            self.splits[split] = encoded_split(self.examples[split], self.task, self.tokenizer, self.chunking, split,
                                               self.train_sentences if split == "train" else None, self.cache_dir,
                                               self.cache_writes)
        return self.splits[split]

    def setup(self, stage: str | None = None) -> None:
        for split in ("train", "val") if stage == "fit" else ("val", "test"):
            if self.examples[split]:
                self.encode(split)

    def train_dataloader(self) -> DataLoader:
        data = self.encode("train")
        lengths = [item.n_tokens for item in data.items] if self.group_by_length else None
        return self.loader(data, batch_sampler=ResumableBatches(len(data), self.batch_size, self.seed, lengths))

    def val_dataloader(self) -> DataLoader:
        return self.eval_loader("val")

    def test_dataloader(self) -> DataLoader:
        return self.eval_loader("test")

    def eval_loader(self, split: str) -> DataLoader:
        return self.loader(by_length(self.encode(split)), batch_size=self.eval_batch_size)

    def loader(self, data: EncodedSplit, **batching) -> DataLoader:
        return DataLoader(
            data,
            **batching,
            generator=torch.Generator().manual_seed(self.seed),  # worker seeds, drawn without the global RNG
            collate_fn=self.collate,
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
        )
