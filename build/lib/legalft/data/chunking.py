"""Long documents as overlapping windows, so a 512-token encoder sees past its first 512 tokens."""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChunkedDocument:
    chunks: list[list[int]]  # token ids of each window, special tokens included
    n_tokens: int  # tokens in the whole document, without special tokens (estimated when cut)
    n_cut: int  # tokens past the last kept window (estimated)


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


# Characters per token a first look at a document assumes (English legal text runs about 4-5 with
# WordPiece); a document whose prefix of that length holds too few tokens is looked at again, twice as long.
CHARS_PER_TOKEN_GUESS = 8


def kept_prefix(tokenizer, text: str, budget: int) -> tuple[str, int]:
    """(the part of ``text`` the kept windows can hold, the document's length in tokens). Only a prefix
    a little longer than ``budget`` tokens is tokenized, so a 30 MB document costs what a long one does;
    the length of a document cut short is estimated from the characters past the cut."""
    chars = budget * CHARS_PER_TOKEN_GUESS
    while True:
        prefix = text[:chars]
        offsets = tokenizer(prefix, add_special_tokens=False, return_offsets_mapping=True,
                            verbose=False)["offset_mapping"]
        if len(offsets) > budget + 1 or len(prefix) == len(text):
            break
        chars *= 2
    if len(offsets) <= budget:
        return text, len(offsets)
    # cut where token budget+1 starts; the last prefix token may be a word cut in two, so it is never counted
    cut = offsets[budget][0]
    per_char = budget / max(cut, 1)
    return text[:cut], budget + round((len(text) - cut) * per_char)


LAST_WINDOWS = ("end", "rest")


def special_token_layout(tokenizer) -> tuple[int, int]:
    """How many special tokens a window starts and ends with ([CLS] ... [SEP]: 1 and 1)."""
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a")["input_ids"]
    lead = next(i for i in range(len(full)) if full[i : i + len(plain)] == plain)
    return lead, len(full) - lead - len(plain)


def end_aligned(chunks: list[list[int]], stride: int, content_length: int, layout: tuple[int, int]) -> list[int]:
    """A full last window ending at the document's end: the tokenizer's windows put back together
    (each repeats the ``stride`` last tokens of the one before), the last ``content_length`` taken."""
    lead, trail = layout
    bodies = [ids[lead : len(ids) - trail] for ids in chunks]
    document = bodies[0] + [t for body in bodies[1:] for t in body[stride:]]
    last = chunks[-1]
    return last[:lead] + document[-content_length:] + last[len(last) - trail :]


def chunk_documents(
    tokenizer, texts: list[str], max_length: int, stride: int, max_chunks: int, last_window: str = "rest"
) -> tuple[list[ChunkedDocument], ChunkingReport]:
    """Split each text into windows of ``max_length`` tokens overlapping by ``stride``.

    The windows come from the fast tokenizer's own overflow handling. At most ``max_chunks``
    windows are kept per document; what lies beyond them is counted (estimated: it is never
    tokenized), never dropped unseen. ``last_window``: ``rest`` keeps the tokenizer's last window,
    what is left of the document, which its batch pads to full length; ``end`` makes it a full window
    ending at the document's end, overlapping the one before by more than ``stride``: the same
    tokens seen, nothing to pad (a document shorter than one window still is).
    """
    if last_window not in LAST_WINDOWS:
        raise ValueError(f"last_window={last_window!r}: choose one of {', '.join(LAST_WINDOWS)}")
    if stride >= max_length - 2:
        raise ValueError(f"chunk stride {stride} must be smaller than max_length {max_length} minus special tokens")
    specials = tokenizer.num_special_tokens_to_add(pair=False)
    step = max_length - specials - stride  # new tokens each window adds
    budget = (max_length - specials) + step * (max_chunks - 1)  # tokens the kept windows hold
    kept, lengths = zip(*(kept_prefix(tokenizer, text, budget) for text in texts)) if texts else ((), ())
    windows = tokenizer(
        list(kept),
        truncation=True,
        max_length=max_length,
        stride=stride,
        return_overflowing_tokens=True,
        add_special_tokens=True,
    )
    layout = special_token_layout(tokenizer)
    per_doc: list[list[list[int]]] = [[] for _ in texts]
    for ids, doc_index in zip(windows["input_ids"], windows["overflow_to_sample_mapping"]):
        per_doc[doc_index].append(ids)
    documents = []
    for chunks, n_tokens in zip(per_doc, lengths):
        chunks = chunks[:max_chunks]
        if last_window == "end" and len(chunks) > 1 and len(chunks[-1]) < max_length:
            chunks[-1] = end_aligned(chunks, stride, max_length - specials, layout)
        covered = min(n_tokens, (max_length - specials) + step * (len(chunks) - 1))
        documents.append(ChunkedDocument(chunks=chunks, n_tokens=n_tokens, n_cut=n_tokens - covered))
    report = ChunkingReport(
        documents=len(documents),
        documents_cut=sum(d.n_cut > 0 for d in documents),
        tokens=sum(lengths),
        tokens_cut=sum(d.n_cut for d in documents),
    )
    return documents, report
