"""engine=server against a reference OpenAI-compatible server (tests/openai_server.py) that answers from
the same tiny causal LM as the local path: the same answers, each request sent once, faults as messages."""

from __future__ import annotations

import pytest
import torch

from openai_server import OpenAIServer, ReferenceModel

PROMPTS = ["Q: The accused threatened the witness. Is there hearsay?\nA:", "Q: A mob attacked.\nA:",
           "Q: The witness repeated a rumour she heard.\nA:"]
LABELS = ["Yes", "No", "Not sure at all"]


@pytest.fixture(scope="module")
def tiny_lm(tiny_causal_lm_dir):
    from legalft.models.causal_lm import load_causal_lm

    return load_causal_lm(str(tiny_causal_lm_dir))


@pytest.fixture
def server(tiny_lm):
    with OpenAIServer({"tiny": ReferenceModel(*tiny_lm)}) as running:
        yield running


def engine_for(server, tokenizer=None, cache=None, top_logprobs: int = 0, prompts_per_request: int = 1, **settings):
    """The engine against ``server``; by default every label scored by echo (``top_logprobs``: the next-token
    candidates one-token labels are read from)."""
    from legalft.llm.server.client import ServerClient
    from legalft.llm.server.engine import ServerEngine

    chat_only = settings.pop("chat_only", False)
    client = ServerClient(server.url if hasattr(server, "url") else server, cache=cache, **settings)
    return ServerEngine(client, "tiny", tokenizer, chat_only, top_logprobs, prompts_per_request)


def test_label_scores_through_the_server_equal_the_local_path(server, tiny_lm):
    from legalft.llm.engine import LocalEngine

    model, tokenizer = tiny_lm
    local = LocalEngine(model, tokenizer).label_log_likelihoods(PROMPTS, LABELS)
    served = engine_for(server, tokenizer).label_log_likelihoods(PROMPTS, LABELS)
    assert served.shape == (3, 3)
    assert served == pytest.approx(local, abs=1e-4)
    assert server.answered() == len(PROMPTS)  # one request per prompt, all its labels in it
    # text prompts (an API model without a public tokenizer): the label's tokens found by their offsets
    as_text = engine_for(server).label_log_likelihoods(PROMPTS, LABELS)
    assert (as_text.argmax(1) == local.argmax(1)).all()


def one_token_labels(tokenizer) -> list[str]:
    """Words of the tiny tokenizer that are one token after a space, named by a text no other token has."""
    words = [w for w in ("the", "and", "accused", "of", "to", "was", "in", "a", "he", "his")
             if len(tokenizer(" " + w, add_special_tokens=False)["input_ids"]) == 1]
    assert len(words) >= 2, "the tiny tokenizer should have one-token words"
    return words


def test_one_token_labels_are_read_from_one_request_per_prompt_with_the_echoed_scores(tiny_lm, caplog):
    """A label that is one token is read from the prompt's next-token candidates: the number echo gives, the prompt
    computed once per row; a several-token label, and a row where a label is not a candidate, are echoed; the log
    says which path each label took."""
    import logging

    from legalft.llm.engine import LocalEngine

    model, tokenizer = tiny_lm
    labels = [*one_token_labels(tokenizer)[:2], "Not sure at all"]
    local = LocalEngine(model, tokenizer).label_log_likelihoods(PROMPTS, labels)
    with OpenAIServer({"tiny": ReferenceModel(model, tokenizer)}, max_logprobs=len(tokenizer)) as server:
        with caplog.at_level(logging.INFO):  # every token a candidate: each one-token label is read from them
            read = engine_for(server, tokenizer, top_logprobs=len(tokenizer)).label_log_likelihoods(PROMPTS, labels)
        assert read == pytest.approx(local, abs=1e-4)
        candidates = [r for r in server.requests if r[1].get("max_tokens") == 1 and not r[1].get("echo")]
        echoed = [r for r in server.requests if r[1].get("echo")]
        assert len(candidates) == len(PROMPTS) and len(echoed) == len(PROMPTS)
        assert all(len(r[1]["prompt"]) == 1 for r in echoed)  # the several-token label alone
        assert f"{labels[0]} from the next-token candidates on 3 of 3 rows" in caplog.text
        assert "Not sure at all by echo (several tokens)" in caplog.text
        few = engine_for(server, tokenizer, top_logprobs=1).label_log_likelihoods(PROMPTS, labels[:2])
        assert few == pytest.approx(local[:, :2], abs=1e-4)  # at most one of them a candidate: the other echoed


