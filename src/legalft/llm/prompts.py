"""Prompts for in-context runs.

- ``base_prompt``: LegalBench's own published few-shot prompt for the task (its ``base_prompt.txt``).
- ``zero_shot``: the task's one-line description, the label space, and the input.
- ``few_shot``: the same with ``k`` demonstrations from the train split, drawn at random (seeded)
  or chosen by embedding similarity to each test input.
"""

from __future__ import annotations

import logging
import random

import numpy as np

from legalft.data.example import Example, Task
from legalft.data.legalbench import PLACEHOLDER, render
from legalft.foundation.checks import one_of, whole
from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)
STRATEGIES = ("base_prompt", "zero_shot", "few_shot")
SELECTIONS = ("random", "similar")

# What the prompt group (conf/prompt) may hold, checked before anything loads (``Method.group_settings`` of the
# methods that prompt: in-context runs and LoRA)
PROMPT_SETTINGS = {
    "strategy": (one_of(*STRATEGIES), f"one of {', '.join(STRATEGIES)}"),
    "selection": (one_of(*SELECTIONS), f"one of {', '.join(SELECTIONS)}"),
    "answer": (one_of("generate", "score"), "one of generate, score"),
    "k": (whole(0), "a whole number of demonstrations, 0 or more"),
    "max_new_tokens": (whole(1), "a whole number of tokens, 1 or more"),
    "chat_template": (one_of("auto", True, False), "one of auto, true, false"),
}


def input_columns(task: Task) -> list[str]:
    """The columns the task's published prompt reads (``text`` where it names none)."""
    return list(dict.fromkeys(PLACEHOLDER.findall(task.base_prompt))) or ["text"]


def input_block(task: Task, example: Example) -> str:
    """The example's input columns, as the task's published prompt uses them."""
    columns = input_columns(task)
    if columns == ["text"]:
        return example.fields.get("text", example.text)
    return "\n".join(f"{column.replace('_', ' ').capitalize()}: {example.fields[column]}" for column in columns)


def instruction(task: Task) -> str:
    spec = task.spec
    text = spec.description or f"Task: {spec.name.replace('_', ' ')}."
    if spec.labels and spec.kind == "label":
        text += f" Answer with one of: {', '.join(spec.labels)}."
    return text


def demonstration(task: Task, example: Example) -> str:
    return f"{input_block(task, example)}\nAnswer: {example.labels[0]}"


