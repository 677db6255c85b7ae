"""What the benchmarks share: running one side in its own process, its peak memory, the LegalBench
folder, the offline SmolLM2, and repeats run interleaved and stated as median (min-max)."""

from __future__ import annotations

import multiprocessing as mp
import resource


def peak_memory_mb() -> float:
    """Peak memory of this process: allocated on a GPU, resident on the CPU."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def in_child(target, *args) -> dict:
    """``target(*args, queue)`` in a fresh process, so its memory and imports are its own."""
    context = mp.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=target, args=(*args, queue))
    process.start()
    process.join()
    if process.exitcode != 0:
        raise SystemExit(f"{getattr(target, '__name__', target)} {args[:1]} failed (exit code {process.exitcode}); its error is above")
    return queue.get()


def legalbench_root(need: str = "") -> str:
    """``LEGALFT_LEGALBENCH_DIR``, or an exit that says to set it (``need``: what the caller runs)."""
    import os

    root = os.environ.get("LEGALFT_LEGALBENCH_DIR")
    if not root:
        raise SystemExit(f"{need}set LEGALFT_LEGALBENCH_DIR to a LegalBench folder (with tasks/)")
    return root


def offline_smollm2(on_accelerator: bool = True):
    """(model, tokenizer): the offline SmolLM2-135M-Instruct, on the GPU when there is one."""
    from legalft.models.causal_lm import load_causal_lm, offline_smollm2_gguf, to_accelerator

    model, tokenizer = load_causal_lm(offline_smollm2_gguf())
    return (to_accelerator(model) if on_accelerator else model), tokenizer


def interleaved(sides, run, repeats: int) -> dict[str, list]:
    """``run(side, repeat)`` for every side in every repeat, the sides' order reversed every other repeat,
    so that a drift in the machine's speed falls on every side alike."""
    sides = list(sides)
    results = {side: [] for side in sides}
    for repeat in range(repeats):
        for side in sides if repeat % 2 == 0 else reversed(sides):
            results[side].append(run(side, repeat))
    return results


def median_range(values, fmt: str = "{:.2f}") -> str:
    """``median (min-max)`` of ``values``: how the tables state a repeated measurement."""
    import statistics

    values = list(values)
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def ratios(results: dict[str, list[dict]], numerator: str, denominator: str, key: str) -> list[float]:
    """Per repeat, ``numerator``'s ``key`` over ``denominator``'s (the repeats ran interleaved, so pairwise)."""
    return [a[key] / b[key] for a, b in zip(results[numerator], results[denominator], strict=True)]