def test_several_prompts_a_request_answer_as_one_each(server, tiny_lm):
    """engine.prompts_per_request=2: three prompts in two requests, each answer back in its prompt's place."""
    model, tokenizer = tiny_lm
    one_each = engine_for(server, tokenizer).generate(PROMPTS, max_new_tokens=4)
    assert server.answered() == 3
    paired = engine_for(server, tokenizer, prompts_per_request=2).generate(PROMPTS, max_new_tokens=4)
    assert paired == one_each and server.answered() == 3 + 2
    assert sorted(len(r[1]["prompt"]) for r in server.requests[3:]) == [1, 2]


def test_a_server_that_refuses_or_lacks_next_token_candidates_scores_by_echo_and_says_so(tiny_lm, caplog):
    import logging

    model, tokenizer = tiny_lm
    labels = one_token_labels(tokenizer)[:2]
    with OpenAIServer({"tiny": ReferenceModel(model, tokenizer)}, max_logprobs=5) as refusing:
        engine = engine_for(refusing, tokenizer, top_logprobs=20)
        with caplog.at_level(logging.WARNING):
            scores = engine.label_log_likelihoods(PROMPTS, labels)
        assert "the server refused 20 next-token candidates" in caplog.text and "engine.top_logprobs" in caplog.text
        assert engine.top_logprobs == 0 and refusing.answered() == len(PROMPTS)  # the echoed requests
    with OpenAIServer({"tiny": ReferenceModel(model, tokenizer, top=False)}) as without:
        again = engine_for(without, tokenizer, top_logprobs=20).label_log_likelihoods(PROMPTS, labels)
    assert again == pytest.approx(scores, abs=1e-5)  # no candidates given: every label echoed, the same numbers


def test_generations_through_the_server_equal_the_local_path(server, tiny_lm):
    from legalft.llm.engine import LocalEngine

    model, tokenizer = tiny_lm
    local = LocalEngine(model, tokenizer).generate(PROMPTS, max_new_tokens=6)
    assert engine_for(server, tokenizer).generate(PROMPTS, max_new_tokens=6) == local
    assert all("\n" not in g for g in local)
    sent = server.requests[-1][1]
    assert sent["temperature"] == 0 and sent["stop"] == ["\n"] and sent["max_tokens"] == 6
    assert engine_for(server, tokenizer).generate(PROMPTS[:1], max_new_tokens=6, chat=True) == local[:1]
    assert server.answered("/v1/chat/completions") == 1


def test_a_rerun_sends_no_request_already_answered(server, tiny_lm, tmp_path):
    from legalft.foundation.errors import UserError

    tokenizer = tiny_lm[1]
    cache = tmp_path / "cache" / "requests.sqlite"
    prompts = [f"Q: question number {i}?\nA:" for i in range(10)]
    server.faults = [None] * 4 + [500] * 20  # the server fails after four answers
    with pytest.raises(UserError, match="answered 500.*4 answers in the request cache .* are kept"):
        engine_for(server, tokenizer, cache=str(cache), max_retries=1, concurrency=1).label_log_likelihoods(prompts, LABELS)
    assert server.answered() == 4
    server.faults = []
    first = engine_for(server, tokenizer, cache=str(cache)).label_log_likelihoods(prompts, LABELS)
    assert server.answered() == 10  # the six missing, nothing twice
    again = engine_for(server, tokenizer, cache=str(cache))
    assert (again.label_log_likelihoods(prompts, LABELS) == first).all() and again.client.sent == 0
    other_model = engine_for(server, tokenizer, cache=str(cache))
    other_model.model = "tiny"  # the same requests; a new max_tokens is a new request
    assert len(other_model.generate(prompts[:2], max_new_tokens=3)) == 2 and other_model.client.sent == 2
    uncached = engine_for(server, tokenizer, cache=None)
    uncached.label_log_likelihoods(prompts[:2], LABELS)
    assert uncached.client.sent == 2


