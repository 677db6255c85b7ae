"""What the benchmarks share: running one side in its own process, its peak memory, the LegalBench
folder, the offline SmolLM2, and repeats run interleaved and stated as median (min-max)."""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]  # the clone


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


def run_command(script: str, *overrides: str, timeout: float = 3600):
    """The clone's ``script`` (train.py, evaluate.py, ...) with Hydra ``overrides``, in a process of its own, offline:
    the completed process, its output captured."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, str(ROOT / script), *overrides], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "HF_HUB_OFFLINE": "1"})


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


# --- the encoder benches' documents and the project's side of them ----------------------------------------------
def load_documents(seed: int):
    """(what the documents are, their train/held-out splits): the PROSLEX sample, or the real validation split."""
    from omegaconf import OmegaConf

    from legalft.data.proslex import ProslexSource
    from legalft.data.protocol import Protocol

    label_map = OmegaConf.to_container(OmegaConf.load(ROOT / "conf/data/proslex.yaml").label_map)
    real = Path(os.environ.get("LEGALFT_PROSLEX_DIR", "/nonexistent")) / "validation"
    if real.is_dir():
        (splits,) = Protocol(val_fraction=0.2, seed=seed).applied(ProslexSource(label_map, train_path=str(real)).load(), True)
        return "PROSLEX validation split (80/20)", splits
    (splits,) = Protocol(seed=seed).applied(ProslexSource(label_map, root=str(ROOT / "data/samples/proslex_sample")).load(), True)
    return "project sample (Train/Validation)", splits


def held_out_macro_f1(classifier_logits, splits, targets=None) -> float:
    """Macro-F1 at 0.5 of logits in the held-out documents' order (or in the order of ``targets``)."""
    import numpy as np

    from legalft.evaluation.metrics import score_probabilities

    probs = classifier_logits.sigmoid().numpy()
    if targets is None:
        targets = np.array([[label in e.labels for label in splits.spec.labels] for e in splits.val], dtype=int)
    return score_probabilities(probs, targets, splits.spec.labels, multi_label=True)["macro_f1"]


def matmul_parameters(module) -> int:
    """Encoder weights that take part in matmuls (embedding lookups cost no FLOPs)."""
    return sum(p.numel() for name, p in module.encoder.named_parameters() if not name.startswith("embeddings."))


