"""Where an in-context run's answers come from (the ``engine`` config group).

``engine=local``: a transformers model in this process (answers.py). ``engine=server``: an OpenAI-
compatible server (server/): vLLM, SGLang, TGI, llama.cpp's server or an API provider. Both answer
the same two questions the same way, so a run's prompts, metrics and files do not depend on which:
``generate`` (greedy, cut at the first newline) and ``label_log_likelihoods`` (each label's summed
token log-probabilities after the prompt).
"""

from __future__ import annotations

import logging

import numpy as np

from legalft.foundation.errors import UserError

log = logging.getLogger(__name__)
BACKENDS = ("local", "server")


class LocalEngine:
    def __init__(self, model, tokenizer) -> None:
        self.model, self.tokenizer = model, tokenizer

    def record(self) -> dict:
        """What a run's metrics.json says of its engine: nothing for the default."""
        return {}

    def use_chat(self, setting) -> bool:
        from legalft.llm.answers import use_chat_template

        return use_chat_template(self.tokenizer, setting)

    def chat_turns(self, prompts: list[str], chat: bool) -> list[str]:
        from legalft.llm.answers import apply_chat_template

        return apply_chat_template(self.tokenizer, prompts) if chat else prompts

    def generate(self, prompts: list[str], max_new_tokens: int = 16, batch_size: int = 8, what: str = "generating",
                 chat: bool = False) -> list[str]:
        from legalft.llm.answers import generate

        return generate(self.model, self.tokenizer, self.chat_turns(prompts, chat), max_new_tokens=max_new_tokens,
                        batch_size=batch_size, what=what)

    def label_log_likelihoods(self, prompts: list[str], labels: list[str], separator: str = " ",
                              batch_size: int | None = None, what: str = "scoring labels",
                              chat: bool = False) -> np.ndarray:
        from legalft.llm.answers import label_log_likelihoods

        return label_log_likelihoods(self.model, self.tokenizer, self.chat_turns(prompts, chat), labels, separator,
                                     batch_size=batch_size, what=what).numpy()


def backend_of(engine_cfg) -> str:
    backend = "local" if engine_cfg is None else engine_cfg.get("backend", "local")
    if backend not in BACKENDS:
        raise UserError(f"engine.backend={backend!r}: choose engine=local or engine=server.")
    return backend


def server_engine(engine_cfg, pretrained: str | None):
    """The server an ``engine=server`` config names, asking for ``engine.model`` (default: the model's
    ``pretrained``, the name ``vllm serve <name>`` serves it under)."""
    from legalft.llm.server.client import ServerClient
    from legalft.llm.server.engine import ServerEngine

    model = engine_cfg.get("model") or pretrained
    if not engine_cfg.get("base_url"):
        raise UserError("engine=server needs engine.base_url, the server's OpenAI-compatible address "
                        "(e.g. http://localhost:8000/v1).")
    if not model:
        raise UserError("engine=server: set engine.model to the name the server serves the model under.")
    tokenizer = None
    if engine_cfg.get("tokenize", True):
        if not pretrained:
            raise UserError("engine.tokenize=true sends prompts as the model's token ids, and model.pretrained names "
                            "no tokenizer: set model.pretrained, or engine.tokenize=false (text prompts).")
        from legalft.models.pretrained import load_tokenizer

        tokenizer = load_tokenizer(str(pretrained))
    client = ServerClient(engine_cfg.base_url, engine_cfg.get("api_key_env"), engine_cfg.get("timeout_s", 120),
                          engine_cfg.get("max_retries", 6), engine_cfg.get("concurrency", 8),
                          engine_cfg.get("requests_per_minute"), engine_cfg.get("cache"))
    log.info("answers from %s (model %s, %d requests in flight)", client.base_url, model, client.concurrency)
    return ServerEngine(client, str(model), tokenizer, bool(engine_cfg.get("chat_only", False)),
                        int(engine_cfg.get("top_logprobs", 20)), int(engine_cfg.get("prompts_per_request", 1)))


def open_engine(engine_cfg, model_cfg):
    """The engine an in-context run's config names."""
    if backend_of(engine_cfg) == "server":
        return server_engine(engine_cfg, model_cfg.get("pretrained"))
    from legalft.models.causal_lm import load_causal_lm, to_accelerator

    model, tokenizer = load_causal_lm(model_cfg.pretrained, dtype=model_cfg.get("dtype", "float32"))
    return LocalEngine(to_accelerator(model), tokenizer)
