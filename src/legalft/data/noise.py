"""What published statute files (PROSLEX's, FIRE 2026's) carry that invented samples do not, found, handled and
counted as their readers read them; the counts go to the run's log and to ``metrics.json`` (``run.data_notes``).

- An explanation span that is not verbatim in its case's facts (the two were cleaned differently, or the span
  belongs to another case) is aligned to the facts: first after normalising case, whitespace and punctuation,
  then by fuzzy matching (rapidfuzz's partial ratio, at least ``FUZZY_THRESHOLD``), where it becomes the facts'
  sentences the match covers. A span aligned neither way is left out: it trains nothing as evidence and is no
  gold evidence.
- Mojibake (UTF-8 punctuation read as Latin-1, found by ftfy) and RTF control words left behind without their
  backslash (``lang1033``) are counted and kept as published, the same in every split and in ``predict.py``'s
  input: a submission's ``exact_fact`` must quote the organisers' facts verbatim.
- A document in two splits (the same id, or the same facts under another id) is dropped from the training side
  (train, then validation) and named.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

# Policies for a label a reader does not know (PROSLEX's data.unknown_labels, FIRE's data.unknown_sections).
UNKNOWN_LABEL_POLICIES = ("error", "drop_label", "drop_document")

EXACT, NORMALIZED, FUZZY, UNALIGNED = "exact", "normalized", "fuzzy", "unaligned"
# rapidfuzz's partial_ratio (0-100) of a normalised span against its normalised facts. On FIRE 2026's 2,168
# explanation sentences every span scoring 80 or more is the same passage cleaned differently (dates or
# punctuation dropped, "0.5 cm" as "5 cm"); below 75, matches are other sentences that share phrases.
FUZZY_THRESHOLD = 80.0
RTF_REMNANT = re.compile(r"\blang\d{4,5}\b")  # RTF's \langN control words with the backslash stripped


def normalized_with_offsets(text: str) -> tuple[str, list[int]]:
    """``text``'s words casefolded and joined by single spaces (punctuation and whitespace both separate words),
    and for each character the offset of the character it came from."""
    out, offsets = [], []
    for match in re.finditer(r"[^\W_]+", text):
        if out:
            out.append(" ")
            offsets.append(match.start())
        piece = match.group().casefold()
        out.append(piece)
        # casefold can lengthen a word ("ß" -> "ss"): its extra characters map to the word's last one
        offsets.extend(min(match.start() + i, match.end() - 1) for i in range(len(piece)))
    return "".join(out), offsets


def align_span(span: str, facts: str) -> tuple[str, str | None]:
    """(how ``span`` was found, the verbatim text of ``facts`` it stands for), or (``UNALIGNED``, None)."""
    from rapidfuzz import fuzz

    span = span.strip()
    if span and span in facts:
        return EXACT, span
    norm_span, _ = normalized_with_offsets(span)
    if not norm_span:
        return UNALIGNED, None
    norm_facts, offsets = normalized_with_offsets(facts)
    start = norm_facts.find(norm_span)
    if start >= 0:
        return NORMALIZED, facts[offsets[start]: offsets[start + len(norm_span) - 1] + 1]
    match = fuzz.partial_ratio_alignment(norm_span, norm_facts, score_cutoff=FUZZY_THRESHOLD)
    if match is None:
        return UNALIGNED, None
    start, end = match.dest_start, match.dest_end
    while start < end and norm_facts[start] == " ":  # a space stands for the next word's start: not part of a match
        start += 1
    while end > start and norm_facts[end - 1] == " ":
        end -= 1
    if end <= start:
        return UNALIGNED, None
    return FUZZY, covering_sentences(facts, offsets[start], offsets[end - 1] + 1)


def covering_sentences(facts: str, start: int, end: int) -> str:
    """The text of ``facts`` from the start of the sentence holding ``start`` to the end of the one holding ``end``:
    a fuzzy match's edges are approximate, its sentences are not."""
    from legalft.data.sentences import split_sentences

    covered = [s for s in split_sentences(facts) if s.start < end and start < s.end]
    if not covered:
        return facts[start:end]
    return facts[covered[0].start: covered[-1].end]


def has_mojibake(text: str) -> bool:
    import ftfy

    return ftfy.fix_encoding(text) != text


@dataclass
class NoiseCounts:
    """What one split's files held, counted as they are read."""

    counts: Counter = field(default_factory=Counter)

    def looked_at(self, text: str) -> None:
        """Count a document's text-level noise (kept as published: the module's docstring says why)."""
        self.counts["documents"] += 1
        self.counts["documents_with_mojibake"] += has_mojibake(text)
        self.counts["documents_with_rtf_codes"] += bool(RTF_REMNANT.search(text))

    def aligned(self, facts: str, spans: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
        """``spans`` (label -> explanation spans) as verbatim text of ``facts``, those aligned neither way left out."""
        kept: dict[str, tuple[str, ...]] = {}
        for label, texts in spans.items():
            found = []
            for span in texts:
                how, text = align_span(span, facts)
                self.counts["explanation_spans"] += 1
                self.counts[f"explanation_spans_{how}"] += 1
                if text is not None:
                    found.append(text)
            if found:
                kept[label] = tuple(found)
        return kept

    def as_dict(self) -> dict[str, int]:
        return {key: self.counts[key] for key in sorted(self.counts) if self.counts[key] or key == "documents"}

    def summary(self) -> str:
        c = self.counts
        parts = [f"{c['documents']} documents"]
        if c["explanation_spans"]:
            parts.append(f"{c['explanation_spans']} explanation spans: {c['explanation_spans_exact']} verbatim, "
                         f"{c['explanation_spans_normalized']} after normalising case, spaces and punctuation, "
                         f"{c['explanation_spans_fuzzy']} by fuzzy match (>= {FUZZY_THRESHOLD:g}), "
                         f"{c['explanation_spans_unaligned']} not in the facts (left out: no evidence)")
        kept = [f"{c[key]} with {what}" for key, what in (("documents_with_mojibake", "mojibake"),
                                                           ("documents_with_rtf_codes", "RTF control words"))
                if c[key]]
        if kept:
            parts.append(f"{', '.join(kept)} (kept as published)")
        return "; ".join(parts)


def without_shared_documents(train: list, val: list, test: list) -> tuple[list, list, dict[str, int]]:
    """(train, val) without the documents a later split holds too, by id or by the same facts under another id
    (published splits hold both: FIRE 2026's 2003.INSC.472.txt is PROSLEX's 2003.INSC.473.txt): a test document is
    neither trained nor chosen on, a validation document not trained on. Each one is named in the log; the counts
    say how many each side lost."""
    def keys(examples: list) -> set:
        return {e.id for e in examples} | {e.text for e in examples}

    test_keys, val_keys = keys(test), keys(val)
    dropped = {}
    for name, examples, later, where in (("val", val, test_keys, "the test split"),
                                         ("train", train, test_keys | val_keys, "the validation or test split")):
        shared = [e.id for e in examples if e.id in later or e.text in later]
        if shared:
            log.warning("%d document(s) of the %s split also in %s (the same id or the same facts), left out of %s: "
                        "%s", len(shared), name, where, name, ", ".join(shared[:10]) + (" ..." if len(shared) > 10 else ""))
            dropped[name] = len(shared)
    kept_val = [e for e in val if e.id not in test_keys and e.text not in test_keys]
    later = test_keys | keys(kept_val)
    return [e for e in train if e.id not in later and e.text not in later], kept_val, dropped
