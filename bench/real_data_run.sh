#!/usr/bin/env bash
# The real-data run behind README "Bringing real data": build corpora from ../shared/data with the CLI,
# evaluate and search them. Every command is printed before its output. Usage:
#   OMP_NUM_THREADS=1 nice -n 10 bash bench/real_data_run.sh /tmp/corpora > docs/bench/real_data_run.txt 2>&1
set -euo pipefail
OUT=${1:-/tmp/corpora}
DATA=${DATA:-../shared/data}
PD="python -m patent_demo.cli"
run() { echo; echo "\$ $*"; /usr/bin/time -f "[%e s wall, %M KB max RSS]" "$@"; }
echo "# $(date -u +%FT%TZ) on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$OUT"
run $PD corpus build --source redbook "$DATA/impact_design_patent_samples/patents" --out "$OUT/redbook" --quiet
run $PD corpus build --source images "$DATA/design_patents_2007_uspc_macaulay" --out "$OUT/uspc" --quiet --workers 2
run $PD corpus build --source deeppatent2 "$DATA/deeppatent2_techdrawfinder_samples/images" --out "$OUT/dp2" --quiet
run $PD corpus build --source text "$DATA/cs3245_patsnap_corpus_qrels" --out "$OUT/text" --splits splits/cs3245_text.json --quiet
run $PD corpus info "$OUT/redbook"
run $PD models
run $PD evaluate drawings --corpus "$OUT/redbook" --model zero-shot --against hmcl-lite-clip --split all --json "$OUT/redbook-eval.json"
run $PD evaluate drawings --corpus "$OUT/redbook" --model zero-shot --against hmcl-lite-clip
run $PD search drawings --corpus "$OUT/redbook" --model zero-shot --k 5 \
    --query "$DATA/impact_design_patent_samples/patents/USD0913174-20210316/USD0913174-20210316-D00002.TIF" --cache-dir "$OUT/cache"
run $PD evaluate text --corpus "$OUT/text" --model bm25
run $PD search text --corpus "$OUT/text" --model bm25 --k 5 --cache-dir "$OUT/cache" \
    --query "$DATA/cs3245_patsnap_corpus_qrels/patsnap-corpus/EP0049154B2.xml"
