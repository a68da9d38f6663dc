#!/usr/bin/env python3
"""Issue 22's table from the CSVs of one run of bench/issue22-table.sh in OUT: prints the nine
workloads against their limits (markdown, beside CUB) and writes OUT/issue22.csv, each
workload's tuned median (workload, tuned_ms, limit_ms), which bench/ab-issue49.sh compares.

    python3 bench/issue22-table.py OUT
"""
import csv, sys
out = sys.argv[1]
def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))
def sorts(dtype):
    t = {}
    for r in rows(f"{out}/{dtype}/bitonic.csv") + rows(f"{out}/cub-{dtype}.csv"):
        if r["metric"] == "device":
            t[(r["name"], int(r["n"]))] = float(r["median_ms"])
    return t
u32, u64 = sorts("u32"), sorts("u64")
rowed = {(r["name"], r["task"]): float(r["median_ms"])
         for r in rows(f"{out}/rows/rows.csv") + rows(f"{out}/cub_rows.csv") if r["row_len"] == "16777216"}
first = rows(f"{out}/u32/bitonic.csv")[0]
print(f"Issue 22's workloads on one {first['device']} ({first['driver']}), commit {first['commit']}, "
      f"{first['date']}: device-resident keys, CUDA events, median of {first['repeats']}, beside CUB in one call "
      "(bench/issue22-table.sh).\n")
print("| workload | must reach | aim | tuned | CUB radix | CUB merge | met |")
print("|---|---:|---:|---:|---:|---:|---|")
# The workloads' tuned times, for bench/ab-issue49.sh and other comparisons of runs.
tuned = []
# (key type, table, log2 n, the limit and aim, as it writes them)
for dtype, table, e, limit, aim in [("u32", u32, 15, "0.025", "0.015"), ("u32", u32, 20, "0.080", "0.060"),
                                    ("u32", u32, 22, "0.17", "0.13"), ("u32", u32, 24, "0.60", "0.47"),
                                    ("u32", u32, 29, "20", "12.7"), ("u64", u64, 24, "1.3", "1.2"),
                                    ("u64", u64, 28, "25", "16.9")]:
    n = 1 << e
    t = table[("bitonic-tuned", n)]
    print(f"| {dtype} 2^{e} | ≤ {limit} | ≤ {aim} | **{t:.3f}** | {table[('cub-radix', n)]:.3f} | "
          f"{table[('cub-merge', n)]:.3f} | {'yes' if t <= float(limit) else 'no'} |")
    tuned.append((f"{dtype} 2^{e}", t, limit))
pairs = rowed[("cub-radix", "sort_by_key")]
for task, label in [("sort_by_key", "key-value u32 → u32 2^24"), ("argsort", "argsort u32 2^24")]:
    t = rowed[("bitonic-tuned", task)]
    print(f"| {label} | ≤ 1.0 | ≤ 0.61 | **{t:.3f}** | {pairs:.3f} (pairs) | | {'yes' if t <= 1.0 else 'no'} |")
    tuned.append((label, t, "1.0"))
with open(f"{out}/issue22.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["workload", "tuned_ms", "limit_ms"])
    w.writerows(tuned)
