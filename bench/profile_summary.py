#!/usr/bin/env python3
"""One line per profiled kernel launch of an ncu CSV (bench/profile-tuned.sh, bench/profile-kv.sh):
its name, time, DRAM and SM throughput (% of peak), instructions (millions of warp
instructions), and where measured achieved occupancy, registers a thread and DRAM megabytes read
and written; then the total time.
    python3 bench/profile_summary.py PROFILE.csv"""
import csv, sys

rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head, rows = rows[0], rows[1:]
col = {name: head.index(name) for name in ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value")}
to_us = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
to_mb = {"byte": 1e-6, "Kbyte": 1e-3, "KB": 1e-3, "Mbyte": 1.0, "MB": 1.0, "Gbyte": 1e3, "GB": 1e3}
launches = {}
for r in rows:
    name, unit = r[col["Metric Name"]], r[col["Metric Unit"]]
    value = float(r[col["Metric Value"]].replace(",", ""))
    if name == "gpu__time_duration.sum":
        value *= to_us[unit]
    elif unit in to_mb:
        value *= to_mb[unit]
    m = launches.setdefault(int(r[col["ID"]]), {"kernel": r[col["Kernel Name"]].split("(")[0]})
    m[name] = value
optional = [  # (metric, label, format)
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "occ%", "{:5.1f}"),
    ("launch__registers_per_thread", "regs", "{:3.0f}"),
    ("dram__bytes_read.sum", "MB read", "{:6.1f}"),
    ("dram__bytes_write.sum", "MB written", "{:6.1f}"),
]
total = 0
for i, m in sorted(launches.items()):
    t = m["gpu__time_duration.sum"]
    total += t
    line = (f"{i:3d} {m['kernel']:<34} {t:9.1f} us  dram {m['dram__throughput.avg.pct_of_peak_sustained_elapsed']:5.1f}%  "
            f"sm {m['sm__throughput.avg.pct_of_peak_sustained_elapsed']:5.1f}%  "
            f"inst {m['smsp__inst_executed.sum'] / 1e6:8.1f} M")
    for metric, label, fmt in optional:
        if metric in m:
            line += f"  {label} " + fmt.format(m[metric])
    print(line)
print(f"total {total / 1e3:.2f} ms over {len(launches)} launches")
