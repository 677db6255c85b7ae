"""Tokenised windows kept on disk, so a second run on the same documents with the same tokenizer and window settings
skips tokenisation.

Keyed as ``datasets.map`` keys its cache files: a fingerprint of the input (each document's text, in order) and one
of the transform (the fast tokenizer's full serialisation, the window settings, this file's format). ``datasets``
keeps a map's output beside the Arrow files of a dataset it loaded; the framework's documents come from JSON, PROSLEX
folders and FIRE lines as well, read into ``Example`` lists, so the windows are kept in a folder of their own
(``datamodule.cache_dir``), one ``.npz`` of integer arrays per split: read without unpickling, written once and
atomically (a file another run wrote first is kept), never replaced."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np

from legalft.data.chunking import ChunkedDocument, ChunkingReport, chunk_documents

log = logging.getLogger(__name__)

FORMAT = 1  # bumped whenever what chunk_documents returns for the same input changes


def tokenizer_fingerprint(tokenizer) -> str:
    """Everything the fast tokenizer does to a text (normaliser, pre-tokeniser, vocabulary, special tokens' template)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ValueError("windows are cut with a fast tokenizer's offsets; this one has none")
    state = json.loads(backend.to_str())
    # the truncation and padding a call last asked for are kept in the serialisation: not what the tokenizer is
    state.pop("truncation", None), state.pop("padding", None)
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


def cache_key(tokenizer, texts: list[str], chunking: dict) -> str:
    digest = hashlib.sha256(json.dumps([FORMAT, tokenizer_fingerprint(tokenizer), sorted(chunking.items())]).encode())
    for text in texts:
        digest.update(hashlib.sha256(text.encode()).digest())
    return digest.hexdigest()[:32]


def saved(documents: list[ChunkedDocument]) -> dict[str, np.ndarray]:
    chunks = [chunk for doc in documents for chunk in doc.chunks]
    return {"ids": np.fromiter((t for chunk in chunks for t in chunk), dtype=np.int64),
            "chunk_lengths": np.array([len(c) for c in chunks], dtype=np.int64),
            "chunks_per_document": np.array([len(d.chunks) for d in documents], dtype=np.int64),
            "n_tokens": np.array([d.n_tokens for d in documents], dtype=np.int64),
            "n_cut": np.array([d.n_cut for d in documents], dtype=np.int64)}


def restored(arrays) -> list[ChunkedDocument]:
    ids = arrays["ids"].tolist()
    ends = np.cumsum(arrays["chunk_lengths"]).tolist()
    chunks = [ids[start:end] for start, end in zip([0, *ends[:-1]], ends)]
    documents, first = [], 0
    for count, n_tokens, n_cut in zip(*(arrays[k].tolist() for k in ("chunks_per_document", "n_tokens", "n_cut"))):
        documents.append(ChunkedDocument(chunks=chunks[first:first + count], n_tokens=n_tokens, n_cut=n_cut))
        first += count
    return documents


def report_of(documents: list[ChunkedDocument]) -> ChunkingReport:
    return ChunkingReport(documents=len(documents), documents_cut=sum(d.n_cut > 0 for d in documents),
                          tokens=sum(d.n_tokens for d in documents), tokens_cut=sum(d.n_cut for d in documents))


def cached_chunk_documents(cache_dir: str | Path | None, tokenizer, texts: list[str], write: bool = True,
                           **chunking) -> tuple[list[ChunkedDocument], ChunkingReport]:
    """``chunk_documents``, read from ``cache_dir`` where an earlier run of the same texts, tokenizer and settings
    wrote it (None: no cache), and written there for the next (``write``; false: the cache is read, never written,
    as by commands that write nothing but their output)."""
    if cache_dir is None or not texts:
        return chunk_documents(tokenizer, texts, **chunking)
    path = Path(cache_dir) / f"{cache_key(tokenizer, texts, chunking)}.npz"
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as arrays:
                documents = restored(arrays)
            if len(documents) == len(texts):
                log.info("windows of %d documents read from %s", len(texts), path)
                return documents, report_of(documents)
        except (OSError, ValueError, KeyError) as err:
            log.warning("%s cannot be read (%s): the documents are tokenised again and the file left as it is",
                        path, err)
        return chunk_documents(tokenizer, texts, **chunking)
    documents, report = chunk_documents(tokenizer, texts, **chunking)
    if not write:
        return documents, report
    from legalft.foundation.io import atomic_write

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as stream:  # a file object: given a name, numpy would add .npz to it
            np.savez(stream, **saved(documents))

    try:
        atomic_write(path, write, replace=False)
    except FileExistsError:
        pass  # another run wrote the same windows first
    except OSError as err:  # a read-only or full cache folder: the run goes on without it
        log.warning("windows not cached in %s (%s)", cache_dir, err)
    return documents, report
