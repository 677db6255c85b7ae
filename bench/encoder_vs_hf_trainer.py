"""Fine-tune one encoder on the same documents three ways and print the runs side by side.

    .venv/bin/python bench/encoder_vs_hf_trainer.py [--epochs 3] [--max-length 512] [--max-chunks 4] [--seeds 0 1 2 3 4]

1. legalft: EncoderDataModule + EncoderClassifierModule under a Lightning Trainer: each document
   cut into as many windows as it needs (up to --max-chunks), the last one ending at the document's
   end (a full window, so nothing to pad), windows padded to the longest in the batch, training
   batches grouped by length.
2. Hugging Face Trainer at its best, as a user who knows it would write it: the tokenizer's own
   overflowing windows, padded per batch to the batch's longest window (a data collator, dynamic
   padding), grouped by length (``train_sampling_strategy="group_by_length"``, transformers 5's
   ``group_by_length=True``) on each document's token count.
3. Hugging Face Trainer fed the way LexGLUE feeds its hierarchical models of long documents: every
   document padded to --max-chunks windows of --max-length tokens, random batch order.

Same model (the offline all-MiniLM-L6-v2), same classifier (windows -> max pooling -> linear
head, the project's ChunkedDocumentClassifier on every side), same hyperparameters (AdamW, lr, warmup, decay, clipping, batch size, epochs, seed), same
documents and split, thresholds at 0.5 for both. Each side runs in its own process so peak memory
is its own. Each seed is one repeat: every side runs once, the sides' order reversed every other seed,
and the table prints medians (min-max) over the seeds. Documents: PROSLEX's validation split when LEGALFT_PROSLEX_DIR points at it (80% to
train, 20% held out), else the project's sample.

FLOP/s counts 6 x encoder weights (embeddings excluded) x tokens computed (padding included: it is computed), which
leaves out attention's own FLOPs; the peak is a measured fp32 matmul on this machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from common import (held_out_macro_f1, in_child, interleaved, load_documents, matmul_parameters, median_range,
                    peak_memory_mb, ratios, train_encoder_side)

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def trainer_arguments(args, **sampling):
    """The Trainer's settings both of its sides share: the same optimiser, schedule, clipping and seed as legalft's."""
    from transformers import TrainingArguments

    return TrainingArguments(
        output_dir=args.scratch, num_train_epochs=args.epochs, per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=args.batch_size, learning_rate=args.lr, weight_decay=0.01, warmup_steps=0.1,
        lr_scheduler_type="linear", max_grad_norm=1.0, seed=args.seed, report_to=[], save_strategy="no",
        eval_strategy="no", logging_strategy="no", remove_unused_columns=False, disable_tqdm=True,
        dataloader_num_workers=0, bf16=args.precision.startswith("bf16"), **sampling,
    )


def run_hf_trainer_best(args, queue) -> None:
    import datasets
    import torch
    from torch import nn
    from transformers import Trainer, set_seed

    from legalft.data.chunking import chunk_documents
    from legalft.models.components.chunked_classifier import ChunkedDocumentClassifier
    from legalft.models.pretrained import load_encoder, load_tokenizer, offline_minilm_path

    torch.set_num_threads(args.threads)
    set_seed(args.seed)
    _, splits = load_documents(args.seed)
    tokenizer = load_tokenizer(offline_minilm_path())
    labels = splits.spec.labels

    def windowed(examples) -> datasets.Dataset:
        docs, _ = chunk_documents(tokenizer, [e.text for e in examples], args.max_length, args.stride, args.max_chunks)
        return datasets.Dataset.from_dict({
            "windows": [doc.chunks for doc in docs],
            "length": [sum(len(c) for c in doc.chunks) for doc in docs],  # what group_by_length sorts by
            "labels": [[float(label in e.labels) for label in labels] for e in examples],
        })

    counted = {"real": 0, "computed": 0}

    def collate(rows):
        """Dynamic padding: the batch's windows, flattened, padded to its longest window."""
        padded = tokenizer.pad({"input_ids": [w for row in rows for w in row["windows"]]}, padding="longest",
                               pad_to_multiple_of=8, return_tensors="pt")
        counted["real"] += int(padded["attention_mask"].sum())
        counted["computed"] += padded["attention_mask"].numel()
        return {"input_ids": padded["input_ids"], "attention_mask": padded["attention_mask"],
                "chunk_counts": torch.tensor([len(row["windows"]) for row in rows]),
                "labels": torch.tensor([row["labels"] for row in rows])}

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.classifier = ChunkedDocumentClassifier(load_encoder(offline_minilm_path()), len(labels), "max", "cls")
            self.loss = nn.BCEWithLogitsLoss()

        def forward(self, input_ids, attention_mask, chunk_counts, labels=None):
            logits = self.classifier(input_ids, attention_mask, chunk_counts)
            return {"loss": self.loss(logits, labels), "logits": logits} if labels is not None else {"logits": logits}

    train, held_out = windowed(splits.train), windowed(splits.val)
    model = Classifier()
    training_args = trainer_arguments(args, train_sampling_strategy="group_by_length", length_column_name="length")
    trainer = Trainer(model=model, args=training_args, train_dataset=train, data_collator=collate)
    result = trainer.train()
    computed = counted["computed"]
    padding = 1 - counted["real"] / computed
    # the Trainer's length grouping orders prediction batches too: score against the labels it returns with them
    predictions = trainer.predict(held_out)
    queue.put({
        "seconds": result.metrics["train_runtime"],
        "docs_per_s": len(train) * args.epochs / result.metrics["train_runtime"],
        "padding": padding,
        "tokens_computed": computed,
        "params": matmul_parameters(model.classifier),
        "peak_mb": peak_memory_mb(),
        "macro_f1": held_out_macro_f1(torch.from_numpy(predictions.predictions), splits,
                                      targets=predictions.label_ids.astype(int)),
    })


