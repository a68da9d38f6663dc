#!/usr/bin/env bash
# An A/B run of the top-k on a GPU host, one binary, several policies, torch in the same call:
#   VARIANTS="base=bitonic@topk_warp_filter_max_k=0 new=bitonic" SHAPES="16384x1024 4096x1000" \
#   KS=1,8,50 DTYPES=f32,bf16 REPEATS=10 bash bench/ab-topk.sh OUT_DIR
# Each variant NAME=BINARY[@POLICY] runs `BINARY bench-topk --policy POLICY` into OUT_DIR/NAME,
# BINARY `bitonic` (the bundled binary) or another beside it (an older build copied to
# .gpu/bin/bitonic-base, say); OUT_DIR/ab.txt lists torch's and each variant's median (ms) and
# torch's time over each.
set -euo pipefail
out=${1:?usage: bash bench/ab-topk.sh OUT_DIR}
repeats=${REPEATS:-10}
ks=${KS:-1,8,50,256,1024}
dtypes=${DTYPES:-f32,bf16}
shapes=${SHAPES:?SHAPES, e.g. 16384x1024 64x128256}
variants=${VARIANTS:?VARIANTS, e.g. base=bitonic@topk_warp_filter_max_k=0 new=bitonic}
mkdir -p "$out"
. "$(dirname "$0")/provenance.sh" # bin, commit, date
. "$(dirname "$0")/variants.sh"   # parse_variant
header=$("$bin" bench-topk --csv-header)
{ echo "$header"; PYTHONUNBUFFERED=1 python3 bench/peers/torch_topk.py "$repeats" "$commit" "$date" "$dtypes" "$ks" $shapes; } > "$out/torch_topk.csv"
names=()
for v in $variants; do
  parse_variant "$v"
  names+=("$variant_name")
  "$variant_bin" bench-topk --repeats "$repeats" --ks "$ks" --dtypes "$dtypes" \
    --shapes "$(echo $shapes | tr ' ' ,)" --policy "$variant_policy" -o "$out/$variant_name" > /dev/null
done
python3 - "$out" "${names[@]}" <<'PY' | tee "$out/ab.txt"
import csv, sys
out, names = sys.argv[1], sys.argv[2:]
def medians(path):
    with open(path) as f:
        return {(r["dtype"], r["rows"], r["row_len"], r["k"]): float(r["median_ms"]) for r in csv.DictReader(f)}
torch = medians(f"{out}/torch_topk.csv")
runs = [medians(f"{out}/{n}/topk.csv") for n in names]
print("dtype rows len k | torch " + " ".join(names) + " | torch/each")
for key in sorted(torch, key=lambda k: (k[0], int(k[1]), int(k[2]), int(k[3]))):
    if not all(key in r for r in runs):
        continue
    t = torch[key]
    each = [r[key] for r in runs]
    print(" ".join(key) + " | " + f"{t:.3f} " + " ".join(f"{e:.3f}" for e in each)
          + " | " + " ".join(f"{t / e:.2f}" for e in each))
PY
