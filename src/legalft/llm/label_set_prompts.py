"""Multi-label tasks with a prompted LLM: the answer is a set of labels.

Statute prediction (``TaskSpec.statutes``, PROSLEX) is prompted as the PROSLEX paper's in-context
strategies:

- zero-shot: the facts, with each candidate statute and its description;
- k-shot: for each statute, the k annotated explanation spans (from train) most similar to the
  statute's description in a sentence-embedding space, shown as facts with their section.

and its answer is parsed into a set of sections ("IPC 302, IPC 201" or "302, 201"). Any other
multi-label task (a user's own data) is prompted the same way in its own words: the text, the
labels with their descriptions, "answer with the labels that apply, separated by commas"; its
answer is read as comma-separated label names (case and punctuation aside). With explanations
(``explain=true``), the answer goes on, on the same line, with one supporting quote per label:
"IPC 302, IPC 201 | IPC 302: <quote> | IPC 201: <quote>". With ``explain=json`` the answer is a JSON
list, one object per label with the quote and the reasoning: ``[{"section": "IPC 302", "quote": "...",
"reasoning": "..."}]`` (FIRE 2026 Task 1's fields), read with ``json`` and checked item by item.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import numpy as np

from legalft.data.example import Example, TaskSpec, reasoning_key
from legalft.evaluation.normalize import normalize

EXPLAIN_SEPARATOR = " | "
JSON = "json"  # prompt.explain=json: the answer as a JSON list of {section, quote, reasoning}
LIST_SEPARATORS = r"[,;\n]"


def section_number(label: str) -> str:
    return label.split()[-1]  # "IPC 498A" -> "498A"


def parse_labels(generation: str, task: TaskSpec) -> list[str]:
    """The labels the generation's list (before any explanations) names, in label order: statutes by
    their section numbers, other labels by name."""
    listed = generation.split(EXPLAIN_SEPARATOR)[0]
    if task.statutes:
        named = {m.upper() for m in re.findall(r"\b(\d{1,3}[A-Za-z]?)\b", listed)}
        return [label for label in task.labels if section_number(label).upper() in named]

    def key(text: str) -> str:
        return " ".join(normalize(text).split())

    parts = re.split(LIST_SEPARATORS, listed)
    # A label is named by as many consecutive parts as its own name splits into: "Smith, Jones" by two,
    # so "a, b" never names a label "a b".
    widths = {label: len(re.split(LIST_SEPARATORS, label)) for label in task.labels}
    named = {width: {key(" ".join(parts[i:i + width])) for i in range(len(parts) - width + 1)}
             for width in set(widths.values())}
    return [label for label in task.labels if key(label) in named[widths[label]]]


def label_list(task: TaskSpec) -> str:
    return "\n".join(f"- {label}: {task.label_descriptions.get(label, '')}".rstrip(": ") for label in task.labels)


def representative_spans(task: TaskSpec, train: list[Example], k: int, embed) -> list[tuple[str, str]]:
    """(span, label) pairs: per label, the k train spans closest to the label's description."""
    demos = []
    for label in task.labels:
        spans = sorted({span for e in train for span in e.explanations.get(label, ())})
        if not spans:
            continue
        similarity = embed(spans) @ embed([task.label_descriptions.get(label, label)])[0]
        demos += [(spans[i], label) for i in np.argsort(-similarity)[:k]]
    return demos


def truncate_words(text: str, max_words: int) -> tuple[str, bool]:
    words = text.split()
    return (" ".join(words[:max_words]), True) if len(words) > max_words else (text, False)


def format_answer(example: Example, explain: bool | str) -> str:
    """The target text of a training example: its labels, and with ``explain`` a gold span for each (with
    ``explain=json``, the JSON list with the span and the reasoning, where the data has one)."""
    if explain == JSON:
        return json.dumps([{"section": label, "quote": (example.explanations.get(label) or ("",))[0],
                            "reasoning": example.meta.get(reasoning_key(label), "")} for label in example.labels],
                          ensure_ascii=False)
    answer = ", ".join(example.labels)
    if explain:
        answer += "".join(f"{EXPLAIN_SEPARATOR}{label}: {example.explanations[label][0]}"
                          for label in example.labels if example.explanations.get(label))
    return answer


