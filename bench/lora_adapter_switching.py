"""Scoring a per-task LoRA run: one base model with its adapters switched, against the base reloaded for
each adapter, side by side.

    LEGALFT_LEGALBENCH_DIR=/path/to/legalbench .venv/bin/python bench/lora_adapter_switching.py \
        [--tasks hearsay abercrombie ...] [--limit 8] [--repeats 5] [--run checkpoints/<a per-task LoRA run>]

Without --run, trains a per-task LoRA run of SmolLM2-135M-Instruct on the tasks' train splits (one
epoch each; the adapters' quality does not matter here) into a temporary folder. Then scores every
adapter on --limit test rows of its task (zero-shot prompts, label scoring, as ``evaluate.py
run=<folder>`` does) two ways: ``SwitchedAdapters`` (the base loaded once, each adapter loaded beside
it, made active, scored, dropped) and the base model and adapter loaded anew for each adapter (PEFT's
``PeftModel.from_pretrained`` on a fresh base, what scoring did one adapter at a time). Each side runs
in its own process, its imports excluded from its time; the sides alternate for --repeats repeats and
the medians are printed with their min-max, for getting each adapter ready (loading, or switching),
for scoring, and in all. Both must give the same scores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from common import in_child, legalbench_root, run_command  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
TASKS = ["hearsay", "abercrombie", "proa", "overruling", "personal_jurisdiction", "diversity_1", "diversity_2",
         "cuad_effective_date", "cuad_insurance", "corporate_lobbying"]
SIDES = ("switched adapters", "base reloaded per adapter")


def train_run(tasks: list[str], limit: int, folder: Path) -> None:
    result = run_command("train.py", "experiment=legalbench_lora", f"data.root={legalbench_root()}",
                        f"data.tasks=[{','.join(tasks)}]", "method.regime=per_task", f"protocol.limit={limit}",
                        "trainer.max_epochs=1", "model.max_length=512", f"hydra.run.dir={folder}", timeout=7200)
    if result.returncode != 0:
        raise SystemExit(f"training the per-task run failed:\n{result.stderr[-3000:]}")


def score_run(run_dir: str, side: str, limit: int, queue) -> None:
    """Every adapter of the run scored on ``limit`` test rows of its task; (seconds, scores) through ``queue``."""
    from legalft.llm.engine import LocalEngine
    from legalft.llm.prompts import PromptBuilder
    from legalft.llm.scoring import score_tasks
    from legalft.methods.lora.adapters import load_adapter
    from legalft.methods.lora.scoring import SwitchedAdapters
    from legalft.models.causal_lm import to_accelerator
    from legalft.runs.context import RunContext
    from legalft.runs.folder import RunFolder
    from legalft.runs.saved_config import recorded_method

    run = RunFolder(run_dir)
    ctx, method = RunContext.for_saved_run(run, {"limit": limit}), recorded_method(run)
    tasks = ctx.test_tasks(method.data_to_load(ctx.data))
    adapters = method.plan(tasks, ctx.seed)
    switched = SwitchedAdapters(run, ctx.model, ctx.lora.quantize)
    scores, loading, scoring = {}, 0.0, 0.0
    for adapter in adapters:
        start = time.perf_counter()
        if side == SIDES[0]:
            engine = switched.engine_for(adapter)
        else:
            model, tokenizer = load_adapter(ctx.model, ctx.lora, run.adapter(adapter.name))
            engine = LocalEngine(to_accelerator(model.eval()), tokenizer)
        loading += time.perf_counter() - start
        start = time.perf_counter()
        task_scores, _ = score_tasks([t for t in adapter.scored if t.test], engine, ctx.prompt, False, ctx.seed,
                                     ctx.metric_mode, builder=PromptBuilder("zero_shot"))
        scoring += time.perf_counter() - start
        scores.update(task_scores)
    queue.put(({"loading": loading, "scoring": scoring, "total": loading + scoring}, scores))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=TASKS)
    parser.add_argument("--limit", type=int, default=4, help="test rows scored per task")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--run", help="an existing per-task LoRA run folder (else one is trained)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = args.run or str(Path(scratch) / "run")
        if not args.run:
            train_run(args.tasks, args.limit, Path(run_dir))
        seconds = {side: [] for side in SIDES}
        scores = {}
        for _ in range(args.repeats):  # interleaved, so drifts in machine speed hit both sides
            for side in SIDES:
                took, scores[side] = in_child(score_run, run_dir, side, args.limit)
                seconds[side].append(took)
    if scores[SIDES[0]] != scores[SIDES[1]]:
        raise SystemExit(f"the sides' scores differ:\n{scores[SIDES[0]]}\n{scores[SIDES[1]]}")
    n = sum(s["n"] for s in scores[SIDES[0]].values())
    print(f"SmolLM2-135M per-task LoRA run: {len(scores[SIDES[0]])} adapters, {n} test rows (zero-shot label scoring), "
          f"{args.repeats} interleaved repeats; seconds, median (min-max)")
    print(f"{'':28}{'adapters ready':>20}{'scoring':>20}{'total':>20}")
    for side in SIDES:
        cells = [f"{statistics.median(t):.1f} ({min(t):.1f}-{max(t):.1f})"
                 for t in ([r[part] for r in seconds[side]] for part in ("loading", "scoring", "total"))]
        print(f"{side:28}" + "".join(f"{c:>20}" for c in cells))
    for part, what in (("loading", "getting the adapters ready"), ("total", "scoring the run")):
        ratios = sorted(b[part] / a[part] for a, b in zip(seconds[SIDES[0]], seconds[SIDES[1]]))
        print(f"{what}: switched adapters {statistics.median(ratios):.1f}x faster "
              f"(per-repeat {ratios[0]:.1f}-{ratios[-1]:.1f})")
    print("identical scores on every task")


if __name__ == "__main__":
    main()
