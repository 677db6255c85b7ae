"""Requests to an OpenAI-compatible endpoint, many in flight, each answered at most once.

The ``openai`` client sends them: a per-request timeout, and retries with exponential backoff and
jitter on connection errors, timeouts, 408/409/429 and 5xx (honouring ``Retry-After``). Added here:
a number of requests in flight, an optional requests-per-minute limit, the on-disk cache (an answer
is stored the moment it arrives, so a killed run loses none), a progress line with ETA, and errors
turned into one message that says what to do.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

from legalft.foundation.errors import UserError
from legalft.llm.server.cache import RequestCache, request_key

log = logging.getLogger(__name__)
ENDPOINTS = ("completions", "chat/completions")


def request_size(body: dict) -> int:
    """How much a request asks the server to read: its prompts' tokens (or characters), or its messages'."""
    prompt = body.get("prompt", body.get("messages", ""))
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], (list, str, dict)):
        return sum(len(p) if not isinstance(p, dict) else len(str(p.get("content", ""))) for p in prompt)
    return len(prompt)


class RateLimit:
    """Requests spaced ``60 / per_minute`` seconds apart across all threads (no limit when None)."""

    def __init__(self, per_minute: float | None, clock=time.monotonic, sleep=time.sleep) -> None:
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self.clock, self.sleep, self.next, self.lock = clock, sleep, 0.0, threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self.lock:
            now = self.clock()
            start = max(now, self.next)
            self.next = start + self.interval
        if start > now:
            self.sleep(start - now)


def api_key(variable: str | None) -> str:
    """The key from the environment variable ``engine.api_key_env`` names; local servers take any."""
    if not variable:
        return "none"
    key = os.environ.get(variable)
    if not key:
        raise UserError(f"engine.api_key_env={variable}: the environment variable {variable} is not set; export "
                        f"{variable}=<your key> (the key is read from there only and written nowhere).")
    return key


class ServerClient:
    def __init__(self, base_url: str, api_key_env: str | None = None, timeout_s: float = 120.0, max_retries: int = 6,
                 concurrency: int = 8, requests_per_minute: float | None = None, cache: str | None = None) -> None:
        try:
            import openai
        except ImportError:
            raise UserError("engine=server talks to servers through the OpenAI client: pip install 'legalft[server]' "
                            "(or bash scripts/install.sh all).") from None
        for name in ("httpx", "httpx2", "openai"):  # one line per request otherwise, in every run's log
            logging.getLogger(name).setLevel(logging.WARNING)
        if concurrency < 1:
            raise UserError(f"engine.concurrency={concurrency}: at least 1 request must be in flight.")
        self.base_url, self.max_retries, self.concurrency = base_url.rstrip("/"), max_retries, concurrency
        self.client = openai.OpenAI(base_url=self.base_url, api_key=api_key(api_key_env), timeout=timeout_s,
                                    max_retries=max_retries)
        self.rate = RateLimit(requests_per_minute)
        self.cache = RequestCache(cache) if cache else None
        self.sent, self.lock = 0, threading.Lock()  # requests the server answered in this process

    def answer_all(self, endpoint: str, bodies: list[dict], what: str) -> list[dict]:
        """The server's answer (the response's JSON) to each request body, in order."""
        from legalft.foundation.loop_progress import Progress

        keys = [request_key(self.base_url, endpoint, body) for body in bodies]
        answers = {key: self.cache.get(key) for key in set(keys)} if self.cache is not None else {}
        missing = {key: body for key, body in zip(keys, bodies) if answers.get(key) is None}
        if self.cache is not None and len(missing) < len(set(keys)):
            log.info("%s: %d of %d answers from the request cache %s", what, len(set(keys)) - len(missing),
                     len(set(keys)), self.cache.path)
        with Progress(len(missing), what, unit="requests") as progress, \
                ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="legalft-request") as pool:
            # the longest first, as vLLM's scheduler and lm-eval order them: the last requests in flight are short
            longest_first = sorted(missing.items(), key=lambda item: -request_size(item[1]))
            futures = {pool.submit(self.send, endpoint, key, body): key for key, body in longest_first}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in done:
                    if future.exception() is not None:
                        for other in pending:  # those already sent finish, and their answers are cached
                            other.cancel()
                        raise self.explained(future.exception(), endpoint, body=missing[futures[future]])
                    answers[futures[future]] = future.result()
                    progress.update(1)
        return [answers[key] for key in keys]

    def send(self, endpoint: str, key: str, body: dict) -> dict:
        self.rate.wait()
        resource = self.client.completions if endpoint == "completions" else self.client.chat.completions
        answer = resource.create(**body).model_dump(mode="json", exclude_unset=True)
        if self.cache is not None:  # stored here, in the worker: an answer that arrives while the run stops is kept too
            self.cache.put(key, endpoint, body.get("model", ""), answer)
        with self.lock:
            self.sent += 1
        return answer

    def served_models(self) -> list[str] | None:
        try:
            return [m.id for m in self.client.with_options(max_retries=0).models.list()]
        except Exception:  # noqa: BLE001 (an API without /models: the message says less, nothing breaks)
            return None

    def explained(self, error: BaseException, endpoint: str, body: dict) -> Exception:
        """The request's failure as a message naming the URL, what went wrong and what to do."""
        import openai
        import pydantic

        url = f"{self.base_url}/{endpoint}"
        kept = (f" The {len(self.cache)} answers in the request cache {self.cache.path} are kept: a rerun sends only "
                "the requests still missing." if self.cache is not None else "")
        if isinstance(error, (openai.APIConnectionError, openai.APITimeoutError)):
            return UserError(f"engine.base_url={self.base_url}: no answer from {url} after {self.max_retries + 1} tries "
                             f"({type(error).__name__}: {error}). Check that the server is running and reachable "
                             f"(curl {self.base_url}/models), or raise engine.timeout_s / engine.max_retries.{kept}")
        if isinstance(error, openai.NotFoundError):
            served = self.served_models()
            model = body.get("model")
            if served is not None and model not in served:
                return UserError(f"engine.model={model!r}: the server at {self.base_url} does not serve it; it serves "
                                 f"{', '.join(served) or 'no model'}. Set engine.model to one of those (vLLM serves "
                                 f"the name given to --served-model-name, or --model's value).{kept}")
            return UserError(f"{url} answered 404 ({error.message}): check engine.base_url (it ends in /v1) and "
                             f"that the server offers this endpoint.{kept}")
        if isinstance(error, (openai.AuthenticationError, openai.PermissionDeniedError)):
            return UserError(f"{url} refused the API key ({error.status_code}): check the key in the environment "
                             f"variable engine.api_key_env names.{kept}")
        if isinstance(error, openai.APIStatusError):
            return UserError(f"{url} answered {error.status_code} ({error.message})"
                             + (f" after {self.max_retries + 1} tries" if error.status_code >= 500 else "")
                             + f".{kept}")
        if isinstance(error, (json.JSONDecodeError, pydantic.ValidationError, openai.APIResponseValidationError)):
            return UserError(f"{url} answered with something other than the OpenAI API's JSON ({error}): is "
                             f"engine.base_url an OpenAI-compatible server's /v1 address?{kept}")
        return error
