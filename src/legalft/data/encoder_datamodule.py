"""Batches of chunked documents for the encoder classifier.

Each batch holds whole documents: all their windows flattened into one padded tensor (padded to
the longest window in the batch, not to ``max_length``), with the number of windows per document
so the model can pool them back. Training batches group documents of similar length.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

from legalft.data.batches import ResumableBatches
from legalft.data.chunking import chunk_documents
from legalft.data.example import Example, TaskSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EncodedExample:
    index: int  # position in the split's example list
    chunks: list[list[int]]
    target: torch.Tensor  # multi-hot over the label space, or a class index

    @property
    def n_tokens(self) -> int:
        return sum(len(c) for c in self.chunks)


class EncodedSplit(Dataset):
    def __init__(self, items: list[EncodedExample]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> EncodedExample:
        return self.items[i]


def encode_targets(example: Example, task: TaskSpec) -> torch.Tensor:
    if task.multi_label:
        return torch.tensor([float(label in example.labels) for label in task.labels])
    return torch.tensor(task.labels.index(example.labels[0]))


class ChunkCollator:
    def __init__(self, tokenizer, pad_to_multiple_of: int | None = 8) -> None:
        self.tokenizer = tokenizer
        self.pad_to_multiple_of = pad_to_multiple_of

    def __call__(self, items: list[EncodedExample]) -> dict[str, torch.Tensor]:
        padded = self.tokenizer.pad(
            {"input_ids": [chunk for item in items for chunk in item.chunks]},
            padding="longest",
            pad_to_multiple_of=self.pad_to_multiple_of,
            return_tensors="pt",
        )
        return {
            "input_ids": padded["input_ids"],
            "attention_mask": padded["attention_mask"],
            "chunk_counts": torch.tensor([len(item.chunks) for item in items]),
            "targets": torch.stack([item.target for item in items]),
            "index": torch.tensor([item.index for item in items]),
        }


def padding_fraction(batch: dict[str, torch.Tensor]) -> float:
    mask = batch["attention_mask"]
    return 1.0 - mask.sum().item() / mask.numel()


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
    ) -> None:
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
        self.collate = ChunkCollator(tokenizer)
        self.splits: dict[str, EncodedSplit] = {}

    def encode(self, split: str) -> EncodedSplit:
        if split not in self.splits:
            examples = self.examples[split]
            documents, report = chunk_documents(self.tokenizer, [e.text for e in examples], **self.chunking)
            log.info("%s split: %s", split, report)
            self.splits[split] = EncodedSplit(
                [
                    EncodedExample(index=i, chunks=doc.chunks, target=encode_targets(e, self.task))
                    for i, (e, doc) in enumerate(zip(examples, documents))
                ]
            )
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
        # Evaluation order does not matter (predictions carry their index): sort by length to pad least.
        data = self.encode(split)
        ordered = EncodedSplit(sorted(data.items, key=lambda item: item.n_tokens))
        return self.loader(ordered, batch_size=self.eval_batch_size)

    def loader(self, data: EncodedSplit, **batching) -> DataLoader:
        return DataLoader(
            data,
            **batching,
            generator=torch.Generator().manual_seed(self.seed),  # worker seeds, drawn without the global RNG
            collate_fn=self.collate,
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
        )