def parse_explanations(generation: str, task: TaskSpec) -> dict[str, str]:
    """Label -> generated quote, from the parts after the label list."""
    explained = {}
    for part in generation.split(EXPLAIN_SEPARATOR)[1:]:
        head, _, quote = part.partition(":")
        named = parse_labels(head, task)
        if len(named) == 1 and quote.strip():
            explained[named[0]] = quote.strip()
    return explained


@dataclass
class JsonAnswer:
    """A JSON answer read: the labels its valid items name, their quotes and reasoning, and what was wrong."""

    labels: list[str] = field(default_factory=list)
    quotes: dict[str, str] = field(default_factory=dict)
    reasoning: dict[str, str] = field(default_factory=dict)
    problem: str | None = None  # why nothing could be read ("no JSON list", ...); None when the list read
    invalid_items: int = 0  # items that are not an object naming one label


def parse_json_answer(generation: str, task: TaskSpec) -> JsonAnswer:
    """The first JSON list in the generation, item by item: an item is an object whose ``section`` names one
    label (a statute by its number); its ``quote`` and ``reasoning`` are kept where they are text."""
    start = generation.find("[")
    if start < 0:
        return JsonAnswer(problem="no JSON list")
    try:
        value, _ = json.JSONDecoder().raw_decode(generation[start:])
    except (ValueError, RecursionError):
        return JsonAnswer(problem="not JSON (cut short, or malformed)")
    if not isinstance(value, list):
        return JsonAnswer(problem="not a JSON list")
    answer, named = JsonAnswer(), set()
    for item in value:
        labels = parse_labels(item["section"], task) if isinstance(item, dict) and isinstance(
            item.get("section"), str) else []
        if len(labels) != 1:
            answer.invalid_items += 1
            continue
        (label,) = labels
        named.add(label)
        for key, kept in (("quote", answer.quotes), ("reasoning", answer.reasoning)):
            if isinstance(item.get(key), str) and item[key].strip() and label not in kept:
                kept[label] = item[key].strip()
    answer.labels = [label for label in task.labels if label in named]
    return answer


def build_prompts(task: TaskSpec, examples: list[Example], demos: list[tuple[str, str]], max_words: int,
                  explain: bool | str = False) -> tuple[list[str], int]:
    """One prompt per example, and how many examples' texts were cut to ``max_words``."""
    if task.statutes:  # the PROSLEX paper's wording
        text, answer, shown, pair = "Facts", "Sections", section_number, ("IPC 302", "IPC 201")
        header = ("Given the facts of an Indian Supreme Court case, list the sections of the Indian Penal Code "
                  f"that apply, from:\n{label_list(task)}\nAnswer with the section numbers separated by commas.")
        each = "each section"
    else:
        text, answer, shown, pair = "Text", "Labels", str, (task.labels * 2)[:2]
        header = (f"Given the text below, list the labels that apply, from:\n{label_list(task)}\n"
                  "Answer with the labels separated by commas.")
        each = "each label"
    if explain == JSON:
        header = header.rsplit("\n", 1)[0] + (
            f"\nAnswer with a JSON list, one object per {each.split()[1]} that applies, with the sentence of the "
            f"{text.lower()} that supports it and why it applies: "
            f'[{{"section": "{pair[0]}", "quote": "<sentence>", "reasoning": "<why>"}}]')
    elif explain:
        first, second = pair
        header += (f" Then, for {each}, quote the sentence of the {text.lower()} that supports it, as: "
                   f"{first}, {second}{EXPLAIN_SEPARATOR}{first}: <quote>{EXPLAIN_SEPARATOR}{second}: <quote>")
    if explain == JSON:  # a demonstration answers in the asked form: its span is its own quote
        shots = "".join(f"\n\n{text}: {span}\n{answer}: "
                        + json.dumps([{"section": label, "quote": span}], ensure_ascii=False) for span, label in demos)
    else:
        shots = "".join(f"\n\n{text}: {span}\n{answer}: {shown(label)}" for span, label in demos)
    prompts, cut = [], 0
    for example in examples:
        body, was_cut = truncate_words(example.text, max_words)
        cut += was_cut
        prompts.append(f"{header}{shots}\n\n{text}: {body}\n{answer}:")
    return prompts, cut
