#!/usr/bin/env bash
# Issue 22's table in one call on a GPU host, beside CUB:
#   ../shared/tools/gpu-bundle.sh            (here: packs .gpu/bin/bitonic)
#   bash bench/issue22-table.sh OUT          (on the GPU host)
# `bitonic bench` of the tuned sort of u32 (2^15 .. 2^29) and u64 (2^15 .. 2^28) keys beside CUB's
# radix and merge sorts, `bitonic bench-rows` of one row of 2^24 u32 keys (key-value sort and
# argsort) beside CUB's radix sort of pairs, all device-resident, median of REPEATS (10); then
# OUT/issue22.md and OUT/issue22.csv, the nine workloads against their limits
# (bench/issue22-table.py). With PROFILE=1, Nsight Compute times
# every kernel of one sort of each workload (clocks and caches as they run): OUT/ncu-*.txt.
set -euo pipefail
out=${1:?usage: bash bench/issue22-table.sh OUT}
repeats=${REPEATS:-10}
mkdir -p "$out"
. "$(dirname "$0")/provenance.sh" # bin, commit, date
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/gpu.txt"
header=$("$bin" report --csv-header)
nvcc -O3 -std=c++17 -arch=sm_90 -o "$out/cub_sort" bench/peers/cub_sort.cu
nvcc -O3 -std=c++17 -arch=sm_90 -o "$out/cub_segmented" bench/peers/cub_segmented.cu
for dtype in u32 u64; do
  top=29; [ $dtype = u64 ] && top=28
  { echo "$header"; "$out/cub_sort" 15 "$top" "$repeats" "$commit" "$date" "$dtype"; } > "$out/cub-$dtype.csv"
  "$bin" bench --dtype "$dtype" --versions tuned --no-cpu --no-end-to-end --min-exp 15 --max-exp "$top" \
    --repeats "$repeats" --peers "$out/cub-$dtype.csv" -o "$out/$dtype" > "$out/$dtype.log" 2>&1
done
{ "$bin" bench-rows --csv-header; "$out/cub_segmented" "$repeats" "$commit" "$date" 1x16777216; } > "$out/cub_rows.csv"
"$bin" bench-rows --repeats "$repeats" --shapes 1x16777216 --peers "$out/cub_rows.csv" -o "$out/rows" > "$out/rows.log" 2>&1
rm -f "$out/cub_sort" "$out/cub_segmented"
python3 "$(dirname "$0")/issue22-table.py" "$out" | tee "$out/issue22.md"
if [ "${PROFILE:-0}" = 1 ]; then
  metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
  profile() { # name, then the bitonic arguments
    local name=$1
    shift
    ncu --clock-control none --cache-control none --csv --metrics "$metrics" "$bin" "$@" -o "$(mktemp -d)" \
      > "$out/ncu-$name.csv" 2> "$out/ncu-$name.log" && python3 bench/profile_summary.py "$out/ncu-$name.csv" > "$out/ncu-$name.txt"
  }
  for case in u32:15 u32:20 u32:22 u32:24 u32:29 u64:24 u64:28; do
    dtype=${case%:*} e=${case#*:}
    profile "$dtype-2e$e" bench --dtype "$dtype" --versions tuned --no-cpu --no-end-to-end --repeats 1 --min-exp "$e" --max-exp "$e"
  done
  profile "rows-2e24" bench-rows --shapes 1x16777216 --repeats 1
fi
