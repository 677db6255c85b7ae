"""Long documents as overlapping windows, so a 512-token encoder sees past its first 512 tokens."""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChunkedDocument:
    chunks: list[list[int]]  # token ids of each window, special tokens included
    n_tokens: int  # tokens in the whole document, without special tokens
    n_cut: int  # tokens past the last kept window


@dataclass(frozen=True)
class ChunkingReport:
    documents: int
    documents_cut: int
    tokens: int
    tokens_cut: int

    def __str__(self) -> str:
        share = self.tokens_cut / max(self.tokens, 1)
        return (
            f"{self.documents_cut} of {self.documents} documents longer than the kept windows; "
            f"{self.tokens_cut} of {self.tokens} tokens ({share:.1%}) cut"
        )


def chunk_documents(
    tokenizer, texts: list[str], max_length: int, stride: int, max_chunks: int
) -> tuple[list[ChunkedDocument], ChunkingReport]:
    """Split each text into windows of ``max_length`` tokens overlapping by ``stride``.

    The windows come from the fast tokenizer's own overflow handling. At most ``max_chunks``
    windows are kept per document; what lies beyond them is counted, never dropped unseen.
    """
    if stride >= max_length - 2:
        raise ValueError(f"chunk stride {stride} must be smaller than max_length {max_length} minus special tokens")
    windows = tokenizer(
        texts,
        truncation=True,
        max_length=max_length,
        stride=stride,
        return_overflowing_tokens=True,
        add_special_tokens=True,
    )
    per_doc: list[list[list[int]]] = [[] for _ in texts]
    for ids, doc_index in zip(windows["input_ids"], windows["overflow_to_sample_mapping"]):
        per_doc[doc_index].append(ids)
    lengths = [len(ids) for ids in tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]]
    specials = tokenizer.num_special_tokens_to_add(pair=False)
    step = max_length - specials - stride  # new tokens each window adds
    documents = []
    for chunks, n_tokens in zip(per_doc, lengths):
        kept = chunks[:max_chunks]
        covered = min(n_tokens, (max_length - specials) + step * (len(kept) - 1))
        documents.append(ChunkedDocument(chunks=kept, n_tokens=n_tokens, n_cut=n_tokens - covered))
    report = ChunkingReport(
        documents=len(documents),
        documents_cut=sum(d.n_cut > 0 for d in documents),
        tokens=sum(lengths),
        tokens_cut=sum(d.n_cut for d in documents),
    )
    return documents, report
