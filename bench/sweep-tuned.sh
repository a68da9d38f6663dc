#!/usr/bin/env bash
# Sweeps the tuned version's launch shape on a GPU host (docs/notes/tuned.md, step 13 on):
#   bash bench/sweep-tuned.sh OUT_DIR
# For each setting in CONFIGS ("cluster-blocks:tile-bits", tile-bits empty for the default)
# it runs `bitonic bench` on the tuned version alone (device-resident u32, median of REPEATS)
# and keeps that run's CSV as OUT_DIR/tuned-c<blocks>-t<bits>.csv.
set -euo pipefail
out=${1:-bench-results}
configs=${CONFIGS:-1: 8: 16:}
repeats=${REPEATS:-5}
mkdir -p "$out"
bin=.gpu/bin/bitonic
[ -x "$bin" ] || bin=target/release/bitonic
for config in $configs; do
  blocks=${config%%:*} bits=${config#*:}
  name="tuned-c$blocks-t${bits:-default}"
  echo "== $name"
  BITONIC_TUNED_CLUSTER=$blocks BITONIC_TUNED_TILE_BITS=$bits \
    "$bin" bench --versions tuned --no-cpu --no-end-to-end --repeats "$repeats" \
    --min-exp "${MIN_EXP:-15}" --max-exp "${MAX_EXP:-29}" -o "$out/$name" ${BENCH_ARGS:-} > "$out/$name.log" 2>&1 \
    || { tail -20 "$out/$name.log"; exit 1; }
  cp "$out/$name/bitonic.csv" "$out/$name.csv"
  rm -rf "$out/$name"
  # n and median ms of the tuned rows
  awk -F, '$1 == "bitonic-tuned" && $8 == "device" { printf "  2^%d %s ms\n", log($7)/log(2)+0.5, $9 }' "$out/$name.csv"
done
