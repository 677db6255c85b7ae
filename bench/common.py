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


# The quick start's MiniLM settings (experiment=quickstart, conf/windows/minilm.yaml), for the PROSLEX benches
MINILM_WINDOWS = {"max_length": 256, "stride": 128, "max_chunks": 8, "last_window": "end"}


def minilm_batches(seed: int = 0):
    """How ``method=encoder`` batches documents (conf/datamodule/encoder.yaml): two a training step."""
    from functools import partial

    from legalft.data.encoder_datamodule import EncoderDataModule

    return partial(EncoderDataModule, batch_size=2, eval_batch_size=16, seed=seed)


def fine_tuned_minilm(train, task, epochs: int, seed: int, evidence_weight: float = 0.0):
    """(module, tokenizer): the shipped MiniLM fine-tuned on ``train`` (examples of the multi-label ``task``) as
    ``method=encoder`` trains it at the quick start's settings (mean-pooled windows, learning rates 1.5e-4 and 1e-3,
    ``pos_weight=auto``, two documents a step), for ``epochs``; ``evidence_weight``: ``method.evidence_weight``
    (the experts' sentences drawn by the framework's own ``build_datamodule``)."""
    import lightning as L

    from legalft.kit.document_steps import build_datamodule, positive_weights
    from legalft.models.encoder_module import EncoderClassifierModule
    from legalft.models.pretrained import load_tokenizer, offline_minilm_path

    L.seed_everything(seed, workers=True)
    path = offline_minilm_path()
    module = EncoderClassifierModule(path, list(task.labels), chunk_embedding="mean", lr=1.5e-4, head_lr=1e-3,
                                     pos_weight=positive_weights(train, task.labels), evidence_weight=evidence_weight,
                                     **MINILM_WINDOWS)
    tokenizer = load_tokenizer(path)
    data = build_datamodule(minilm_batches(seed), module, tokenizer, task, train, [], [])
    L.Trainer(max_epochs=epochs, accelerator="cpu", logger=False, enable_checkpointing=False,
              enable_progress_bar=False, limit_val_batches=0, enable_model_summary=False).fit(module, data)
    return module, tokenizer


def minilm_probabilities(module, tokenizer, task, examples):
    """``module``'s probabilities for ``examples`` (documents x labels, in order), as a run scores its test split."""
    from legalft.kit.document_steps import build_datamodule, predict

    return predict(module, build_datamodule(minilm_batches(), module, tokenizer, task, [], [], examples), "test")


def proslex_label_map() -> dict:
    """The shipped PROSLEX label map (conf/data/proslex.yaml): codes, labels, descriptions."""
    from pathlib import Path

    import yaml

    return yaml.safe_load((Path(__file__).resolve().parents[1] / "conf" / "data" / "proslex.yaml").read_text())[
        "label_map"]


def proslex_development_documents():
    """PROSLEX's validation split (``LEGALFT_PROSLEX_DIR``), the development data's labelled documents."""
    import os
    from pathlib import Path

    from legalft.data.proslex import collection_files, read_split

    folder = Path(os.environ.get("LEGALFT_PROSLEX_DIR", "/nonexistent")) / "validation"
    if not folder.is_dir():
        raise SystemExit("set LEGALFT_PROSLEX_DIR to the PROSLEX development data (with validation/)")
    return read_split(collection_files(folder, "data"), {c: e["label"] for c, e in proslex_label_map().items()})
