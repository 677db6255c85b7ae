"""Batches of chunked documents for a document classifier, without Lightning (``EncoderDataModule`` serves them in
training; ``predict.py`` on an export reads them directly).

Each batch holds whole documents: all their windows flattened into one padded tensor (padded to the longest window
in the batch, not to ``max_length``), with the number of windows per document so the model can pool them back."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch
from torch.utils.data import Dataset

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
    if not example.labels:  # a document nobody labelled (predict.py): cross-entropy's ignored index
        return torch.tensor(-100)
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


def encoded_split(examples: list[Example], task: TaskSpec, tokenizer, chunking: dict, name: str) -> EncodedSplit:
    """``examples`` tokenised and cut into windows (``chunking``: max_length, stride, max_chunks, last_window)."""
    documents, report = chunk_documents(tokenizer, [e.text for e in examples], **chunking)
    log.info("%s split: %s", name, report)
    return EncodedSplit([EncodedExample(index=i, chunks=doc.chunks, target=encode_targets(e, task))
                         for i, (e, doc) in enumerate(zip(examples, documents))])


def by_length(split: EncodedSplit) -> EncodedSplit:
    """Evaluation order does not matter (predictions carry their index): sorted by length, batches pad least."""
    return EncodedSplit(sorted(split.items, key=lambda item: item.n_tokens))