@pytest.mark.parametrize("fault", ["nan logprobs", "null logprobs"])
def test_label_scores_that_are_not_numbers_are_invalid_outputs_not_the_first_label(server, tiny_lm, fault, caplog):
    from legalft.data.example import Example, Task, TaskSpec
    from legalft.llm.scoring import answer_task, match_label

    tokenizer = tiny_lm[1]
    task = Task(TaskSpec("hearsay", tuple(LABELS), False), train=[], test=[
        Example(id=str(i), text=p, labels=("No",)) for i, p in enumerate(PROMPTS)])
    server.faults = [None, fault, None]  # the second request's answer: requests go longest first, so PROMPTS[2]'s
    engine = engine_for(server, tokenizer, concurrency=1)
    scored, _, per_label = answer_task(task, PROMPTS, engine, "score", 4, 8, chat=False)
    predictions = [match_label(s, task.spec.labels) for s in scored]
    assert predictions[2] is None and predictions[0] in LABELS and predictions[1] in LABELS
    assert per_label[2] == {label: None for label in LABELS}
    assert "1 of 3 rows have label log-likelihoods that are not numbers" in caplog.text


def damage(path, start_page: int = 2) -> None:
    """Overwrite every page of an SQLite file from ``start_page`` on (its header page is kept valid)."""
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    for offset in range(page * (start_page - 1), len(data), page):
        data[offset:offset + page] = b"\xde\xad" * (page // 2)
    path.write_bytes(bytes(data))


def test_a_damaged_request_cache_is_moved_aside_and_the_run_goes_on(server, tiny_lm, tmp_path, caplog):
    from legalft.llm.server.cache import RequestCache

    tokenizer = tiny_lm[1]
    cache = tmp_path / "requests.sqlite"
    prompts = [f"Q: question number {i}?\nA:" + " padding" * 200 for i in range(12)]  # several pages of answers
    writer = engine_for(server, tokenizer, cache=str(cache))
    first = writer.label_log_likelihoods(prompts, LABELS)
    writer.client.cache.close()  # the last connection: the write-ahead log goes into the file
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"requests.sqlite{suffix}").unlink(missing_ok=True)
    assert cache.read_bytes()[:16] == b"SQLite format 3\x00"
    damage(cache)
    again = engine_for(server, tokenizer, cache=str(cache))
    assert again.label_log_likelihoods(prompts, LABELS) == pytest.approx(first, abs=1e-5)
    assert again.client.sent == len(prompts)  # asked again, not read from damaged pages
    aside = [p for p in tmp_path.iterdir() if ".damaged-" in p.name]
    assert aside and "moved aside" in caplog.text and len(RequestCache(cache)) == len(prompts)
    (tmp_path / "not_sqlite.sqlite").write_text("a text file, not a database")
    RequestCache(tmp_path / "not_sqlite.sqlite").close()  # also moved aside, never a traceback
    assert any(p.name.startswith("not_sqlite.sqlite.damaged-") for p in tmp_path.iterdir())


def test_failed_requests_are_retried_and_requests_overlap(server, tiny_lm):
    tokenizer = tiny_lm[1]
    server.faults = [500, 429, 503]
    engine = engine_for(server, tokenizer, max_retries=4, concurrency=1)
    assert len(engine.generate(PROMPTS[:1], max_new_tokens=2)) == 1
    assert [status for *_, status in server.requests] == [500, 429, 503, 200]
    prompts = [f"Q: question {i}?\nA:" for i in range(16)]
    engine_for(server, tokenizer, concurrency=4).generate(prompts, max_new_tokens=8)
    assert 1 < server.most_in_flight <= 4


