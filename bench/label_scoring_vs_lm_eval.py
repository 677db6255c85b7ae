"""In-context label scoring against lm-evaluation-harness's, side by side, on LegalBench tasks.

    LEGALFT_LEGALBENCH_DIR=/path/to/legalbench .venv/bin/python bench/label_scoring_vs_lm_eval.py \
        [--tasks hearsay overruling proa] [--limit 40] [--generate-limit 20] [--repeats 5] [--parts score generate]

Both score the same published base prompts (no chat template on either side) with the same model
object, SmolLM2-135M-Instruct on the CPU: this project's ``label_log_likelihoods`` (the shared few-shot
prefix run once, each prompt's remainder once, the labels as short continuations), and lm-eval's
``HFLM.loglikelihood`` on one ``(prompt, " " + label)`` request per label, batched as lm-eval batches
them. Prints examples per second, the share of rows where the two pick the same label, and balanced
accuracy. Then generation: greedy answers stopped at the first newline, this project's ``generate``
against lm-eval's ``generate_until`` with the same stop, on the same prompts: examples per second and
the share of identical outputs. The two sides alternate on each task for --repeats repeats; speeds are
medians, speed-ups the median (min-max) of the per-repeat ratios. Needs the bench extra:
pip install -e ".[bench]".
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}x ({min(values):.1f}-{max(values):.1f})"


def side_by_side(kind: str, tasks, prompts_of, ours_fn, theirs_fn, repeats: int, extra=None) -> None:
    """Each task's prompts answered by both sides, alternating, ``repeats`` times: examples per second
    (medians), the share of rows where the two agree, and the speed-up's median (min-max) over repeats."""
    print(f"\n{kind:14}{'n':>4}  {'legalft ex/s':>13}  {'lm-eval ex/s':>13}{'same':>9}   speed-up, median (min-max)")
    totals = {"legalft": [0.0] * repeats, "lm-eval": [0.0] * repeats}
    same = n = 0
    for task in tasks:
        prompts = prompts_of(task)
        seconds = {"legalft": [], "lm-eval": []}
        for repeat in range(repeats):  # interleaved, so drifts in machine speed hit both sides
            for side, answer in (("legalft", ours_fn), ("lm-eval", theirs_fn)):
                start = time.perf_counter()
                answers = answer(task, prompts)
                seconds[side].append(time.perf_counter() - start)
                totals[side][repeat] += seconds[side][-1]
                if side == "legalft":
                    ours = answers
                else:
                    theirs = answers
        agree = sum(a == b for a, b in zip(ours, theirs))
        ratios = [t / o for o, t in zip(seconds["legalft"], seconds["lm-eval"])]
        print(f"{task.spec.name:14}{len(prompts):>4}  {len(prompts) / statistics.median(seconds['legalft']):>13.2f}  "
              f"{len(prompts) / statistics.median(seconds['lm-eval']):>13.2f}{agree / len(prompts):>9.1%}   {spread(ratios)}"
              + (f"   {extra(task, ours, theirs)}" if extra else ""))
        same += agree
        n += len(prompts)
    ratios = [t / o for o, t in zip(totals["legalft"], totals["lm-eval"])]
    print(f"all tasks: legalft {n / statistics.median(totals['legalft']):.2f} ex/s, lm-eval "
          f"{n / statistics.median(totals['lm-eval']):.2f} ex/s: {spread(ratios)} over {repeats} interleaved repeats; "
          f"the same answer on {same / n:.1%} of {n} rows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["hearsay", "overruling", "proa"])
    parser.add_argument("--limit", type=int, default=40, help="test examples per task")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--generate-limit", type=int, default=20, help="test examples per task for generation")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--parts", nargs="+", choices=["score", "generate"], default=["score", "generate"],
                        help="label scoring, generation, or both")
    args = parser.parse_args()

    from lm_eval.models.huggingface import HFLM

    from legalft.data.legalbench import LegalBenchSource
    from legalft.evaluation.metrics import legalbench_scores
    from legalft.llm.answers import generate, label_log_likelihoods
    from legalft.llm.prompts import PromptBuilder

    root = legalbench_root()
    model, tokenizer = offline_smollm2()  # the GPU when there is one (bench/gpu_check.sh)
    lm = HFLM(pretrained=model, tokenizer=tokenizer, device=str(model.device), batch_size=args.batch_size)
    builder = PromptBuilder("base_prompt")
    tasks = LegalBenchSource(root=root, tasks=args.tasks).load()

    def ours_labels(task, prompts):
        labels = list(task.spec.labels)
        likelihoods = label_log_likelihoods(model, tokenizer, prompts, labels, batch_size=args.batch_size)
        return [labels[int(i)] for i in likelihoods.argmax(1)]

    def balanced_accuracy(task, ours, theirs):
        gold = [e.labels[0] for e in task.test[: len(ours)]]
        return "bal.acc " + " / ".join(
            f"{legalbench_scores(task.spec.name, 'balanced_accuracy', gold, c)['balanced_accuracy']:.3f}"
            for c in (ours, theirs))

    print(f"SmolLM2-135M-Instruct, LegalBench base prompts, batch size {args.batch_size}")
    if "score" in args.parts:
        side_by_side("label scoring", tasks, lambda t: builder.build(t, t.test[: args.limit]), ours_labels,
                     lambda t, p: lm_eval_choices(lm, p, list(t.spec.labels)), args.repeats, balanced_accuracy)
    if "generate" in args.parts:
        side_by_side("generation", tasks, lambda t: builder.build(t, t.test[: args.generate_limit]),
                     lambda t, p: generate(model, tokenizer, p, max_new_tokens=args.max_new_tokens,
                                           batch_size=args.batch_size),
                     lambda t, p: lm_eval_generations(lm, p, args.max_new_tokens), args.repeats)


if __name__ == "__main__":
    main()
