#!/usr/bin/env bash
# Sweeps the staggered start's delay (docs/notes/tuned.md, step 22) on a GPU host:
#   bash bench/stagger-sweep.sh OUT_DIR
# For each delay in DELAYS (ns; 0 = off) it runs `bitonic bench` on the tuned version alone
# (device-resident, DTYPE, median of REPEATS) and keeps the CSV as OUT_DIR/stagger-<ns>.csv.
set -euo pipefail
out=${1:-bench-results}
mkdir -p "$out"
bin=.gpu/bin/bitonic
[ -x "$bin" ] || bin=target/release/bitonic
for ns in ${DELAYS:-0 2000 4000 8000}; do
  name="stagger-${DTYPE:-u32}-$ns"
  BITONIC_TUNED_STAGGER_NS=$ns "$bin" bench --versions tuned --no-cpu --no-end-to-end \
    --dtype "${DTYPE:-u32}" --repeats "${REPEATS:-5}" --min-exp "${MIN_EXP:-21}" --max-exp "${MAX_EXP:-27}" \
    -o "$out/$name" > "$out/$name.log" 2>&1 || { tail -20 "$out/$name.log"; exit 1; }
  cp "$out/$name/bitonic.csv" "$out/$name.csv"
  rm -rf "$out/$name"
  printf '%-22s' "$name"
  awk -F, '$1 == "bitonic-tuned" && $8 == "device" { printf " 2^%d %.3f", log($7)/log(2)+0.5, $9 }' "$out/$name.csv"
  echo
done
