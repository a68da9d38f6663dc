#!/usr/bin/env bash
# The merge sort's levels beside CUB's radix and merge sorts, in one call on the GPU host (issue 22):
#   ../shared/tools/gpu-bundle.sh            (here: packs .gpu/bin/bitonic)
#   bash bench/run-merge.sh OUT [WAYS ...]   (on the GPU host; WAYS default: 2 4 8 16)
# For each key type (DTYPES, default "u32 u64"): CUB's sorts, then `bitonic bench` of the tuned
# version with each number of ways (policy merge.ways and merge.wide_ways), the CUB rows merged
# into each report. MIN_EXP, MAX_EXP, REPEATS choose the sizes and repeats.
set -euo pipefail
out=${1:?usage: bench/run-merge.sh OUT [WAYS ...]}
shift
ways=${*:-2 4 8 16}
min_exp=${MIN_EXP:-15}
max_exp=${MAX_EXP:-29}
repeats=${REPEATS:-10}
mkdir -p "$out"
. "$(dirname "$0")/provenance.sh" # bin, commit, date
nvcc -O3 -std=c++17 -arch=sm_90 -o "$out/cub_sort" bench/peers/cub_sort.cu
for dtype in ${DTYPES:-u32 u64}; do
  top=$max_exp
  [ "$dtype" = u64 ] && [ "$top" -gt 28 ] && top=28
  { "$bin" report --csv-header; "$out/cub_sort" "$min_exp" "$top" "$repeats" "$commit" "$date" "$dtype"; } > "$out/cub-$dtype.csv"
  for w in $ways; do
    "$bin" bench --dtype "$dtype" --versions tuned --no-cpu --no-end-to-end --min-exp "$min_exp" \
      --max-exp "$top" --repeats "$repeats" --policy "merge.ways=$w,merge.wide_ways=$w,merge.fold_ways=2" --peers "$out/cub-$dtype.csv" \
      -o "$out/$dtype-ways$w" > "$out/$dtype-ways$w.log" 2>&1
    echo "== $dtype merge.ways=$w,merge.wide_ways=$w"
    awk -F, '$8 == "device" && $1 ~ /tuned|cub/ {printf "%-14s %11d %9.3f ms\n", $1, $7, $9}' \
      "$out/$dtype-ways$w/bitonic.csv" "$out/cub-$dtype.csv" | sort -k2n -k1
  done
done
# One file back from the GPU host: the reports and CSVs of every run.
tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
