#!/usr/bin/env bash
# Profiles the passes of one tuned sort with Nsight Compute on a GPU host (docs/notes/tuned.md):
#   bash bench/profile-tuned.sh OUT.csv EXP [PASSES]
# runs `bitonic bench` on 2^EXP device-resident u32 keys and records, for the first PASSES
# launches of a tuned pass (the warm-up sort), each kernel's time, DRAM and SM throughput and
# instructions. Clocks and caches are left as they run (no ncu clock lock, no cache flush), so
# the times match the benchmark's. Extra settings come from the environment (BITONIC_TUNED_*).
set -euo pipefail
out=$1 exp=$2 passes=${3:-40}
bin=.gpu/bin/bitonic
[ -x "$bin" ] || bin=target/release/bitonic
ncu --clock-control none --cache-control none -k regex:tuned_pass --launch-count "$passes" --csv \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum \
  "$bin" bench --versions tuned --no-cpu --no-end-to-end --repeats 1 --min-exp "$exp" --max-exp "$exp" \
  -o "$(mktemp -d)" > "$out"
# One line a pass: duration (µs), DRAM %, SM %, instructions (millions).
python3 - "$out" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]; rows = rows[1:]
col = {name: head.index(name) for name in ("ID", "Metric Name", "Metric Unit", "Metric Value")}
to_us = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}
passes = {}
for r in rows:
    value = float(r[col["Metric Value"]].replace(",", "")) * to_us.get(r[col["Metric Unit"]], 1.0)
    passes.setdefault(int(r[col["ID"]]), {})[r[col["Metric Name"]]] = value
total = 0
for i, m in sorted(passes.items()):
    t = m["gpu__time_duration.sum"]; total += t
    print(f"{i:3d} {t:9.1f} us  dram {m['dram__throughput.avg.pct_of_peak_sustained_elapsed']:5.1f}%  "
          f"sm {m['sm__throughput.avg.pct_of_peak_sustained_elapsed']:5.1f}%  inst {m['smsp__inst_executed.sum']/1e6:8.1f} M")
print(f"total {total/1e3:.2f} ms over {len(passes)} passes")
PY
