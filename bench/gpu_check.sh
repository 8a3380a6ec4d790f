#!/usr/bin/env bash
# GPU check (at most 5 minutes on one H200): short HMCL and DSSDNet trainings on the built-in corpus in bf16,
# printing step throughput and memory. Run from the repository root with the project's virtualenv.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
timeout 300 "$PY" bench/gpu_check.py --device "${DEVICE:-cuda}" "$@"
