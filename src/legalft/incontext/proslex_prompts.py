"""PROSLEX statute prediction with a prompted LLM, as the PROSLEX paper's in-context strategies:

- zero-shot: the facts, with each candidate statute and its description;
- k-shot: for each statute, the k annotated explanation spans (from train) most similar to the
  statute's description in a sentence-embedding space, shown as facts with their section.

The answer is parsed into a set of sections ("IPC 302, IPC 201" or "302, 201"). With
explanations, the answer goes on, on the same line, with one supporting quote per section:
"IPC 302, IPC 201 | IPC 302: <quote> | IPC 201: <quote>".
"""

from __future__ import annotations

import re

import numpy as np

from legalft.data.example import Example, TaskSpec

EXPLAIN_SEPARATOR = " | "


def section_number(label: str) -> str:
    return label.split()[-1]  # "IPC 498A" -> "498A"


def parse_sections(generation: str, task: TaskSpec) -> list[str]:
    """Labels whose section number the generation's section list names, in label order."""
    sections = generation.split(EXPLAIN_SEPARATOR)[0]
    named = {m.upper() for m in re.findall(r"\b(\d{1,3}[A-Za-z]?)\b", sections)}
    return [label for label in task.labels if section_number(label).upper() in named]


def statute_list(task: TaskSpec) -> str:
    return "\n".join(f"- {label}: {task.label_descriptions.get(label, '')}".rstrip(": ") for label in task.labels)


def representative_spans(task: TaskSpec, train: list[Example], k: int, embed) -> list[tuple[str, str]]:
    """(span, label) pairs: per statute, the k train spans closest to the statute's description."""
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


def format_answer(example: Example, explain: bool) -> str:
    """The target text of a training example: its sections, and with ``explain`` a gold span for each."""
    answer = ", ".join(example.labels)
    if explain:
        answer += "".join(f"{EXPLAIN_SEPARATOR}{label}: {example.explanations[label][0]}"
                          for label in example.labels if example.explanations.get(label))
    return answer


def parse_explanations(generation: str, task: TaskSpec) -> dict[str, str]:
    """Section -> generated quote, from the parts after the section list."""
    explained = {}
    for part in generation.split(EXPLAIN_SEPARATOR)[1:]:
        head, _, quote = part.partition(":")
        sections = parse_sections(head, task)
        if len(sections) == 1 and quote.strip():
            explained[sections[0]] = quote.strip()
    return explained


def build_prompts(task: TaskSpec, examples: list[Example], demos: list[tuple[str, str]], max_words: int,
                  explain: bool = False) -> tuple[list[str], int]:
    """One prompt per example, and how many examples' facts were cut to ``max_words``."""
    header = (
        "Given the facts of an Indian Supreme Court case, list the sections of the Indian Penal Code that "
        f"apply, from:\n{statute_list(task)}\nAnswer with the section numbers separated by commas."
    )
    if explain:
        header += (f" Then, for each section, quote the sentence of the facts that supports it, as: "
                   f"IPC 302, IPC 201{EXPLAIN_SEPARATOR}IPC 302: <quote>{EXPLAIN_SEPARATOR}IPC 201: <quote>")
    shots = "".join(f"\n\nFacts: {span}\nSections: {section_number(label)}" for span, label in demos)
    prompts, cut = [], 0
    for example in examples:
        facts, was_cut = truncate_words(example.text, max_words)
        cut += was_cut
        prompts.append(f"{header}{shots}\n\nFacts: {facts}\nSections:")
    return prompts, cut
