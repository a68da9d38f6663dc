#!/usr/bin/env bash
# Profiles one key-value sort, argsort and keys-only sort of a row of 2^EXP u32 keys with
# Nsight Compute on a GPU host (docs/results/2026-11-23-5d12037-h100/kv-merge-*-ncu.txt):
#   bash bench/profile-kv.sh OUT.csv [EXP] [BIN]
# Every kernel launch of `bitonic bench-rows --repeats 1` on that one row (the warm-ups, then
# the timed runs): time, DRAM and SM throughput, instructions, occupancy, registers and DRAM
# bytes. Clocks and caches are left as they run, so the times match the benchmark's.
set -euo pipefail
out=$1 exp=${2:-24} bin=${3:-.gpu/bin/bitonic}
[ -x "$bin" ] || bin=target/release/bitonic
ncu --clock-control none --cache-control none --csv \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,dram__bytes_read.sum,dram__bytes_write.sum \
  "$bin" bench-rows --shapes "1x$((1 << exp))" --repeats 1 -o "$(mktemp -d)" > "$out"
python3 bench/profile_summary.py "$out"