class SentenceEmbedder:
    """Mean-pooled, unit-length sentence embeddings from an encoder (e.g. all-MiniLM-L6-v2)."""

    def __init__(self, pretrained: str, max_length: int = 256) -> None:
        from legalft.models.pretrained import load_encoder, load_tokenizer

        self.tokenizer = load_tokenizer(pretrained, key="prompt.embedder")
        self.encoder = load_encoder(pretrained, key="prompt.embedder").eval()
        self.max_length = max_length

    def __call__(self, texts: list[str]) -> np.ndarray:
        import torch

        batch = self.tokenizer(texts, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt")
        with torch.no_grad():
            hidden = self.encoder(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1)
        return torch.nn.functional.normalize(pooled, dim=-1).numpy()


def random_demonstrations(task: Task, examples: list[Example], k: int, seed: int, embedder) -> list[list[Example]]:
    """The same seeded sample of k train rows for every example of the task."""
    fixed = random.Random(f"{seed}:{task.spec.name}").sample(task.train, k)
    return [fixed for _ in examples]


def similar_demonstrations(task: Task, examples: list[Example], k: int, seed: int, embedder) -> list[list[Example]]:
    """For each example, the k train rows nearest to it in the embedder's space, the nearest last."""
    train = embedder([input_block(task, e) for e in task.train])
    queries = embedder([input_block(task, e) for e in examples])
    nearest = np.argsort(-queries @ train.T, axis=1)[:, :k]
    return [[task.train[j] for j in row[::-1]] for row in nearest]  # most similar last, next to the query


def published_prompts(builder: "PromptBuilder", task: Task, examples: list[Example]) -> list[str]:
    """The task's own prompt (LegalBench's base_prompt.txt, its few-shot demonstrations included)."""
    where = f"{task.spec.name}/base_prompt.txt"
    return [render(task.base_prompt, e.fields, where) for e in examples]


def described_prompts(builder: "PromptBuilder", task: Task, examples: list[Example]) -> list[str]:
    """The task's description and label space, the builder's demonstrations, then the input."""
    prompts = []
    for example, demos in zip(examples, builder.demonstrations(task, examples)):
        blocks = [instruction(task), *(demonstration(task, d) for d in demos), f"{input_block(task, example)}\nAnswer:"]
        prompts.append("\n\n".join(blocks))
    return prompts


def template_prompts(builder: "PromptBuilder", task: Task, examples: list[Example]) -> list[str]:
    """The user's template (``prompt.template``): ``{{column}}`` placeholders for the input's columns, and
    ``{{labels}}`` (the task's labels, comma-separated) and ``{{description}}`` (the task's)."""
    given = {"labels": ", ".join(task.spec.labels), "description": task.spec.description}
    return [render(builder.template, {**given, **e.fields}, "prompt.template") for e in examples]


# A name in prompt.strategy / prompt.selection picks the function; a new one is one entry here.
STRATEGIES = {"base_prompt": published_prompts, "zero_shot": described_prompts, "few_shot": described_prompts,
              "template": template_prompts}
SELECTIONS = {"random": random_demonstrations, "similar": similar_demonstrations}


class PromptBuilder:
    """Every prompt a task's examples get, the one way: a label task's by the strategy; a label-set task's (multi-label:
    PROSLEX's statutes) as ``legalft.llm.label_set_prompts`` words them, with the k training spans closest to each
    label as demonstrations where few-shot, the facts cut to ``max_input_words``, asking for quotes where ``explain``
    says. ``exclude_scored``: the examples to prompt are train rows (tuning prompt settings on the train split), so
    each one's demonstrations are drawn from the other train rows, never itself."""

    def __init__(self, strategy: str = "base_prompt", k: int = 0, selection: str = "random", seed: int = 0,
                 embedder: SentenceEmbedder | None = None, exclude_scored: bool = False,
                 template: str | None = None, max_input_words: int = 1500, explain: bool | str = False) -> None:
        if strategy not in STRATEGIES:
            raise UserError(f"prompt.strategy={strategy!r}: choose one of {', '.join(STRATEGIES)}.")
        if selection not in SELECTIONS:
            raise UserError(f"prompt.selection={selection!r}: choose one of {', '.join(SELECTIONS)}.")
        if selection == "similar" and strategy == "few_shot" and embedder is None:
            raise UserError("prompt.selection=similar needs prompt.embedder (a sentence encoder).")
        self.strategy, self.k, self.selection, self.seed, self.embedder = strategy, k, selection, seed, embedder
        self.exclude_scored = exclude_scored
        if strategy == "template" and not (isinstance(template, str) and "{{" in template):
            raise UserError("prompt=template needs prompt.template, a prompt with {{column}} placeholders (e.g. "
                            "'{{text}}\\nIs this hearsay ({{labels}})? Answer:').")
        self.template = template
        self.max_input_words, self.explain = max_input_words, explain

    def demonstrations(self, task: Task, examples: list[Example]) -> list[list[Example]]:
        """The demonstrations for each example: none unless few-shot, else the selection's k."""
        if self.strategy != "few_shot" or self.k == 0:
            return [[] for _ in examples]
        if len(task.train) < self.k:
            raise UserError(f"prompt.k={self.k}: task {task.spec.name!r} has only {len(task.train)} train rows.")
        return SELECTIONS[self.selection](task, examples, self.k, self.seed, self.embedder)

    def build(self, task: Task, examples: list[Example]) -> list[str]:
        if task.spec.multi_label:
            return self.label_set_prompts(task, examples)
        if not self.exclude_scored:
            return STRATEGIES[self.strategy](self, task, examples)
        from dataclasses import replace

        return [STRATEGIES[self.strategy](self, replace(task, train=[e for e in task.train if e.id != example.id]),
                                          [example])[0] for example in examples]

    def label_set_prompts(self, task: Task, examples: list[Example]) -> list[str]:
        from legalft.llm import label_set_prompts

        demos = (label_set_prompts.representative_spans(task.spec, task.train, self.k, self.embedder)
                 if self.strategy == "few_shot" and self.k else [])
        prompts, cut = label_set_prompts.build_prompts(task.spec, examples, demos, self.max_input_words, self.explain)
        if cut:
            log.info("%d of %d documents cut to their first %d words for the prompt", cut, len(prompts),
                     self.max_input_words)
        return prompts