@pytest.mark.parametrize("fault, message", [
    ("malformed", "answered with something other than the OpenAI API's JSON"),
    ("wrong model", r"engine.model='other': .* serves tiny\. Set engine.model"),
    ("unreachable", r"no answer from http://127.0.0.1:9/v1/completions after 2 tries .* server is running"),
    ("always 500", r"answered 500 \(.*\) after 2 tries"),
])
def test_server_faults_are_one_message(server, tiny_lm, fault, message):
    from legalft.foundation.errors import UserError

    tokenizer = tiny_lm[1]
    engine = engine_for("http://127.0.0.1:9/v1" if fault == "unreachable" else server, tokenizer, max_retries=1)
    server.faults = {"malformed": ["malformed"], "always 500": [500] * 4}.get(fault, [])
    if fault == "wrong model":
        engine.model = "other"
    with pytest.raises(UserError, match=message):
        engine.generate(PROMPTS[:1], max_new_tokens=2)


def test_chat_only_endpoints_refuse_label_scoring_and_completion_prompts(server):
    from legalft.foundation.errors import UserError

    engine = engine_for(server, chat_only=True)
    assert engine.use_chat("auto") is True
    with pytest.raises(UserError, match="chat messages only.*set prompt.chat_template=true"):
        engine.use_chat(False)
    with pytest.raises(UserError, match="does not return: use prompt.answer=generate"):
        engine.label_log_likelihoods(PROMPTS, LABELS, chat=True)
    assert server.requests == []


def test_an_endpoint_without_prompt_log_probabilities_is_named(server, tiny_lm):
    from legalft.foundation.errors import UserError

    model = server.models["tiny"]
    complete = model.complete
    model.complete = lambda prompt, body: {**complete(prompt, {**body, "echo": False}), "logprobs": None}
    with pytest.raises(UserError, match="returned no log-probabilities of the prompt .* use prompt.answer=generate"):
        engine_for(server, tiny_lm[1]).label_log_likelihoods(PROMPTS, LABELS)


