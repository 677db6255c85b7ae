"""What the benchmarks share: running one side in its own process, and its peak memory."""

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
