#!/usr/bin/env bash
# Profiles the passes of one tuned sort with Nsight Compute on a GPU host (docs/notes/tuned.md):
#   bash bench/profile-tuned.sh OUT.csv EXP [PASSES]
# runs `bitonic bench` on 2^EXP device-resident u32 keys and records, for the first PASSES
# launches of a tuned pass (the warm-up sort), each kernel's time, DRAM and SM throughput and
# instructions. Clocks and caches are left as they run (no ncu clock lock, no cache flush), so
# the times match the benchmark's. POLICY=key=value,… tunes the sort (`bitonic bench --policy`).
set -euo pipefail
out=$1 exp=$2 passes=${3:-40}
bin=.gpu/bin/bitonic
[ -x "$bin" ] || bin=target/release/bitonic
ncu --clock-control none --cache-control none -k regex:tuned_pass --launch-count "$passes" --csv \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum \
  "$bin" bench --versions tuned --no-cpu --no-end-to-end --repeats 1 --min-exp "$exp" --max-exp "$exp" \
  --policy "${POLICY:-}" \
  -o "$(mktemp -d)" > "$out"
python3 bench/profile_summary.py "$out"
