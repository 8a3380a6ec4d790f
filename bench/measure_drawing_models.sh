#!/bin/bash
# Re-measure every shipped drawing model (and zero-shot, the untouched trunk) on the real instruments and
# record the figures beside the weights: validation.uspc (USPC val split), test.uspc (USPC test split,
# once per shipped checkpoint), validation.redbook (the 20 Red Book patents, every page against all others).
# Zero-shot's figures go to patent_demo/configs/zero_shot_metrics.json (it has no checkpoint).
#   bash bench/measure_drawing_models.sh [checkpoint dirs...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
C=${USPC_CORPUS:-runs/uspc2007}
RB=../shared/data/impact_design_patent_samples
[ -f "$C/manifest.jsonl" ] || $PY -m patent_demo.cli corpus build --source images \
  ../shared/data/design_patents_2007_uspc_macaulay --out "$C" --splits splits/uspc2007.json --quiet
ZS=patent_demo/configs/zero_shot_metrics.json
ev() { $PY -m train.score_drawings --threads 1 --no-silhouette --out /dev/null "$@"; }
ev --model lite-trunk --corpus "$C" --split val --record validation.uspc --record-file $ZS
ev --model lite-trunk --corpus "$C" --split test --record test.uspc --record-file $ZS
ev --model lite-trunk --redbook $RB --split all --record validation.redbook --record-file $ZS
for ck in "${@:-checkpoints/*/}"; do
  for d in $ck; do
    grep -q '"kind": "hmcl"' "$d/config.json" || continue
    ev --model "$d" --corpus "$C" --split val --record validation.uspc
    ev --model "$d" --corpus "$C" --split test --record test.uspc
    ev --model "$d" --redbook $RB --split all --record validation.redbook
  done
done
