#!/usr/bin/env bash
# A/B of two builds of `bitonic` in one GPU call: the tuned sort at 2^15, 2^20, 2^24 and 2^29
# (u32 and u64, device-resident) and the row shapes with key-value 2^24 (bench-rows), each
# build run ROUNDS times in turn (A, B, A, B, …) so that drift of the card hits both alike.
#   bash bench/ab-trees.sh OLD_BIN NEW_BIN OUT_DIR
# Writes OUT_DIR/{a,b}-{sort,rows}-ROUND/… (each build's own CSVs) and OUT_DIR/ab.md, the
# medians side by side. Both builds must have `bench` and `bench-rows` with the same options.
set -euo pipefail
a=$1
b=$2
out=$3
rounds=${ROUNDS:-2}
repeats=${REPEATS:-10}
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for side in a b; do
    bin=$a
    [ "$side" = b ] && bin=$b
    for dtype in u32 u64; do
      dir="$out/$side-sort-$dtype-$round"
      for exp in 15 20 24 29; do
        "$bin" bench --dtype "$dtype" --min-exp "$exp" --max-exp "$exp" --versions tuned \
          --no-cpu --no-end-to-end --repeats "$repeats" -o "$dir/$exp" > /dev/null
      done
    done
    "$bin" bench-rows --repeats "$repeats" -o "$out/$side-rows-$round" > /dev/null
  done
done
python3 - "$out" "$rounds" <<'PY'
import csv, glob, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def medians(pattern, key):
    got = {}
    for path in glob.glob(os.path.join(out, pattern)):
        with open(path) as f:
            for row in csv.DictReader(f):
                if row.get("metric", "device") != "device":
                    continue
                k = key(row)
                if k:
                    got.setdefault(k, []).append(float(row["median_ms"]))
    return {k: statistics.median(v) for k, v in got.items()}
def sort_key(row):
    return (row["dtype"], int(row["n"])) if row["name"] == "bitonic-tuned" else None
def rows_key(row):
    return (row["task"], f'{row["rows"]}x{row["row_len"]}') if row["name"].startswith("bitonic") else None
lines = ["| workload | A ms | B ms | B / A |", "|---|---:|---:|---:|"]
for pattern, key, label in [("{}-sort-*/*/bitonic.csv", sort_key, lambda k: f"sort {k[0]} 2^{int(k[1]).bit_length() - 1}"),
                            ("{}-rows-*/rows.csv", rows_key, lambda k: f"{k[0]} {k[1]}")]:
    a, b = medians(pattern.format("a"), key), medians(pattern.format("b"), key)
    for k in sorted(set(a) & set(b)):
        lines.append(f"| {label(k)} | {a[k]:.4f} | {b[k]:.4f} | {b[k] / a[k]:.3f} |")
text = "\n".join(lines) + f"\n\nMedian over {rounds} rounds of each round's median.\n"
open(os.path.join(out, "ab.md"), "w").write(text)
print(text)
PY