def train_encoder_side(args, queue) -> None:
    import lightning as L
    import torch
    from lightning.pytorch.callbacks import Timer

    from legalft.data.encoder_datamodule import EncoderDataModule
    from legalft.kit.document_steps import predict
    from legalft.models.encoder_module import EncoderClassifierModule
    from legalft.models.pretrained import load_tokenizer, offline_minilm_path

    torch.set_num_threads(args.threads)
    L.seed_everything(args.seed, workers=True)
    _, splits = load_documents(args.seed)
    tokenizer = load_tokenizer(offline_minilm_path())
    module = EncoderClassifierModule(
        offline_minilm_path(), list(splits.spec.labels), max_length=args.max_length, stride=args.stride,
        max_chunks=args.max_chunks, last_window="end", pooling="max", chunk_embedding="cls", lr=args.lr,
        head_lr=None, warmup_ratio=0.1, weight_decay=0.01,
    )
    datamodule = EncoderDataModule(
        splits.spec, splits.train, splits.val, None, tokenizer, args.max_length, args.stride, args.max_chunks,
        batch_size=args.batch_size, last_window="end", seed=args.seed,
    )
    counted = {"real": 0, "computed": 0}

    class CountTokens(L.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            counted["real"] += int(batch["attention_mask"].sum())
            counted["computed"] += batch["attention_mask"].numel()

    timer = Timer()
    trainer = L.Trainer(
        max_epochs=args.epochs, accelerator="auto", devices=1, precision=getattr(args, "precision", "32-true"),
        gradient_clip_val=1.0,
        logger=False, enable_checkpointing=False, enable_progress_bar=False, limit_val_batches=0,
        callbacks=[timer, CountTokens()], enable_model_summary=False,
    )
    trainer.fit(module, datamodule=datamodule)
    seconds = timer.time_elapsed("train")
    logits = torch.logit(torch.from_numpy(predict(module, datamodule, "val")).clamp(1e-7, 1 - 1e-7))
    queue.put({
        "seconds": seconds,
        "docs_per_s": len(splits.train) * args.epochs / seconds,
        "padding": 1 - counted["real"] / counted["computed"],
        "tokens_computed": counted["computed"],
        "params": matmul_parameters(module.model),
        "peak_mb": peak_memory_mb(),
        "macro_f1": held_out_macro_f1(logits, splits),
    })


# --- the LoRA benches: SmolLM2 as a plain folder, LegalBench train splits, the project's side ------------------------
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def dequantised_copy(folder: Path) -> Path:
    """SmolLM2 as a plain transformers folder (GGUF-loaded models refuse to save until told otherwise)."""
    if (folder / "config.json").exists():
        return folder
    model, tokenizer = offline_smollm2(on_accelerator=False)
    model.hf_quantizer = None
    del model.config.quantization_config
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


LEGALBENCH_TASKS = ["hearsay", "abercrombie", "proa", "overruling", "ucc_v_common_law", "personal_jurisdiction",
                 "successor_liability", "international_citizenship_questions"]


def lora_examples(args, tokenizer):
    from omegaconf import OmegaConf

    from legalft.data.legalbench import LegalBenchSource
    from legalft.methods.lora.fitting import training_examples

    tasks = LegalBenchSource(root=legalbench_root(), tasks=args.tasks, splits=["train"]).load()
    return training_examples(tasks, tokenizer, chat=False, max_length=args.max_length,
                             prompt_cfg=OmegaConf.create({"explain": False, "max_input_words": 2000}))


def lora_adapted_model(args):
    import torch

    from legalft.models.causal_lm import load_causal_lm
    from legalft.models.lora import add_lora

    torch.manual_seed(args.seed)
    model, tokenizer = load_causal_lm(str(args.model_dir))
    return add_lora(model, 16, 32, args.lora_dropout, LORA_TARGETS, args.gradient_checkpointing, quantized=False), tokenizer


def training_set_loss(model, data, pad_token_id: int, batch_size: int) -> float:
    """Mean answer-token loss of the trained model over every training example, in eval mode: the
    quality both sides reached, independent of the order their batches came in."""
    import torch

    from legalft.data.instruction_data import collate
    from legalft.models.lora import answer_token_loss, predicts_answer

    model.eval()
    device = next(model.parameters()).device
    total, tokens = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(data), batch_size):
            batch = {k: v.to(device) for k, v in collate(data[start : start + batch_size], pad_token_id).items()}
            total += float(answer_token_loss(model, batch))
            tokens += int(predicts_answer(batch["labels"]).sum())
    return total / tokens


def train_lora_side(args, queue) -> None:
    import lightning as L
    import torch
    from lightning.pytorch.callbacks import Timer

    from legalft.data.instruction_data import InstructionDataModule
    from legalft.models.lora import CausalLMModule

    torch.set_num_threads(args.threads)
    model, tokenizer = lora_adapted_model(args)
    data = lora_examples(args, tokenizer)
    L.seed_everything(args.seed)
    module = CausalLMModule(model, lr=args.lr, weight_decay=0.0, warmup_ratio=0.1)
    losses = []

    class EpochLoss(L.Callback):
        def on_train_epoch_end(self, trainer, pl_module):
            losses.append(float(trainer.callback_metrics["train/loss_epoch"]))

    timer = Timer()
    trainer = L.Trainer(accelerator="auto", devices=1, precision="bf16-mixed" if args.bf16 else "32-true",
                        max_epochs=args.epochs,
                        gradient_clip_val=1.0, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, callbacks=[timer, EpochLoss()])
    trainer.fit(module, datamodule=InstructionDataModule(data, tokenizer.pad_token_id, args.batch_size, seed=args.seed,
                                                         packing=args.packing))
    seconds = timer.time_elapsed("train")
    tokens = sum(len(e.input_ids) for e in data) * args.epochs
    queue.put({"seconds": seconds, "tokens_per_s": tokens / seconds, "peak_mb": peak_memory_mb(),
               "final_loss": losses[-1], "examples": len(data),
               "train_set_loss": training_set_loss(module.model, data, tokenizer.pad_token_id, args.batch_size)})


