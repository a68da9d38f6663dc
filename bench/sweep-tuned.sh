#!/usr/bin/env bash
# Sweeps the tuned version's policy on a GPU host (docs/notes/tuned.md, step 13 on):
#   bash bench/sweep-tuned.sh OUT_DIR
# For each setting in CONFIGS (`bitonic bench --policy` overrides, such as
# "max_cluster_blocks=8,tile_bytes=32768"; "-" for the GPU's own policy) it runs `bitonic bench`
# on the tuned version alone (device-resident u32, median of REPEATS) and keeps that run's CSV
# as OUT_DIR/tuned-<setting>.csv.
set -euo pipefail
out=${1:-bench-results}
configs=${CONFIGS:-- max_cluster_blocks=1 max_cluster_blocks=8}
repeats=${REPEATS:-5}
mkdir -p "$out"
bin=.gpu/bin/bitonic
[ -x "$bin" ] || bin=target/release/bitonic
for config in $configs; do
  policy=${config#-}
  name="tuned-$(echo "${policy:-default}" | tr '=,' '-_')"
  echo "== $name"
  "$bin" bench --versions tuned --no-cpu --no-end-to-end --repeats "$repeats" --policy "$policy" \
    --min-exp "${MIN_EXP:-15}" --max-exp "${MAX_EXP:-29}" -o "$out/$name" ${BENCH_ARGS:-} > "$out/$name.log" 2>&1 \
    || { tail -20 "$out/$name.log"; exit 1; }
  cp "$out/$name/bitonic.csv" "$out/$name.csv"
  rm -rf "$out/$name"
  # n and median ms of the tuned rows
  awk -F, '$1 == "bitonic-tuned" && $8 == "device" { printf "  2^%d %s ms\n", log($7)/log(2)+0.5, $9 }' "$out/$name.csv"
done
