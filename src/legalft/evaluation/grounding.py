"""Whether an explanation's evidence is in the facts, and how well its sentences match the experts' spans.

A quote is found in the facts ``exact``, else ``normalized`` (case and runs of whitespace aside), else it is
``absent``: a quote the model made up is counted as such, never accepted. A quote of several sentences is
found sentence by sentence when it is not there whole. Sentence-level precision, recall and
F1 compare, for every section that is both predicted and gold and has expert spans, the sentences the
evidence covers with the sentences the experts' spans cover (micro-averaged over (document, section,
sentence) triples), so a wrong section costs section F1, not evidence F1."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from legalft.data.sentences import Sentence, split_sentences

EXACT, NORMALIZED, ABSENT = "exact", "normalized", "absent"


def normalized_with_offsets(text: str) -> tuple[str, list[int]]:
    """``text`` casefolded with each run of whitespace one space, and for each of its characters the offset
    of the character it came from."""
    out, offsets = [], []
    for match in re.finditer(r"\s+|\S+", text):
        if match.group().isspace():
            out.append(" ")
            offsets.append(match.start())
        else:
            piece = match.group().casefold()
            out.append(piece)
            # casefold can lengthen a word ("ß" -> "ss"): its extra characters map to the word's last one
            offsets.extend(min(match.start() + i, match.end() - 1) for i in range(len(piece)))
    return "".join(out), offsets


def locate(quote: str, facts: str) -> tuple[str, tuple[int, int] | None]:
    """Where ``quote`` is in ``facts``: (``exact`` | ``normalized``, (start, end)), or (``absent``, None)."""
    quote = quote.strip()
    if not quote:
        return ABSENT, None
    start = facts.find(quote)
    if start >= 0:
        return EXACT, (start, start + len(quote))
    norm_facts, offsets = normalized_with_offsets(facts)
    norm_quote, _ = normalized_with_offsets(quote)
    start = norm_facts.find(norm_quote.strip())
    if start < 0:
        return ABSENT, None
    end = start + len(norm_quote.strip()) - 1
    return NORMALIZED, (offsets[start], offsets[end] + 1)


def covered_sentences(span: tuple[int, int], sentences: Sequence[Sentence]) -> set[int]:
    """Indices of the sentences a character span overlaps."""
    start, end = span
    return {i for i, s in enumerate(sentences) if s.start < end and start < s.end}


def locate_parts(quote: str, facts: str) -> tuple[str, list[tuple[int, int]]]:
    """How a quote is in the facts, and the spans it covers. A quote of several sentences that is not there
    whole (FIRE's ``exact_fact`` joins sentences from different places) is located sentence by sentence:
    ``exact`` or ``normalized`` when every sentence is found, ``absent`` when any is not (its found sentences
    still cover their spans)."""
    how, span = locate(quote, facts)
    if span is not None:
        return how, [span]
    parts = [locate(s.text, facts) for s in split_sentences(quote)]
    if len(parts) < 2:
        return ABSENT, []
    spans = [span for _, span in parts if span is not None]
    if len(spans) < len(parts):
        return ABSENT, spans
    return (EXACT if all(how == EXACT for how, _ in parts) else NORMALIZED), spans


def sentences_of_quotes(quotes: Iterable[str], facts: str, sentences: Sequence[Sentence],
                        found: Counter | None = None) -> set[int]:
    """The sentences the quotes cover; ``found`` counts how each quote was located."""
    covered: set[int] = set()
    for quote in quotes:
        how, spans = locate_parts(quote, facts)
        if found is not None:
            found[how] += 1
        for span in spans:
            covered |= covered_sentences(span, sentences)
    return covered


def predicted_sections(record: dict) -> list[str]:
    """A prediction record's predicted labels, as a list for a single-label task too."""
    return record["prediction"] if isinstance(record["prediction"], list) else [record["prediction"]]


def sections_without_evidence(records: Iterable[dict]) -> int:
    """Predicted sections a run's records give no evidence for (a generation that named a section and quoted
    nothing, a section the evidence scorer never saw)."""
    return sum(not (record.get("evidence") or {}).get(section) for record in records
               for section in predicted_sections(record))


def prf(true_positives: int, predicted: int, gold: int) -> dict:
    precision = true_positives / predicted if predicted else 0.0
    recall = true_positives / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def grounding_scores(documents: Sequence[tuple[str, dict[str, Sequence[str]], dict[str, Sequence[str]]]]) -> dict:
    """``documents``: (facts, evidence quotes by predicted section, expert spans by gold section) per document.
    Returns the counts of quotes found exact, normalized and not at all, and sentence-level precision, recall
    and F1 of the evidence against the experts' spans (module docstring)."""
    found: Counter = Counter()
    true_positives = predicted = gold = pairs = 0
    for facts, evidence, experts in documents:
        sentences = None
        for section, quotes in evidence.items():
            sentences = sentences if sentences is not None else split_sentences(facts)
            chosen = sentences_of_quotes(quotes, facts, sentences, found)
            if not experts.get(section):
                continue
            expected = sentences_of_quotes(experts[section], facts, sentences)
            pairs += 1
            true_positives += len(chosen & expected)
            predicted += len(chosen)
            gold += len(expected)
    scores = {
        "evidence_quotes": sum(found.values()),
        "evidence_exact": found[EXACT],
        "evidence_normalized": found[NORMALIZED],
        "evidence_not_in_facts": found[ABSENT],
        "evidence_sections_scored": pairs,  # sections both predicted and gold, with expert spans
    }
    if pairs:  # without experts' spans (a FIRE test split) there is nothing to compare with
        scores.update({f"evidence_sentence_{k}": v for k, v in prf(true_positives, predicted, gold).items()})
    return scores
