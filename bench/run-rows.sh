#!/usr/bin/env bash
# The row table (last kept: docs/results/2026-11-23-9bf755f-h100) on a GPU host in one command,
# from the project root:
#   bench/pack-gpu.sh                    (here: packs the release binary into .gpu/)
#   bash bench/run-rows.sh OUT_DIR       (on the GPU host)
# Times our row sorts, argsorts and key-value sorts (u32 keys, device-resident) beside CUB's
# DeviceSegmentedSort and torch.sort / torch.argsort on the same shapes; writes OUT_DIR/rows.md.
set -euo pipefail
out=${1:-bench-results}
repeats=${REPEATS:-10}
shapes=${SHAPES:-16384x1024 65536x256 4096x4096 1024x16384 1x16777216}
mkdir -p "$out"
. "$(dirname "$0")/provenance.sh" # bin, commit, date
header=$("$bin" bench-rows --csv-header)
echo "== CUB segmented sort"
nvcc -O3 -std=c++17 -arch=sm_90 -o "$out/cub_segmented" bench/peers/cub_segmented.cu
{ echo "$header"; "$out/cub_segmented" "$repeats" "$commit" "$date" $shapes; } > "$out/cub_rows.csv"
rm -f "$out/cub_segmented"
echo "== torch"
{ echo "$header"; PYTHONUNBUFFERED=1 python3 bench/peers/torch_rows.py "$repeats" "$commit" "$date" $shapes; } > "$out/torch_rows.csv"
echo "== bitonic"
"$bin" bench-rows --repeats "$repeats" --shapes "$(echo $shapes | tr ' ' ,)" \
  --peers "$out/cub_rows.csv,$out/torch_rows.csv" -o "$out"
