#!/usr/bin/env bash
# An A/B run of the merge sort on a GPU host: several binaries and policies beside CUB's radix and
# merge sorts, in one call (issue 22):
#   VARIANTS="base=bitonic-base@merge_ways=8 new=bitonic@merge_ways=8" DTYPES="u32 u64" \
#   MIN_EXP=22 MAX_EXP=26 REPEATS=10 bash bench/ab-merge.sh OUT_DIR
# Each variant NAME=BINARY[@POLICY] runs `BINARY bench --versions tuned --policy POLICY` into
# OUT_DIR/NAME-DTYPE, BINARY `bitonic` (the bundled binary) or another beside it (an older build
# copied to .gpu/bin/bitonic-base, say). The variants run in turn, then again in reverse order
# (ROUNDS, default 2), so that a drift of the GPU's clocks shows as a difference between rounds;
# OUT_DIR/ab.txt lists every round's median (ms) beside CUB's. CUB_SORT names a cub_sort built
# before, to skip its compile.
set -euo pipefail
out=${1:?usage: bash bench/ab-merge.sh OUT_DIR}
variants=${VARIANTS:?VARIANTS, e.g. base=bitonic-base new=bitonic}
min_exp=${MIN_EXP:-22}
max_exp=${MAX_EXP:-26}
repeats=${REPEATS:-10}
rounds=${ROUNDS:-2}
mkdir -p "$out"
. "$(dirname "$0")/provenance.sh" # bin, commit, date
. "$(dirname "$0")/variants.sh"   # parse_variant
cub_sort=${CUB_SORT:-$out/cub_sort}
[ -x "$cub_sort" ] || nvcc -O3 -std=c++17 -arch=sm_90 -o "$cub_sort" bench/peers/cub_sort.cu
names=()
for v in $variants; do names+=("${v%%=*}"); done
for dtype in ${DTYPES:-u32 u64}; do
  { "$bin" report --csv-header; "$cub_sort" "$min_exp" "$max_exp" "$repeats" "$commit" "$date" "$dtype"; } \
    > "$out/cub-$dtype.csv"
  for round in $(seq 1 "$rounds"); do
    order=$variants
    [ $((round % 2)) -eq 0 ] && order=$(echo $variants | tr ' ' '\n' | tac | tr '\n' ' ')
    for v in $order; do
      parse_variant "$v"
      run="$out/$variant_name-$dtype-r$round"
      "$variant_bin" bench --dtype "$dtype" --versions tuned --no-cpu --no-end-to-end --min-exp "$min_exp" \
        --max-exp "$max_exp" --repeats "$repeats" --policy "$variant_policy" -o "$run" > "$run.log" 2>&1
    done
  done
done
python3 - "$out" "$rounds" "${names[@]}" <<'PY' | tee "$out/ab.txt"
import csv, glob, sys
out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def medians(path, prefix):
    with open(path) as f:
        return {int(r["n"]): float(r["median_ms"]) for r in csv.DictReader(f)
                if r["metric"] == "device" and r["name"].startswith(prefix)}
for cub in sorted(glob.glob(f"{out}/cub-*.csv")):
    dtype = cub.rsplit("-", 1)[1][:-4]
    radix, merge = medians(cub, "cub-radix"), medians(cub, "cub-merge")
    cols = [(f"{n}#{r}", medians(f"{out}/{n}-{dtype}-r{r}/bitonic.csv", "bitonic-tuned"))
            for n in names for r in range(1, rounds + 1)]
    print(f"{dtype}: " + " ".join(c for c, _ in cols) + " | cub-radix cub-merge")
    for n in sorted(radix):
        print(f"2^{n.bit_length() - 1} " + " ".join(f"{m.get(n, float('nan')):.3f}" for _, m in cols)
              + f" | {radix[n]:.3f} {merge.get(n, float('nan')):.3f}")
PY
