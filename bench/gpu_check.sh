#!/usr/bin/env bash
# Every benchmark of bench/ on one CUDA GPU, in about 10 minutes, printing the same tables as on the CPU:
#   bash bench/gpu_check.sh                 (the project's environment, a CUDA build of torch, the bench extra)
#   LEGALFT_PROSLEX_DIR=... LEGALFT_LEGALBENCH_DIR=... bash bench/gpu_check.sh   (real documents and prompts)
# bf16 where the comparison allows it (the encoder and LoRA fine-tunes, both sides), PyTorch's SDPA attention
# (transformers' default), fused AdamW (the project's optimizers on a GPU). Each benchmark is cut off
# after LEGALFT_BENCH_LIMIT seconds (default 150) so one slow part cannot take the whole budget.
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
limit=${LEGALFT_BENCH_LIMIT:-150}
export HF_HUB_OFFLINE=1

"$python" - <<'PY' || exit 1
import sys

import torch

if not torch.cuda.is_available():
    sys.exit("bench/gpu_check.sh needs a CUDA GPU, and torch.cuda.is_available() is False here")
print(f"{torch.cuda.get_device_name(0)}; torch {torch.__version__}, CUDA {torch.version.cuda}; "
      f"bf16: {torch.cuda.is_bf16_supported()}")
PY

run() {
    echo
    echo "+ $*"
    timeout "$limit" "$python" "$@" 2>&1 | grep -v -e Warning -e warnings.warn
    status=${PIPESTATUS[0]}
    [ "$status" -eq 0 ] || echo "(exit $status$([ "$status" -eq 124 ] && echo ": over ${limit} s"))"
}

run bench/framework_overhead.py --steps 40 --max-length 512
run bench/encoder_vs_hf_trainer.py --epochs 2 --max-length 512 --max-chunks 4 --stride 64 --batch-size 16 --precision bf16-mixed
run bench/lora_memory.py --steps 10 --batch-size 8 --seq-len 512
run bench/huge_document.py
if [ -n "${LEGALFT_LEGALBENCH_DIR:-}" ]; then
    run bench/label_scoring_vs_lm_eval.py --limit 100 --batch-size 32
    run bench/incontext_answers.py --limit 60 --batch-size 32
    run bench/lora_vs_trl.py --bf16 --batch-size 8
else
    echo; echo "LEGALFT_LEGALBENCH_DIR unset: the in-context benchmarks need LegalBench's prompts; skipped"
fi
