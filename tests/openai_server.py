"""A small OpenAI-compatible server for the tests, answering from a transformers model by plain forward
passes (no key/value cache, no shared prefix): the reference the server engine is checked against.
It counts requests, records their headers, serves several model names (a LoRA adapter's name can be
answered by another model, or by the base to play a server that ignores adapters) and injects faults."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch


class ReferenceModel:
    """``top``: the generated positions' most likely tokens are answered (``logprobs=k``), as vLLM and SGLang answer
    them; false: a server that gives the sampled tokens' log-probabilities alone."""

    def __init__(self, model, tokenizer, top: bool = True) -> None:
        self.model, self.tokenizer, self.top = model, tokenizer, top

    def ids(self, prompt) -> list[int]:
        return self.tokenizer(prompt, add_special_tokens=False)["input_ids"] if isinstance(prompt, str) else list(prompt)

    @torch.no_grad()
    def complete(self, prompt, body: dict) -> dict:
        ids = self.ids(prompt)
        generated = []
        stops = body.get("stop") or []
        for _ in range(body.get("max_tokens", 16)):
            logits = self.model(torch.tensor([ids + generated])).logits[0, -1]
            token = int(logits.argmax())
            if token == self.tokenizer.eos_token_id:
                break
            generated.append(token)
            if any(s in self.tokenizer.decode(generated) for s in stops):
                break
        text = self.tokenizer.decode(generated)
        for stop in stops:
            text = text.split(stop)[0]
        choice = {"text": text, "finish_reason": "stop"}
        if body.get("logprobs") is not None and generated:  # the generated tokens' log-probabilities
            logprobs = self.model(torch.tensor([ids + generated])).logits[0].log_softmax(-1)
            choice["logprobs"] = {"tokens": [self.tokenizer.decode([t]) for t in generated],
                                  "token_logprobs": [float(logprobs[len(ids) + i - 1, t]) for i, t in enumerate(generated)]}
            if self.top and isinstance(body["logprobs"], int) and not isinstance(body["logprobs"], bool):
                # each generated position's most likely tokens, by their decoded text, as vLLM names them
                rows = [logprobs[len(ids) + i - 1] for i in range(len(generated))]
                choice["logprobs"]["top_logprobs"] = [
                    {self.tokenizer.decode([int(t)]): float(row[t]) for t in row.topk(body["logprobs"]).indices}
                    for row in rows]
        if body.get("echo"):
            every = ids + generated
            logprobs = self.model(torch.tensor([every])).logits[0].log_softmax(-1)
            tokens = [self.tokenizer.decode([t]) for t in every]
            offsets = [len(self.tokenizer.decode(every[:i])) for i in range(len(every))]
            choice["text"] = self.tokenizer.decode(ids) + text
            choice["logprobs"] = {"tokens": tokens, "text_offset": offsets,
                                  "token_logprobs": [None] + [float(logprobs[i - 1, t]) for i, t in enumerate(every)][1:],
                                  "top_logprobs": None}
        return choice


class OpenAIServer:
    """``models``: served name -> ReferenceModel. ``faults``: what the next requests get instead of an
    answer, one entry each: an HTTP status (int), ``"malformed"`` (a broken JSON body), or ``"nan logprobs"`` /
    ``"null logprobs"`` (an answer whose log-probabilities are NaN or null)."""

    def __init__(self, models: dict[str, ReferenceModel], port: int = 0, max_logprobs: int = 20) -> None:
        self.models, self.faults, self.requests, self.max_logprobs = models, [], [], max_logprobs
        self.in_flight = self.most_in_flight = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), self.handler())
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "OpenAIServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def answered(self, path: str = "/v1/completions") -> int:
        return sum(1 for p, _, _, status in self.requests if p == path and status == 200)

    def handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def reply(self, status: int, payload, raw: bytes | None = None) -> None:
                if self.command == "POST":  # counted before the client can see the answer, so a test that
                    # counts right after its last request returns counts that request
                    server.requests.append((self.path, self.body, dict(self.headers), status))
                    self.leave_flight()  # before the answer is sent: the client's next request may come at once
                data = raw if raw is not None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                if status == 429:
                    self.send_header("retry-after", "0")
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self.reply(200, {"object": "list", "data": [{"id": name, "object": "model"} for name in server.models]})

            def leave_flight(self) -> None:
                with server.lock:
                    if self.flying:
                        self.flying = False
                        server.in_flight -= 1

            def do_POST(self) -> None:
                self.body = body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with server.lock:
                    fault = server.faults.pop(0) if server.faults else None
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                    self.flying = True
                try:
                    self.answer(body, fault)
                finally:
                    self.leave_flight()

            def answer(self, body: dict, fault) -> None:
                if isinstance(fault, int):
                    self.reply(fault, {"error": {"message": f"injected {fault}"}})
                    return
                if fault == "malformed":
                    self.reply(200, None, raw=b'{"choices": [{"text": "Yes"')
                    return
                model = server.models.get(body.get("model"))
                if model is None:
                    self.reply(404, {"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                               "type": "NotFoundError", "code": 404}})
                    return
                if self.path.endswith("/chat/completions"):
                    prompt = "\n".join(m["content"] for m in body["messages"])
                    choice = model.complete(prompt, {**body, "logprobs": 1 if body.get("logprobs") else None})
                    choices = [{"index": 0, "message": {"role": "assistant", "content": choice["text"]},
                                "finish_reason": "stop"}]
                    if body.get("logprobs") and choice.get("logprobs"):
                        choices[0]["logprobs"] = {"content": [{"token": t, "logprob": v} for t, v in zip(
                            choice["logprobs"]["tokens"], choice["logprobs"]["token_logprobs"])]}
                    self.reply(200, {"id": "chat", "object": "chat.completion", "created": 0, "model": body["model"],
                                     "choices": choices})
                    return
                asked = body.get("logprobs")
                if isinstance(asked, int) and not isinstance(asked, bool) and asked > server.max_logprobs:
                    self.reply(400, {"error": {"message": f"Requested sample logprobs of {asked}, which is greater "
                                                          f"than max allowed: {server.max_logprobs}"}})
                    return
                prompts = body["prompt"]
                if isinstance(prompts, str) or (prompts and isinstance(prompts[0], int)):
                    prompts = [prompts]
                choices = [{"index": i, **model.complete(p, body)} for i, p in enumerate(prompts)]
                if fault in ("nan logprobs", "null logprobs"):  # a server whose numbers are not there
                    for choice in choices:
                        values = (choice.get("logprobs") or {}).get("token_logprobs") or []
                        values[:] = [float("nan") if fault == "nan logprobs" else None for _ in values]
                self.reply(200, {"id": "cmpl", "object": "text_completion", "created": 0, "model": body["model"],
                                 "choices": choices})

        return Handler


def main(argv: list[str]) -> None:
    """``python tests/openai_server.py serve MODEL --host H --port P [ignored vllm options]``: the
    reference server standing in for ``vllm serve`` (slurm/vllm_incontext.sbatch's test), serving the
    transformers model folder MODEL under the name MODEL."""
    import argparse

    from legalft.models.causal_lm import load_causal_lm

    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args, _ = parser.parse_known_args(argv)
    server = OpenAIServer({args.model: ReferenceModel(*load_causal_lm(args.model))}, port=args.port)
    print(f"serving {args.model} at {server.url}", flush=True)
    server.httpd.serve_forever()


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
