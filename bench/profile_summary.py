#!/usr/bin/env python3
"""One line per profiled pass of bench/profile-tuned.sh's ncu CSV: time, DRAM and SM
throughput (% of peak), instructions (millions of warp instructions); then the total.
    python3 bench/profile_summary.py PROFILE.csv"""
import csv, sys

rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head, rows = rows[0], rows[1:]
col = {name: head.index(name) for name in ("ID", "Metric Name", "Metric Unit", "Metric Value")}
to_us = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
passes = {}
for r in rows:
    value = float(r[col["Metric Value"]].replace(",", ""))
    if r[col["Metric Name"]] == "gpu__time_duration.sum":
        value *= to_us[r[col["Metric Unit"]]]
    passes.setdefault(int(r[col["ID"]]), {})[r[col["Metric Name"]]] = value
total = 0
for i, m in sorted(passes.items()):
    t = m["gpu__time_duration.sum"]
    total += t
    print(f"{i:3d} {t:9.1f} us  dram {m['dram__throughput.avg.pct_of_peak_sustained_elapsed']:5.1f}%  "
          f"sm {m['sm__throughput.avg.pct_of_peak_sustained_elapsed']:5.1f}%  "
          f"inst {m['smsp__inst_executed.sum'] / 1e6:8.1f} M")
print(f"total {total / 1e3:.2f} ms over {len(passes)} passes")