def run_hf_trainer(args, queue) -> None:
    import torch
    from torch import nn
    from transformers import Trainer, set_seed

    from legalft.data.chunking import chunk_documents
    from legalft.models.components.chunked_classifier import ChunkedDocumentClassifier
    from legalft.models.pretrained import load_encoder, load_tokenizer, offline_minilm_path

    torch.set_num_threads(args.threads)
    set_seed(args.seed)
    _, splits = load_documents(args.seed)
    tokenizer = load_tokenizer(offline_minilm_path())
    labels = splits.spec.labels

    def fixed_size(examples):
        """Every document as max_chunks windows of max_length tokens (empty windows all padding)."""
        docs, _ = chunk_documents(tokenizer, [e.text for e in examples], args.max_length, args.stride, args.max_chunks)
        rows = []
        for example, doc in zip(examples, docs):
            windows = doc.chunks + [[tokenizer.cls_token_id, tokenizer.sep_token_id]] * (args.max_chunks - len(doc.chunks))
            padded = tokenizer.pad({"input_ids": windows}, padding="max_length", max_length=args.max_length, return_tensors="pt")
            rows.append({
                "input_ids": padded["input_ids"], "attention_mask": padded["attention_mask"],
                "n_windows": torch.tensor(len(doc.chunks)),
                "labels": torch.tensor([float(label in example.labels) for label in labels]),
            })
        return rows

    class WindowedClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.classifier = ChunkedDocumentClassifier(load_encoder(offline_minilm_path()), len(labels), "max", "cls")
            self.loss = nn.BCEWithLogitsLoss()

        def forward(self, input_ids, attention_mask, n_windows, labels=None):
            docs, windows, length = input_ids.shape
            embedded = self.classifier.embed_chunks(input_ids.view(-1, length), attention_mask.view(-1, length))
            mask = torch.arange(windows, device=input_ids.device).unsqueeze(0) < n_windows.unsqueeze(1)
            pooled = self.classifier.pooling(embedded.view(docs, windows, -1), mask)
            logits = self.classifier.head(self.classifier.dropout(pooled))
            return {"loss": self.loss(logits, labels), "logits": logits} if labels is not None else {"logits": logits}

    train, held_out = fixed_size(splits.train), fixed_size(splits.val)
    model = WindowedClassifier()
    training_args = trainer_arguments(args)
    trainer = Trainer(model=model, args=training_args, train_dataset=train)
    result = trainer.train()
    predictions = trainer.predict(held_out)
    real = sum(int(r["attention_mask"].sum()) for r in train)
    computed = sum(r["attention_mask"].numel() for r in train)
    queue.put({
        "seconds": result.metrics["train_runtime"],
        "docs_per_s": len(train) * args.epochs / result.metrics["train_runtime"],
        "padding": 1 - real / computed,
        "tokens_computed": computed * args.epochs,
        "params": matmul_parameters(model.classifier),
        "peak_mb": peak_memory_mb(),
        "macro_f1": held_out_macro_f1(torch.from_numpy(predictions.predictions), splits),
    })


