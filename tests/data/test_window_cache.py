"""Tokenised windows kept between runs: the second run of the same documents, tokenizer and settings reads them and
tokenises nothing; any change of text, tokenizer or setting is a new entry; a damaged entry is read past, and kept."""

from __future__ import annotations

import logging

import pytest

from legalft.data import window_cache
from legalft.data.chunking import chunk_documents

TEXTS = ["The accused struck the deceased with an axe. " * 40, "Dowry was demanded.", "The mob had swords. " * 90]
SETTINGS = {"max_length": 32, "stride": 8, "max_chunks": 4, "last_window": "end"}


@pytest.fixture
def tokenizer(tiny_tokenizer_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_tokenizer_dir)


def test_a_second_run_reads_the_windows_the_first_wrote_and_tokenises_nothing(tokenizer, tmp_path, monkeypatch):
    assert tokenizer.backend_tokenizer.truncation is None  # the first run's tokenizer, before any call set it
    first, report = window_cache.cached_chunk_documents(tmp_path, tokenizer, TEXTS, **SETTINGS)
    assert (first, report) == chunk_documents(tokenizer, TEXTS, **SETTINGS)
    assert len(list(tmp_path.glob("*.npz"))) == 1 and report.documents_cut == 2

    def tokenised(*args, **kwargs):
        raise AssertionError("tokenised again")

    monkeypatch.setattr(window_cache, "chunk_documents", tokenised)
    assert window_cache.cached_chunk_documents(tmp_path, tokenizer, TEXTS, **SETTINGS) == (first, report)


@pytest.mark.parametrize("change", ["text", "setting", "tokenizer"])
def test_other_texts_settings_or_tokenizer_are_another_entry(tokenizer, tmp_path, change):
    window_cache.cached_chunk_documents(tmp_path, tokenizer, TEXTS, **SETTINGS)
    texts, settings = list(TEXTS), dict(SETTINGS)
    if change == "text":
        texts[1] = "Dowry was demanded twice."
    elif change == "setting":
        settings["stride"] = 4
    else:
        tokenizer.add_tokens(["dowry"])
    documents, _ = window_cache.cached_chunk_documents(tmp_path, tokenizer, texts, **settings)
    assert documents == chunk_documents(tokenizer, texts, **settings)[0]
    assert len(list(tmp_path.glob("*.npz"))) == 2


def test_a_damaged_entry_is_read_past_said_and_kept(tokenizer, tmp_path, caplog):
    window_cache.cached_chunk_documents(tmp_path, tokenizer, TEXTS, **SETTINGS)
    (entry,) = tmp_path.glob("*.npz")
    entry.write_bytes(b"not a numpy archive")
    with caplog.at_level(logging.WARNING, logger="legalft.data.window_cache"):
        documents, _ = window_cache.cached_chunk_documents(tmp_path, tokenizer, TEXTS, **SETTINGS)
    assert documents == chunk_documents(tokenizer, TEXTS, **SETTINGS)[0]
    assert "cannot be read" in caplog.text and entry.read_bytes() == b"not a numpy archive"