def test_requests_per_minute_space_the_requests():
    from legalft.llm.server.client import RateLimit

    now, slept = [100.0], []

    def sleep(seconds):
        slept.append(seconds)

    limit = RateLimit(120, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        limit.wait()
    assert slept == [pytest.approx(0.5), pytest.approx(1.0)]
    unlimited = RateLimit(None, clock=lambda: now[0], sleep=sleep)
    unlimited.wait()
    assert len(slept) == 2


def test_a_missing_api_key_variable_is_named(monkeypatch):
    from legalft.foundation.errors import UserError
    from legalft.llm.server.client import ServerClient

    monkeypatch.delenv("LEGALFT_TEST_KEY", raising=False)
    with pytest.raises(UserError, match="engine.api_key_env=LEGALFT_TEST_KEY: the environment variable"):
        ServerClient("http://127.0.0.1:9/v1", api_key_env="LEGALFT_TEST_KEY")


@pytest.mark.slow
def test_an_incontext_run_through_a_server_writes_the_local_runs_files_and_never_the_api_key(
        tmp_path, tiny_lm, tiny_causal_lm_dir):
    """evaluate.py engine=server against the reference server, with an API key and W&B offline: the same
    predictions as engine=local, the key sent as the Authorization header and found in no file."""
    import json
    import os
    import subprocess
    import sys

    from conftest import ROOT, write_legalbench_task
    from commands import run_script
    from helpers import read_jsonl

    root = tmp_path / "legalbench"
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tThe witness number {i} repeated what she heard.\n" for i in range(12))
    write_legalbench_task(root, "hearsay", "index\tanswer\ttext\n" + rows[:200], "index\tanswer\ttext\n" + rows)
    api_key = "sk-legalft-test-0123456789abcdef"
    common = ["prompt=zero_shot", "prompt.answer=score", "model=smollm2", f"model.pretrained={tiny_causal_lm_dir}",
              "data=legalbench", f"data.root={root}", "data.tasks=[hearsay]"]
    local = run_script("evaluate.py", *common, f"hydra.run.dir={tmp_path}/local")
    assert local.returncode == 0, local.stderr[-3000:]
    with OpenAIServer({"tiny": ReferenceModel(*tiny_lm)}) as server:
        served = subprocess.run(
            [sys.executable, "evaluate.py", *common, "engine=server", f"engine.base_url={server.url}",
             "engine.model=tiny", "engine.api_key_env=LEGALFT_TEST_API_KEY", f"engine.cache={tmp_path}/cache.sqlite",
             "logger=wandb", f"hydra.run.dir={tmp_path}/served"],
            cwd=ROOT, capture_output=True, text=True, timeout=600,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "LEGALFT_TEST_API_KEY": api_key,
                 "WANDB_API_KEY": "0123456789abcdef0123456789abcdef01234567", "WANDB_BASE_URL": "http://127.0.0.1:9"},
        )
    assert served.returncode == 0, served.stderr[-3000:]
    assert server.answered() == 12 and all({k.lower(): v for k, v in h.items()}["authorization"] == f"Bearer {api_key}"
                                          for *_, h, _ in server.requests)
    expected = {r["id"]: r["prediction"] for r in read_jsonl(tmp_path / "local" / "predictions.jsonl")}
    got = {r["id"]: r["prediction"] for r in read_jsonl(tmp_path / "served" / "predictions.jsonl")}
    assert got == expected
    run = json.loads((tmp_path / "served" / "metrics.json").read_text())["run"]
    assert run["engine"] == "server" and run["served_model"] == "tiny"
    assert any((tmp_path / "served").rglob("*.wandb"))  # the offline W&B run is among the files scanned
    for path in [*(tmp_path / "served").rglob("*"), tmp_path / "cache.sqlite"]:
        if path.is_file():
            assert api_key.encode() not in path.read_bytes(), path
    assert api_key not in served.stdout + served.stderr


@pytest.mark.parametrize("applied", [True, False], ids=["applied", "ignored"])
def test_a_served_adapter_that_changes_nothing_stops_the_run(tiny_lm, tiny_causal_lm_dir, tmp_path, applied):
    """The check before a LoRA run's adapter is scored through a server: a server that answers the adapter's
    name with the base model (the silent failure) is named; one whose answers move is trusted."""
    import copy

    from omegaconf import OmegaConf

    from conftest import write_legalbench_task
    from legalft.data.legalbench import LegalBenchSource
    from legalft.foundation.errors import UserError
    from legalft.methods.lora.scoring import check_applied

    model, tokenizer = tiny_lm
    adapted = copy.deepcopy(model)
    with torch.no_grad():
        adapted.lm_head.weight.mul_(1.05)  # what a trained adapter does: the same model, moved a little
    rows = "".join(f"{i}\t{'Yes' if i % 2 else 'No'}\tThe witness number {i} repeated a rumour.\n" for i in range(10))
    write_legalbench_task(tmp_path, "hearsay", "index\tanswer\ttext\n" + rows, "index\tanswer\ttext\n" + rows)
    task = LegalBenchSource(str(tmp_path), tasks=["hearsay"]).load()[0]
    models = {"tiny": ReferenceModel(model, tokenizer),
              "pooled": ReferenceModel(adapted if applied else model, tokenizer)}
    with OpenAIServer(models) as server:
        base = engine_for(server, tokenizer)
        prompt = OmegaConf.create({"chat_template": False, "max_new_tokens": 4})
        if applied:
            check_applied(base, base.serving("pooled"), task, prompt)
        else:
            with pytest.raises(UserError, match="give the same answers on the first 8 rows of hearsay: the server is "
                                                "not applying the adapter.*--lora-modules pooled="):
                check_applied(base, base.serving("pooled"), task, prompt)
        assert server.answered() == 16