def matmul_peak_flops(threads: int, size: int = 2048, repeats: int = 10, trials: int = 5) -> float:
    """Best of several timed fp32 matmuls: the most this machine's BLAS delivers."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(trials):
        start = time.perf_counter()
        for _ in range(repeats):
            torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 * repeats / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--stride", type=int, default=64)
    parser.add_argument("--max-chunks", type=int, default=4)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="one repeat each")
    parser.add_argument("--precision", default="32-true", help="Lightning's; bf16-mixed also turns on the peers' bf16")
    parser.add_argument("--skip-lexglue", action="store_true", help="leave out the LexGLUE-style peer")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--scratch", default="/tmp/legalft-bench")
    args = parser.parse_args()

    description, splits = load_documents(args.seeds[0])
    print(f"documents: {description}: {len(splits.train)} train, {len(splits.val)} held out; "
          f"{args.epochs} epochs, batch {args.batch_size}, windows {args.max_chunks} x {args.max_length} tokens, "
          f"seeds {args.seeds}")
    sides = {"legalft": train_encoder_side, "HF at its best": run_hf_trainer_best, "HF LexGLUE-style": run_hf_trainer}
    if args.skip_lexglue:
        del sides["HF LexGLUE-style"]
    results = interleaved(sides, lambda name, repeat: in_child(
        sides[name], argparse.Namespace(**{**vars(args), "seed": args.seeds[repeat]})), len(args.seeds))
    peak = matmul_peak_flops(args.threads)
    for runs in results.values():
        for r in runs:
            r["gflops"] = 6 * r["params"] * r["tokens_computed"] / r["seconds"] / 1e9

    rows = [
        ("train docs/s", "{:.2f}", "docs_per_s"),
        ("train seconds", "{:.1f}", "seconds"),
        ("padding fraction", "{:.3f}", "padding"),
        ("tokens computed", "{:,.0f}", "tokens_computed"),
        ("peak memory MiB", "{:.0f}", "peak_mb"),
        ("held-out macro-F1", "{:.3f}", "macro_f1"),
        ("achieved GFLOP/s", "{:.1f}", "gflops"),
    ]
    print(f"\n{'median (min-max)':20}" + "".join(f"{name:>26}" for name in sides))
    for label, fmt, key in rows:
        print(f"{label:20}" + "".join(f"{median_range((r[key] for r in results[name]), fmt):>26}" for name in sides))
    print(f"{'share of matmul peak':20}" + "".join(
        f"{statistics.median(r['gflops'] for r in results[name]) * 1e9 / peak:>26.1%}" for name in sides))
    best_peer = max((n for n in sides if n != "legalft"), key=lambda n: statistics.median(
        r["docs_per_s"] for r in results[n]))
    f1_difference = [a - b for a, b in zip((r["macro_f1"] for r in results["legalft"]),
                                           (r["macro_f1"] for r in results[best_peer]), strict=True)]
    print(f"\nmeasured fp32 matmul peak: {peak / 1e9:.1f} GFLOP/s; legalft throughput = "
          f"{median_range(ratios(results, 'legalft', best_peer, 'docs_per_s'))}x the best peer's ({best_peer}), "
          f"per seed; macro-F1 difference {median_range(f1_difference, '{:+.3f}')}")


if __name__ == "__main__":
    main()
