#!/usr/bin/env bash
# Runs every CPU benchmark once, in sequence; each docs/bench/<name>.txt starts with the exact command, the time and the load.
cd "$(dirname "$0")/.."
mkdir -p docs/bench
PY=${PYTHON:-.venv/bin/python}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
run() { local name=$1; shift; { echo "\$ $*"; echo "# $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"; "$@"; } > docs/bench/$name.txt 2>&1; }
run democorpus "$PY" bench/bench_democorpus.py --patents 1000 --workers 2
run encoder "$PY" bench/bench_encoder.py --model checkpoints/hmcl-lite-clip --threads 2
run encoder_1thread "$PY" bench/bench_encoder.py --model checkpoints/hmcl-lite-clip --threads 1
run index "$PY" bench/bench_index.py
run hmcl_loss "$PY" bench/bench_hmcl_loss.py
run rerank "$PY" bench/bench_rerank.py --threads 2
run bm25 "$PY" bench/bench_bm25.py --docs 100000

