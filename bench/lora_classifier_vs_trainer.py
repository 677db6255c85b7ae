"""An LLM classification head with LoRA: this project's ``method=lora_classifier`` against the recipe a user
of transformers writes, side by side.

    LEGALFT_PROSLEX_DIR=/path/to/proslex .venv/bin/python bench/lora_classifier_vs_trainer.py \
        [--epochs 1] [--batch-size 8] [--max-length 256] [--seeds 0 1 2 3 4] [--model-dir DIR]

On a CUDA GPU every side trains there (fp32, PyTorch's SDPA attention) and peak memory is the GPU's
(``torch.cuda.max_memory_allocated``); on the CPU it is the process's peak resident memory.

1. legalft: ``new_classifier`` (SmolLM2 as ``AutoModelForSequenceClassification``, peft LoRA with task type
   ``SEQ_CLS``) in ``LlmClassifierModule`` under a Lightning Trainer, documents batched by
   ``EncoderDataModule`` (each document's first window, batches grouped by length, padded to the longest
   window of the batch).
2. transformers' ``Trainer`` as its documentation shows it: the same model built the same way
   (``AutoModelForSequenceClassification`` with ``problem_type="multi_label_classification"``, peft
   ``get_peft_model`` with the same ``LoraConfig``), the documents tokenized with truncation at the same
   length, ``DataCollatorWithPadding`` (dynamic padding), random batch order; and the same with the
   Trainer's length-grouped sampling.

Same model (SmolLM2-135M-Instruct, the offline GGUF file saved once as a transformers folder both load, or
``--model-dir``: any causal LM's transformers folder),
same data (PROSLEX's validation split, 80% to train, 20% held out, multi-label; the project's sample
when LEGALFT_PROSLEX_DIR is not set), same initial weights (seed), LoRA rank 16, alpha 32, dropout 0.05 on
every projection, same learning rate for adapters and head, AdamW with 10% linear warm-up and decay,
clipping at 1.0, batch size, epochs, fp32, thresholds at 0.5 on both sides. Each side runs in its own
process, so peak memory is its own; each seed is one repeat, the sides' order reversed every other
repeat; the table prints median (min-max). Training documents/s count the training loop only (model
loading excluded on both sides). Needs the llm extra (peft), as the method does.

Both sides run the same forward and backward per token; what differs is how many tokens a batch holds.
Batches grouped by length hold documents of similar length, so little padding is computed; the
documented recipe's random batches are padded to their longest document. Grouping saves most where
documents are shorter than ``--max-length`` and vary in length (the project's sample: most documents
80-180 tokens, a few near 900); where every document fills its window there is no padding to save.
The Trainer's own switch for the same grouping is ``train_sampling_strategy="group_by_length"``
(transformers' ``LengthGroupedSampler``): the third column, the Trainer at its best.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from common import in_child, interleaved, median_range, peak_memory_mb, ratios  # noqa: E402
from common import LORA_TARGETS, dequantised_copy, held_out_macro_f1, load_documents  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def configs(args):
    from omegaconf import OmegaConf

    model_cfg = OmegaConf.create({"pretrained": str(args.model_dir), "dtype": "float32", "pad_token": None})
    lora_cfg = OmegaConf.create({"r": 16, "alpha": 32, "dropout": 0.05, "target_modules": LORA_TARGETS, "quantize": "none"})
    return model_cfg, lora_cfg


def run_legalft(args, queue) -> None:
    import lightning as L
    import torch
    from lightning.pytorch.callbacks import Timer

    from legalft.data.encoder_datamodule import EncoderDataModule
    from legalft.kit.document_steps import predict
    from legalft.methods.lora_classifier import new_classifier
    from legalft.models.llm_classifier import LlmClassifierModule

    torch.set_num_threads(args.threads)
    L.seed_everything(args.seed, workers=True)
    _, splits = load_documents(args.seed)
    labels = list(splits.spec.labels)
    model, tokenizer = new_classifier(*configs(args), labels)
    module = LlmClassifierModule(model, labels, multi_label=True, max_length=args.max_length, stride=16, max_chunks=1,
                                 lr=args.lr, head_lr=None, weight_decay=0.0, warmup_ratio=0.1)
    datamodule = EncoderDataModule(splits.spec, splits.train, splits.val, None, tokenizer, args.max_length, 16, 1,
                                   batch_size=args.batch_size, eval_batch_size=args.batch_size, seed=args.seed)
    timer = Timer()
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="gpu" if torch.cuda.is_available() else "cpu", devices=1, precision="32-true", gradient_clip_val=1.0,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False, limit_val_batches=0,
                        callbacks=[timer], enable_model_summary=False)
    trainer.fit(module, datamodule=datamodule)
    seconds, trained_mb = timer.time_elapsed("train"), peak_memory_mb()
    probs = torch.from_numpy(predict(module, datamodule, "val")).clamp(1e-7, 1 - 1e-7)
    queue.put({"seconds": seconds, "docs_per_s": len(splits.train) * args.epochs / seconds,
               "train_peak_mb": trained_mb, "peak_mb": peak_memory_mb(), "macro_f1": held_out_macro_f1(torch.logit(probs), splits)})


def run_trainer(args, queue, sampling: str = "random") -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                              TrainingArguments, set_seed)

    torch.set_num_threads(args.threads)
    set_seed(args.seed)
    _, splits = load_documents(args.seed)
    labels = list(splits.spec.labels)
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(
        args.model_dir, num_labels=len(labels), problem_type="multi_label_classification", dtype=torch.float32)
    model.config.pad_token_id = tokenizer.pad_token_id
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, target_modules=LORA_TARGETS,
                                             task_type="SEQ_CLS"))

    def dataset(examples):
        encoded = tokenizer([e.text for e in examples], truncation=True, max_length=args.max_length)
        return [{"input_ids": ids, "attention_mask": mask, "labels": [float(label in e.labels) for label in labels]}
                for ids, mask, e in zip(encoded["input_ids"], encoded["attention_mask"], examples)]

    training_args = TrainingArguments(
        output_dir=args.scratch, num_train_epochs=args.epochs, per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=args.batch_size, learning_rate=args.lr, weight_decay=0.0, warmup_steps=0.1,
        lr_scheduler_type="linear", max_grad_norm=1.0, seed=args.seed, report_to=[], save_strategy="no",
        eval_strategy="no", logging_strategy="no", disable_tqdm=True, dataloader_num_workers=0, use_cpu=not torch.cuda.is_available(),
        **sampling_arguments(TrainingArguments, sampling))
    trainer = Trainer(model=model, args=training_args, train_dataset=dataset(splits.train),
                      data_collator=DataCollatorWithPadding(tokenizer))
    result = trainer.train()
    trained_mb = peak_memory_mb()
    predictions = trainer.predict(dataset(splits.val))
    queue.put({"seconds": result.metrics["train_runtime"],
               "docs_per_s": len(splits.train) * args.epochs / result.metrics["train_runtime"],
               "train_peak_mb": trained_mb, "peak_mb": peak_memory_mb(),
               "macro_f1": held_out_macro_f1(torch.from_numpy(predictions.predictions), splits)})


def sampling_arguments(training_arguments, sampling: str) -> dict:
    """The Trainer's batch order: ``train_sampling_strategy`` in the transformers this runs on, or its older
    switch ``group_by_length``."""
    if "train_sampling_strategy" in training_arguments.__dataclass_fields__:
        return {"train_sampling_strategy": sampling}
    return {"group_by_length": sampling == "group_by_length"}


def run_trainer_grouped(args, queue) -> None:
    run_trainer(args, queue, "group_by_length")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="one repeat each")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--scratch", default="/tmp/legalft-bench")
    parser.add_argument("--model-dir", type=Path, help="a causal LM's transformers folder (default: the offline SmolLM2)")
    args = parser.parse_args()
    # one folder both sides load
    model_name = args.model_dir.name if args.model_dir else "SmolLM2-135M"
    args.model_dir = args.model_dir or dequantised_copy(Path(args.scratch) / "smollm2_hf")

    description, splits = load_documents(args.seeds[0])
    print(f"documents: {description}: {len(splits.train)} train, {len(splits.val)} held out; {model_name}, "
          f"{args.epochs} epoch(s), batch {args.batch_size}, first {args.max_length} tokens, seeds {args.seeds}")
    sides = {"legalft": run_legalft, "Trainer + peft": run_trainer, "Trainer, grouped": run_trainer_grouped}
    results = interleaved(sides, lambda name, repeat: in_child(
        sides[name], argparse.Namespace(**{**vars(args), "seed": args.seeds[repeat]})), len(args.seeds))
    rows = [("train docs/s", "{:.2f}", "docs_per_s"), ("train seconds", "{:.1f}", "seconds"),
            ("peak MiB, training", "{:.0f}", "train_peak_mb"), ("peak MiB, + scoring", "{:.0f}", "peak_mb"), ("held-out macro-F1", "{:.3f}", "macro_f1")]
    print(f"\n{'median (min-max)':20}" + "".join(f"{name:>24}" for name in sides))
    for label, fmt, key in rows:
        print(f"{label:20}" + "".join(f"{median_range((r[key] for r in results[name]), fmt):>24}" for name in sides))
    speedup = ratios(results, "legalft", "Trainer + peft", "docs_per_s")
    f1_difference = [a["macro_f1"] - b["macro_f1"] for a, b in zip(results["legalft"], results["Trainer + peft"])]
    print(f"\nlegalft / Trainer throughput: {median_range(speedup)} (target >= 1.3); macro-F1 difference "
          f"{median_range(f1_difference, '{:+.3f}')}; median of {len(args.seeds)} interleaved repeats")
    print(f"peak memory legalft / Trainer: {statistics.median(ratios(results, 'legalft', 'Trainer + peft', 'peak_mb')):.2f}")
    grouped = ratios(results, "legalft", "Trainer, grouped", "docs_per_s")
    print(f"legalft / Trainer with train_sampling_strategy='group_by_length': throughput {median_range(grouped)}, "
          f"peak memory {statistics.median(ratios(results, 'legalft', 'Trainer, grouped', 'peak_mb')):.2f}")


if __name__ == "__main__":
    main()
