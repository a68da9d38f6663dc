#!/usr/bin/env bash
# Issue 49's speed check on a GPU host, in one call: issue 22's nine workloads and the top-k
# table, timed before the plan layer (BASE, a release build of 82f6362) and after it (NEW, this
# commit's .gpu/bin/bitonic), one after the other on the same machine:
#   bash bench/ab-issue49.sh OUT
# OUT/before-issue22 and OUT/after-issue22 are bench/issue22-table.sh's folders (beside CUB);
# OUT/{before,after}-topk/topk.csv the top-k medians; OUT/ab.md every workload's median before
# and after and their ratio (after / before: below 1 is faster).
set -euo pipefail
out=${1:?usage: bash bench/ab-issue49.sh OUT}
base=${BASE:-.gpu/base/bitonic}
new=${NEW:-.gpu/bin/bitonic}
export REPEATS=${REPEATS:-10}
ks=${KS:-1,50,256,1024}
dtypes=${DTYPES:-f32,bf16}
shapes=${SHAPES:-64x128256,256x151936,4096x32768,16384x1024,1x16777216,1x268435456}
mkdir -p "$out"
for side in before after; do
  bin=$base; [ $side = after ] && bin=$new
  echo "== $side: $("$bin" --version)"
  BIN=$bin bash bench/issue22-table.sh "$out/$side-issue22" > "$out/$side-issue22.log" 2>&1
  "$bin" bench-topk --repeats "$REPEATS" --ks "$ks" --dtypes "$dtypes" --shapes "$shapes" \
    -o "$out/$side-topk" > "$out/$side-topk.log" 2>&1
done
python3 - "$out" <<'PY' | tee "$out/ab.md"
import csv, sys
out = sys.argv[1]
def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))
def sorts(side):  # bench/issue22-table.py's workloads, in its order
    return {r["workload"]: float(r["tuned_ms"]) for r in rows(f"{out}/{side}-issue22/issue22.csv")}
def topk(side):
    return {(r["dtype"], r["rows"], r["row_len"], r["k"]): float(r["median_ms"])
            for r in rows(f"{out}/{side}-topk/topk.csv")}
b, a = sorts("before"), sorts("after")
first = rows(f"{out}/after-issue22/u32/bitonic.csv")[0]
print(f"Issue 49's speed check on one {first['device']} ({first['driver']}), {first['date']}: "
      f"before (82f6362) and after ({first['commit']}), device-resident keys, CUDA events, "
      f"median of {first['repeats']} (bench/ab-issue49.sh).\n")
print("| issue 22 workload | before ms | after ms | after / before |")
print("|---|---:|---:|---:|")
for key in a:
    if key in b:
        print(f"| {key} | {b[key]:.3f} | {a[key]:.3f} | {a[key] / b[key]:.2f} |")
tb, ta = topk("before"), topk("after")
print("\n| top-k: dtype, rows × length, k | before ms | after ms | after / before |")
print("|---|---:|---:|---:|")
ratios = []
for key in sorted(ta, key=lambda k: (k[0], int(k[1]) * int(k[2]), int(k[3]))):
    if key in tb:
        ratios.append(ta[key] / tb[key])
        print(f"| {key[0]}, {key[1]} × {key[2]}, {key[3]} | {tb[key]:.3f} | {ta[key]:.3f} | {ratios[-1]:.2f} |")
if ratios:
    ratios.sort()
    print(f"\nTop-k after / before: median {ratios[len(ratios) // 2]:.2f}, range {ratios[0]:.2f} to {ratios[-1]:.2f}.")
PY