def lora_arguments(description: str = "") -> argparse.ArgumentParser:
    """The LoRA benches' settings: bench/lora_vs_trl.py's, and how bench/cpu_precision.py configures its LoRA runs, so the
    two cannot drift apart."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--tasks", nargs="+", default=LEGALBENCH_TASKS)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lora-dropout", type=float, default=0.05,
                        help="0: no random masks, so the two sides' losses differ only by their arithmetic")
    parser.add_argument("--gradient-checkpointing", action="store_true", help="on both sides (TRL's default)")
    parser.add_argument("--packing", action="store_true", help="padding-free batches on both sides")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast on both sides (TRL's default)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--model-dir", type=Path, default=Path("/tmp/legalft-bench-smollm2"))
    return parser


# --- report benches: runs of fake answers ---------------------------------------------------------------------------
NAMES = ["Acme Corp", "Beta LLC", "Gamma Inc", "Delta Ltd"]


EXCEPTIONS = ["express agreement", "fraudulent conveyance", "de facto merger", "mere continuation"]


def fake_answers(metric: str, task_type: str, n: int, rng: np.random.Generator):
    """(gold, a wrong answer for each) in the form the task's metric reads."""
    if metric == "balanced_accuracy":
        k = int(task_type.split("-")[0]) if task_type.split("-")[0].isdigit() else 2
        classes = ["Yes", "No"] if k == 2 else [f"class {c}" for c in range(k)]
        gold = list(rng.choice(classes, n))
        # a third of the wrong answers are not a label at all, as generations often are
        return gold, [classes[(classes.index(g) + 1) % k] if rng.random() < 0.67 else "I cannot tell" for g in gold]
    if metric == "within_10pct":
        gold = [f"${v:,}" for v in rng.integers(1_000, 100_000, n)]
        return gold, ["$1" for _ in gold]
    if metric == "f1":
        gold = [", ".join(rng.choice(EXCEPTIONS if rng.random() < 0.5 else NAMES, 2, replace=False)) for _ in range(n)]
        return gold, ["none" for _ in gold]
    gold = [f"term {v}" for v in rng.integers(0, 50, n)]  # stemmed_match, contains
    return gold, ["nothing" for _ in gold]


def write_runs(root: Path, min_examples: int, max_examples: int, seed: int = 0, tasks: int | None = None,
               seeds: int = 1) -> list[Path]:
    """Two methods' run folders (in-context, and LoRA with ``seeds`` seeds) scored on every LegalBench
    task, or on the first ``tasks`` of them."""
    from legalft.evaluation.metrics import legalbench_scores
    from legalft.data.legalbench import catalog as legalbench_catalog

    rng = np.random.default_rng(seed)
    catalog = legalbench_catalog()
    sizes = {task: int(np.exp(rng.uniform(np.log(min_examples), np.log(max_examples)))) for task in catalog}
    answers = {task: fake_answers(spec.metric, spec.task_type, sizes[task], rng)
               for task, spec in list(catalog.items())[:tasks] if spec.metric != "manual"}
    folders = []
    sides = [("incontext", 0.65, {"prompt": "base_prompt", "k": 0, "answer": "generate"}, 0)]
    sides += [("lora", 0.80, {"regime": "pooled"}, s) for s in range(seeds)]
    for method, right, extra, run_seed in sides:
        right = right + 0.05 * rng.standard_normal(len(answers)).clip(-2, 2)  # tasks differ in difficulty
        folder = root / f"{method}_{run_seed}"
        folder.mkdir(parents=True)
        tasks, records = {}, []
        for (task, (gold, wrong)), task_right in zip(answers.items(), right):
            predicted = [g if rng.random() < task_right else w for g, w in zip(gold, wrong)]
            tasks[task] = {**legalbench_scores(task, catalog[task].metric, gold, predicted),
                           "category": catalog[task].category}
            records += [{"task": task, "id": str(i), "gold": g, "prediction": p}
                        for i, (g, p) in enumerate(zip(gold, predicted))]
        run = {"method": method, "model": "fake", "seed": run_seed, "metric_mode": "paper", "comparable": True, **extra}
        (folder / "metrics.json").write_text(json.dumps({"run": run, "tasks": tasks}))
        (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        folders.append(folder)
    return folders
