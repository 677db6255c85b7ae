"""Sentences of a document with their character offsets: the unit evidence is chosen and scored in
(``legalft.evaluation.grounding``, ``legalft.evaluation.evidence``). pysbd's rules (abbreviations such as
"Dr." and "P.W.7" do not end a sentence) rather than a regex of our own; punkt would need a download."""

from __future__ import annotations

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


@lru_cache(maxsize=1024)
def split_sentences(text: str) -> tuple[Sentence, ...]:
    """The document's sentences in order. Offsets are found by searching forward from the previous sentence's
    end, so a sentence that occurs twice gets each occurrence once. Cached: a run splits each scored document
    to choose its evidence and again to score it."""
    found, position = [], 0
    for piece in segmenter().segment(text):
        piece = piece.strip()
        if not piece:
            continue
        start = text.find(piece, position)
        if start < 0:  # pysbd returned text it altered: skip it rather than guess where it is
            continue
        found.append(Sentence(start, start + len(piece), piece))
        position = start + len(piece)
    return tuple(found)
