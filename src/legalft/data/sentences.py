"""Sentences of a document with their character offsets: the unit evidence is chosen and scored in
(``legalft.evaluation.grounding``, ``legalft.evaluation.evidence``). pysbd's rules (abbreviations such as
"Dr." and "P.W.7" do not end a sentence) rather than a regex of our own; punkt would need a download.

pysbd's time grows faster than its input (100 KB of text in one call: 17 s; 1 MB: over 5 minutes), so a text longer
than ``WHOLE_TEXT_CHARS`` (longer than any case of PROSLEX or FIRE 2026, whose longest fact has 33,250 characters) is
given to it in segments of at most ``SEGMENT_CHARS``, cut after a sentence's end where there is one (else at a
space): its time is then linear in the text's length."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Sentence:
    start: int  # offsets into the document's text, surrounding whitespace excluded
    end: int
    text: str


@lru_cache(maxsize=1)
def segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


WHOLE_TEXT_CHARS = 50_000
SEGMENT_CHARS = 5_000
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")


def segments(text: str) -> list[str]:
    """``text``'s paragraphs (a sentence never runs across a blank line: ECtHR's facts are a list of paragraphs), each
    whole, or (longer than ``WHOLE_TEXT_CHARS``) in consecutive pieces of at most ``SEGMENT_CHARS``, each cut after
    the last sentence end in it, else after its last space, else at the limit."""
    return [piece for paragraph in _PARAGRAPH_BREAK.split(text) for piece in pieces_of(paragraph)]


def pieces_of(text: str) -> list[str]:
    if len(text) <= WHOLE_TEXT_CHARS:
        return [text]
    pieces, start = [], 0
    while start < len(text):
        end = min(start + SEGMENT_CHARS, len(text))
        if end < len(text):
            window = text[start:end]
            ends = [m.end() for m in _SENTENCE_END.finditer(window)]
            space = window.rfind(" ")
            end = start + (ends[-1] if ends else space + 1 if space > 0 else len(window))
        pieces.append(text[start:end])
        start = end
    return pieces


@lru_cache(maxsize=1024)
def split_sentences(text: str) -> tuple[Sentence, ...]:
    """The document's sentences in order. Offsets are found by searching forward from the previous sentence's
    end, so a sentence that occurs twice gets each occurrence once. Cached: a run splits each scored document
    to choose its evidence and again to score it."""
    found, position = [], 0
    for piece in (sentence for segment in segments(text) for sentence in segmenter().segment(segment)):
        piece = piece.strip()
        if not piece:
            continue
        start = text.find(piece, position)
        if start < 0:  # pysbd returned text it altered: skip it rather than guess where it is
            continue
        found.append(Sentence(start, start + len(piece), piece))
        position = start + len(piece)
    return tuple(found)
