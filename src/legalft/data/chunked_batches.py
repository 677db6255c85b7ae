"""Batches of chunked documents for a document classifier, without Lightning (``EncoderDataModule`` serves them in
training; ``predict.py`` on an export reads them directly).

Each batch holds whole documents: all their windows flattened into one padded tensor (padded to the longest window
in the batch, not to ``max_length``), with the number of windows per document so the model can pool them back."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import torch
from torch.utils.data import Dataset

from legalft.data.example import Example, TaskSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EncodedExample:
    index: int  # position in the split's example list
    chunks: list[list[int]]
    target: torch.Tensor  # multi-hot over the label space, or a class index
    # evidence-supervised training: sentences read alone, each with its multi-hot of the sections it is evidence for
    sentences: list[list[int]] = field(default_factory=list)
    sentence_targets: torch.Tensor | None = None

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
        batch = {
            "input_ids": padded["input_ids"],
            "attention_mask": padded["attention_mask"],
            "chunk_counts": torch.tensor([len(item.chunks) for item in items]),
            "targets": torch.stack([item.target for item in items]),
            "index": torch.tensor([item.index for item in items]),
        }
        if any(item.sentences for item in items):
            sentences = self.tokenizer.pad({"input_ids": [s for item in items for s in item.sentences]},
                                           padding="longest", pad_to_multiple_of=self.pad_to_multiple_of,
                                           return_tensors="pt")
            batch["sentence_input_ids"] = sentences["input_ids"]
            batch["sentence_attention_mask"] = sentences["attention_mask"]
            batch["sentence_targets"] = torch.cat([item.sentence_targets for item in items if item.sentences])
        return batch


def padding_fraction(batch: dict[str, torch.Tensor]) -> float:
    mask = batch["attention_mask"]
    return 1.0 - mask.sum().item() / mask.numel()


# A sentence read alone is cut at this many tokens (special tokens included): a few sentences run on for pages.
SENTENCE_TOKENS = 128


def sentence_windows(tokenizer, texts: list[str]) -> list[list[int]]:
    """Each text as one window of at most ``SENTENCE_TOKENS`` tokens."""
    return tokenizer(texts, truncation=True, max_length=SENTENCE_TOKENS)["input_ids"] if texts else []


def encoded_split(examples: list[Example], task: TaskSpec, tokenizer, chunking: dict, name: str,
                  sentences: list[list[tuple[str, tuple[str, ...]]]] | None = None,
                  cache_dir: str | None = None, cache_writes: bool = True) -> EncodedSplit:
    """``examples`` tokenised and cut into windows (``chunking``: max_length, stride, max_chunks, last_window);
    ``sentences``: per example, (sentence, the labels it is evidence for) to train on alone as well; ``cache_dir``:
    where windows are kept between runs (``legalft.data.window_cache``; None: nowhere), read only where
    ``cache_writes`` is false."""
    from legalft.data.window_cache import cached_chunk_documents

    documents, report = cached_chunk_documents(cache_dir, tokenizer, [e.text for e in examples], write=cache_writes,
                                               **chunking)
    log.info("%s split: %s", name, report)
    items = []
    for i, (example, doc) in enumerate(zip(examples, documents)):
        pairs = sentences[i] if sentences else []
        targets = torch.tensor([[float(label in sections) for label in task.labels] for _, sections in pairs]) \
            if pairs else None
        items.append(EncodedExample(index=i, chunks=doc.chunks, target=encode_targets(example, task),
                                    sentences=sentence_windows(tokenizer, [text for text, _ in pairs]),
                                    sentence_targets=targets))
    return EncodedSplit(items)


def by_length(split: EncodedSplit) -> EncodedSplit:
    """Evaluation order does not matter (predictions carry their index): sorted by length, batches pad least."""
    return EncodedSplit(sorted(split.items, key=lambda item: item.n_tokens))
