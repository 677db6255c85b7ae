"""``engine=server``: the two ways of answering (answers.py) asked of an OpenAI-compatible server.

Generation: the completions endpoint (chat completions when the prompt is a chat turn), temperature
0, stopped at the first newline and cut there, as the local path does. Label scoring: each label's
tokens appended to the prompt and sent with ``echo`` and ``logprobs``, so the server returns the log-
probability of every prompt token; the label's are summed. With ``engine.tokenize`` (the default)
prompts are sent as the token ids of the model's own tokenizer, split exactly as the local path
splits them (prompt, then separator and label), so both score the same tokens; without it (an API
model whose tokenizer is not public) the text is sent and the label's tokens are those that start
at or after the prompt's end (``text_offset``).

A label that is one token of the tokenizer, named by a string no other token decodes to, is read instead from one
request per prompt: its next-token candidates (``engine.top_logprobs`` of them, ``logprobs`` with ``max_tokens=1``),
the same number the echoed prompt gives, with the prompt computed once rather than once per label and without the
log-probabilities of every prompt token. Labels that are several tokens, or not among a row's candidates, are
scored by echo as above; which labels of a task took which path is logged.
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


def described_paths(labels: list[str], single: dict[int, str], echoed: list[list[int]]) -> str:
    """Which path each label of a task took, for the run's log."""
    if not single:
        return "every label scored by echo (no label is one token of its own, or engine.top_logprobs=0)"
    rows = len(echoed)
    read = {j: sum(j not in missing for missing in echoed) for j in single}
    parts = [f"{labels[j]} from the next-token candidates on {read[j]} of {rows} rows" for j in single]
    others = [labels[j] for j in range(len(labels)) if j not in single]
    if others:
        parts.append(f"{', '.join(others)} by echo (several tokens)")
    return "; ".join(parts)


class ServerEngine:
    def __init__(self, client: ServerClient, model: str, tokenizer=None, chat_only: bool = False,
                 top_logprobs: int = 20, prompts_per_request: int = 1) -> None:
        self.client, self.model, self.tokenizer, self.chat_only = client, model, tokenizer, chat_only
        self.top_logprobs = top_logprobs  # next-token candidates a request asks for (0: echo scoring alone)
        if prompts_per_request < 1:
            raise UserError(f"engine.prompts_per_request={prompts_per_request}: at least 1 prompt a request.")
        self.prompts_per_request = prompts_per_request  # completions requests hold up to this many prompts
        self._token_names: dict[str, int] | None = None

    def serving(self, model: str) -> "ServerEngine":
        """The same server and settings, asking for another served model (a LoRA adapter's name)."""
        return ServerEngine(self.client, model, self.tokenizer, self.chat_only, self.top_logprobs,
                            self.prompts_per_request)

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
        common = {"model": self.model, "temperature": 0, **params}
        if chat:
            bodies = [{**common, "messages": [{"role": "user", "content": p}]} for p in prompts]
            return [self.choices(a, 1, "chat/completions")[0]
                    for a in self.client.answer_all("chat/completions", bodies, what)]
        return self.completions([self.encoded(p) for p in prompts], common, what)

    def completions(self, prompts: list, common: dict, what: str) -> list[dict]:
        """Each prompt's one choice from the completions endpoint, ``prompts_per_request`` prompts a request (the
        longest together: a server batches what is in flight either way, and fewer requests cost less)."""
        size = self.prompts_per_request
        if size == 1:
            return [self.choices(a, 1, "completions")[0]
                    for a in self.client.answer_all("completions", [{**common, "prompt": p} for p in prompts], what)]
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
        groups = [order[start:start + size] for start in range(0, len(order), size)]
        answers = self.client.answer_all("completions", [{**common, "prompt": [prompts[i] for i in group]}
                                                         for group in groups], what)
        chosen: list[dict] = [{}] * len(prompts)
        for group, answer in zip(groups, answers):
            for i, choice in zip(group, self.choices(answer, len(group), "completions")):
                chosen[i] = choice
        return chosen

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
        if self.tokenizer is None:  # the label's tokens are known by the characters they start at
            bodies = [self.scoring_body([p + separator + label for label in labels]) for p in prompts]
            spans = [[(len(p), len(p + separator + label)) for label in labels] for p in prompts]
            answers = self.client.answer_all("completions", bodies, what)
            return np.array([[self.label_sum(choice, span) for choice, span in
                              zip(self.choices(a, len(labels), "completions"), row)] for a, row in zip(answers, spans)])
        continuations = [self.encoded(separator + label) for label in labels]  # each label encoded once
        encoded = [self.encoded(p) for p in prompts]
        scores = np.full((len(prompts), len(labels)), np.nan)
        single = self.one_token_labels(continuations)
        if single:
            scores = self.from_candidates(encoded, single, scores, what)
        echoed = [[j for j in range(len(labels)) if np.isnan(scores[i, j])] for i in range(len(prompts))]
        log.info("%s: %s", what, described_paths(labels, single, echoed))
        rows = [i for i, missing in enumerate(echoed) if missing]
        bodies = [self.scoring_body([encoded[i] + continuations[j] for j in echoed[i]]) for i in rows]
        answers = self.client.answer_all("completions", bodies, what) if bodies else []
        for i, answer in zip(rows, answers):  # the label's tokens are known by position
            for j, choice in zip(echoed[i], self.choices(answer, len(echoed[i]), "completions")):
                scores[i, j] = self.label_sum(choice, (len(encoded[i]), len(encoded[i]) + len(continuations[j])))
        return scores

    def one_token_labels(self, continuations: list[list[int]]) -> dict[int, str]:
        """Label index -> the string the server names its one token by, for each label that is one token whose string
        no other token of the vocabulary decodes to (decided from the tokenizer; none with engine.top_logprobs=0)."""
        ones = {j: ids[0] for j, ids in enumerate(continuations) if len(ids) == 1}
        if not self.top_logprobs or not ones:
            return {}
        if self._token_names is None:
            decoded = [self.tokenizer.decode([i]) for i in range(len(self.tokenizer))]
            counts: dict[str, int] = {}
            for name in decoded:
                counts[name] = counts.get(name, 0) + 1
            self._token_names = {name: i for i, name in enumerate(decoded) if counts[name] == 1}
        names = {j: self.tokenizer.decode([token]) for j, token in ones.items()}
        return {j: name for j, name in names.items() if self._token_names.get(name) == ones[j]}

    def from_candidates(self, encoded: list[list[int]], single: dict[int, str], scores: np.ndarray,
                        what: str) -> np.ndarray:
        """``scores`` with each one-token label's log-probability read from its row's next-token candidates, where
        the server lists it among them (a server that gives no candidates: every label is echoed, said once)."""
        body = {"model": self.model, "max_tokens": 1, "temperature": 0, "logprobs": self.top_logprobs}
        try:
            choices = self.completions(encoded, body, f"{what} (next-token candidates)")
        except UserError as err:
            if "answered 400" not in str(err):
                raise
            log.warning("%s: the server refused %d next-token candidates (%s): from here on every label is scored by "
                        "echo, a request per prompt holding each label; set engine.top_logprobs to what it allows "
                        "(vLLM: --max-logprobs, default 20), or 0", what, self.top_logprobs, str(err).splitlines()[0][:200])
            self.top_logprobs = 0
            return scores
        for i, choice in enumerate(choices):
            candidates = (listed(mapping(choice.get("logprobs")).get("top_logprobs")) or [None])[0]
            candidates = mapping(candidates)
            for j, name in single.items():
                if is_number(candidates.get(name)):
                    scores[i, j] = float(candidates[name])
        return scores

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
