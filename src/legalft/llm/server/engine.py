"""``engine=server``: the two ways of answering (answers.py) asked of an OpenAI-compatible server.

Generation: the completions endpoint (chat completions when the prompt is a chat turn), temperature
0, stopped at the first newline and cut there, as the local path does. Label scoring: each label's
tokens appended to the prompt and sent with ``echo`` and ``logprobs``, so the server returns the log-
probability of every prompt token; the label's are summed. With ``engine.tokenize`` (the default)
prompts are sent as the token ids of the model's own tokenizer, split exactly as the local path
splits them (prompt, then separator and label), so both score the same tokens; without it (an API
model whose tokenizer is not public) the text is sent and the label's tokens are those that start
at or after the prompt's end (``text_offset``).
"""

from __future__ import annotations

import logging

import numpy as np

from legalft.foundation.errors import UserError
from legalft.llm.server.client import ServerClient

log = logging.getLogger(__name__)


def first_line(text: str | None) -> str:
    return (text or "").split("\n")[0].strip()


# A server's answer is outside input: each part is read as what it should be, or as nothing.
def mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def listed(value) -> list:
    return value if isinstance(value, list) else []


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class ServerEngine:
    def __init__(self, client: ServerClient, model: str, tokenizer=None, chat_only: bool = False) -> None:
        self.client, self.model, self.tokenizer, self.chat_only = client, model, tokenizer, chat_only

    def serving(self, model: str) -> "ServerEngine":
        """The same server and settings, asking for another served model (a LoRA adapter's name)."""
        return ServerEngine(self.client, model, self.tokenizer, self.chat_only)

    def record(self) -> dict:
        """What a run's metrics.json says of the server (never the API key)."""
        return {"engine": "server", "served_model": self.model}

    def use_chat(self, setting) -> bool:
        """``prompt.chat_template``: auto is a chat turn when the model's tokenizer has a template (as
        engine=local decides), or without a tokenizer here, where the endpoint takes nothing else."""
        if setting == "auto":
            return bool(getattr(self.tokenizer, "chat_template", None)) if self.tokenizer is not None else self.chat_only
        if not setting and self.chat_only:
            raise UserError("engine.chat_only=true: this endpoint takes chat messages only, and "
                            "prompt.chat_template=false asks for completions: set prompt.chat_template=true.")
        return bool(setting)

    def encoded(self, text: str) -> list[int] | str:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"] if self.tokenizer is not None else text

    def ask(self, prompts: list[str], chat: bool, what: str, **params) -> list[dict]:
        """Each prompt's one choice at temperature 0: as a chat turn (chat completions) or a completion."""
        endpoint = "chat/completions" if chat else "completions"
        common = {"model": self.model, "temperature": 0, **params}
        bodies = [{**common, "messages": [{"role": "user", "content": p}]} if chat else
                  {**common, "prompt": self.encoded(p)} for p in prompts]
        return [self.choices(a, 1, endpoint)[0] for a in self.client.answer_all(endpoint, bodies, what)]

    @staticmethod
    def text_of(choice: dict) -> str | None:
        """A choice's text (None where the server gave none: an invalid answer, never a crash)."""
        text = mapping(choice.get("message")).get("content") if "message" in choice else choice.get("text")
        return text if isinstance(text, str) else None

    def generate(self, prompts: list[str], max_new_tokens: int = 16, batch_size: int = 8, what: str = "generating",
                 chat: bool = False) -> list[str]:
        choices = self.ask(prompts, chat, what, max_tokens=max_new_tokens, stop=["\n"])
        return [first_line(self.text_of(c)) for c in choices]

    def first_tokens(self, prompts: list[str], what: str = "first tokens", chat: bool = False) -> list[tuple]:
        """The greedy first answer token of each prompt and its log-probability (None where the endpoint
        returns none): what a LoRA adapter changes first, read from the sampling path every server has."""
        choices = self.ask(prompts, chat, what, max_tokens=1, logprobs=True if chat else 1)
        firsts = []
        for choice in choices:
            logprobs = mapping(choice.get("logprobs"))
            first = (listed(logprobs.get("content")) or [None])[0] if chat else (
                listed(logprobs.get("token_logprobs")) or [None])[0]
            value = mapping(first).get("logprob") if chat else first
            firsts.append((self.text_of(choice), value if is_number(value) else None))
        return firsts

    def label_log_likelihoods(self, prompts: list[str], labels: list[str], separator: str = " ",
                              batch_size: int | None = None, what: str = "scoring labels",
                              chat: bool = False) -> np.ndarray:
        """[prompts, labels]: each label's summed token log-probabilities after its prompt, one request
        per prompt holding all its labels."""
        if self.chat_only:
            raise UserError("prompt.answer=score reads the log-probabilities of the prompt's tokens, which a "
                            "chat-only endpoint (engine.chat_only=true) does not return: use prompt.answer=generate.")
        if chat:
            if self.tokenizer is None or not getattr(self.tokenizer, "chat_template", None):
                raise UserError("prompt.answer=score with prompt.chat_template=true needs the model's chat template "
                                "here (engine.tokenize=true and a tokenizer that has one): use prompt.answer=generate.")
            from legalft.llm.answers import apply_chat_template

            prompts = apply_chat_template(self.tokenizer, prompts)
        if self.tokenizer is not None:  # the label's tokens are known by position
            continuations = [self.encoded(separator + label) for label in labels]
            encoded = [self.encoded(p) for p in prompts]
            bodies = [self.scoring_body([ids + c for c in continuations]) for ids in encoded]
            spans = [[(len(ids), len(ids) + len(c)) for c in continuations] for ids in encoded]
        else:  # by the characters they start at
            bodies = [self.scoring_body([p + separator + label for label in labels]) for p in prompts]
            spans = [[(len(p), len(p + separator + label)) for label in labels] for p in prompts]
        answers = self.client.answer_all("completions", bodies, what)
        return np.array([[self.label_sum(choice, span) for choice, span in
                          zip(self.choices(a, len(labels), "completions"), row)] for a, row in zip(answers, spans)])

    def scoring_body(self, prompt: list) -> dict:
        # max_tokens=1: some servers refuse 0; the one generated token comes after the spans that are read
        return {"model": self.model, "prompt": prompt, "echo": True, "logprobs": 1, "max_tokens": 1, "temperature": 0}

    def label_sum(self, choice: dict, span: tuple[int, int]) -> float:
        """The summed log-probabilities of the label's tokens: positions ``span`` of the echoed tokens, or
        (text prompts) the tokens whose first character lies in ``span``."""
        logprobs = mapping(choice.get("logprobs"))
        values = listed(logprobs.get("token_logprobs"))
        if not values:
            raise UserError(f"{self.client.base_url}/completions returned no log-probabilities of the prompt (echo and "
                            "logprobs), which label scoring reads: use prompt.answer=generate, or a server that "
                            "returns them (vLLM, SGLang, llama.cpp's server).")
        start, end = span
        if self.tokenizer is None:
            offsets = listed(logprobs.get("text_offset"))
            read = [v for v, o in zip(values, offsets) if isinstance(o, (int, float)) and start <= o < end]
        else:
            if len(values) < end:
                raise UserError(f"{self.client.base_url}/completions echoed {len(values)} tokens where {end} were "
                                "sent: the server tokenised the prompt again; set engine.tokenize=false.")
            read = values[start:end]
        # a label token without a number (null, a string, NaN) makes the label's sum NaN: the row is then an
        # invalid output (runner.chosen_labels), never scored from a number that is not there
        if not read or not all(is_number(v) for v in read):
            return float("nan")
        return float(sum(read))

    def choices(self, answer: dict, expected: int, endpoint: str) -> list[dict]:
        choices = listed(mapping(answer).get("choices"))
        if not all(isinstance(c, dict) and isinstance(c.get("index", 0), int) for c in choices):
            raise UserError(f"{self.client.base_url}/{endpoint} answered with choices that are not the OpenAI API's "
                            "(objects with an index): is engine.base_url an OpenAI-compatible server's /v1 address?")
        choices = sorted(choices, key=lambda c: c.get("index", 0))
        if len(choices) != expected:
            raise UserError(f"{self.client.base_url}/{endpoint} answered with {len(choices)} choices where {expected} "
                            "were asked for: is engine.base_url an OpenAI-compatible server's /v1 address?")
        return choices
