"""In-context label scoring against lm-evaluation-harness's, side by side, on LegalBench tasks.

    LEGALFT_LEGALBENCH_DIR=/path/to/legalbench .venv/bin/python bench/label_scoring_vs_lm_eval.py \
        [--tasks hearsay overruling proa] [--limit 40]

Both score the same published base prompts (no chat template on either side) with the same model
object, SmolLM2-135M-Instruct on the CPU: this project's ``label_log_likelihoods`` (the shared few-shot
prefix run once, each prompt's remainder once, the labels as short continuations), and lm-eval's
``HFLM.loglikelihood`` on one ``(prompt, " " + label)`` request per label, batched as lm-eval batches
them. Prints examples per second, the share of rows where the two pick the same label, and balanced
accuracy. Then generation: greedy answers stopped at the first newline, this project's ``generate``
against lm-eval's ``generate_until`` with the same stop, on the same prompts: examples per second and
the share of identical outputs. Needs the bench extra: pip install -e ".[bench]".
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))
from common import legalbench_root, offline_smollm2  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def lm_eval_choices(lm, prompts: list[str], labels: list[str]) -> list[str]:
    from lm_eval.api.instance import Instance

    requests = [Instance(request_type="loglikelihood", doc={}, arguments=(prompt, " " + label), idx=j)
                for prompt in prompts for j, label in enumerate(labels)]
    scores = [logprob for logprob, _ in lm.loglikelihood(requests, disable_tqdm=True)]
    per_prompt = [scores[i * len(labels):(i + 1) * len(labels)] for i in range(len(prompts))]
    return [labels[max(range(len(labels)), key=row.__getitem__)] for row in per_prompt]


def lm_eval_generations(lm, prompts: list[str], max_new_tokens: int) -> list[str]:
    from lm_eval.api.instance import Instance

    requests = [Instance(request_type="generate_until", doc={}, idx=0,
                         arguments=(prompt, {"until": ["\n"], "max_gen_toks": max_new_tokens, "do_sample": False}))
                for prompt in prompts]
    return [text.split("\n")[0].strip() for text in lm.generate_until(requests, disable_tqdm=True)]


def compare_generation(model, tokenizer, lm, tasks, builder, args) -> None:
    """Greedy answers stopped at the first newline: this project's ``generate`` against lm-eval's
    ``generate_until`` with the same stop, on the same prompts and model object."""
    from legalft.incontext.answers import generate

    print(f"\n{'generation':14}{'n':>4}  {'legalft ex/s':>13}  {'lm-eval ex/s':>13}{'same output':>13}{'speed-up':>10}")
    seconds, same, n = {"legalft": 0.0, "lm-eval": 0.0}, 0, 0
    for task in tasks:
        prompts = builder.build(task, task.test[: args.generate_limit])
        start = time.perf_counter()
        ours = generate(model, tokenizer, prompts, max_new_tokens=args.max_new_tokens, batch_size=args.batch_size)
        ours_s = time.perf_counter() - start
        start = time.perf_counter()
        theirs = lm_eval_generations(lm, prompts, args.max_new_tokens)
        theirs_s = time.perf_counter() - start
        agree = sum(a == b for a, b in zip(ours, theirs))
        print(f"{task.spec.name:14}{len(prompts):>4}  {len(prompts) / ours_s:>13.2f}  {len(prompts) / theirs_s:>13.2f}"
              f"{agree / len(prompts):>13.1%}{theirs_s / ours_s:>9.1f}x")
        seconds["legalft"] += ours_s
        seconds["lm-eval"] += theirs_s
        same += agree
        n += len(prompts)
    print(f"\nall tasks: legalft {n / seconds['legalft']:.2f} ex/s, lm-eval {n / seconds['lm-eval']:.2f} ex/s "
          f"({seconds['lm-eval'] / seconds['legalft']:.1f}x); the same output on {same / n:.1%} of {n} rows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["hearsay", "overruling", "proa"])
    parser.add_argument("--limit", type=int, default=40, help="test examples per task")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--generate-limit", type=int, default=20, help="test examples per task for generation")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    args = parser.parse_args()

    from lm_eval.models.huggingface import HFLM

    from legalft.data.legalbench import LegalBenchSource
    from legalft.evaluation.metrics import legalbench_scores
    from legalft.incontext.answers import label_log_likelihoods
    from legalft.incontext.prompts import PromptBuilder

    root = legalbench_root()
    model, tokenizer = offline_smollm2()  # the GPU when there is one (bench/gpu_check.sh)
    lm = HFLM(pretrained=model, tokenizer=tokenizer, device=str(model.device), batch_size=args.batch_size)
    builder = PromptBuilder("base_prompt")

    print(f"{'task':14}{'n':>4}  {'legalft ex/s':>13}{'bal.acc':>9}  {'lm-eval ex/s':>13}{'bal.acc':>9}"
          f"{'same label':>12}{'speed-up':>10}")
    seconds, same, n = {"legalft": 0.0, "lm-eval": 0.0}, 0, 0
    tasks = LegalBenchSource(root=root, tasks=args.tasks).load()
    for task in tasks:
        examples = task.test[: args.limit]
        prompts = builder.build(task, examples)
        gold, labels = [e.labels[0] for e in examples], list(task.spec.labels)

        start = time.perf_counter()
        likelihoods = label_log_likelihoods(model, tokenizer, prompts, labels, batch_size=args.batch_size)
        ours = [labels[int(i)] for i in likelihoods.argmax(1)]
        ours_s = time.perf_counter() - start
        start = time.perf_counter()
        theirs = lm_eval_choices(lm, prompts, labels)
        theirs_s = time.perf_counter() - start

        agree = sum(a == b for a, b in zip(ours, theirs))
        acc = {name: legalbench_scores(task.spec.name, "balanced_accuracy", gold, choice)["balanced_accuracy"]
               for name, choice in (("legalft", ours), ("lm-eval", theirs))}
        print(f"{task.spec.name:14}{len(examples):>4}  {len(examples) / ours_s:>13.2f}{acc['legalft']:>9.3f}  "
              f"{len(examples) / theirs_s:>13.2f}{acc['lm-eval']:>9.3f}{agree / len(examples):>12.1%}"
              f"{theirs_s / ours_s:>9.1f}x")
        seconds["legalft"] += ours_s
        seconds["lm-eval"] += theirs_s
        same += agree
        n += len(examples)
    print(f"\nall tasks: legalft {n / seconds['legalft']:.2f} ex/s, lm-eval {n / seconds['lm-eval']:.2f} ex/s "
          f"({seconds['lm-eval'] / seconds['legalft']:.1f}x); the same label on {same / n:.1%} of {n} rows")
    compare_generation(model, tokenizer, lm, tasks, builder, args)


if __name__ == "__main__":
    main()
