#!/usr/bin/env python3
"""The README's results tables, one an area, from the CSVs of one run of
bench/readme-results.sh (one GPU, one commit), written into README.md between the markers
``<!-- results:AREA -->`` and ``<!-- /results:AREA -->``:

    python3 bench/readme-tables.py RUN_DIR [--readme README.md] [--print]

RUN_DIR is the run's folder (docs/results/<date>-<commit>-<device>/): sort/ (bench/run-gpu.sh),
rows/ (bench/run-rows.sh), topk/ (bench/run-topk.sh), python-bench.csv (python -m
bitonic.bench), host/large.csv (bitonic bench-large) and sample-python-calls.csv
(bench/peers/sample_python_calls.py). Every number in the tables comes from those files;
nothing is typed in.
"""

import argparse
import csv
import os
import re
import sys


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def read_area(run, area, names):
    """The rows of those of the CSVs `names` in the run's folder `area` that exist."""
    rows = []
    for name in names:
        path = os.path.join(run, area, name)
        if os.path.exists(path):
            rows += read(path)
    return rows


def ms(x):
    return f"{x:.3f}" if x < 10 else f"{x:.1f}" if x < 1000 else f"{x:,.0f}"


def pow2(n):
    n = int(n)
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else f"{n:,}"


def sort_table(run):
    """Implementations × sizes: device milliseconds (CPU sorts: host milliseconds)."""
    rows = read_area(run, "sort", ("bitonic.csv", "cub.csv", "torch_cupy.csv"))
    times, starred = {}, set()
    for r in rows:
        cpu = r["name"] in ("rayon-par_sort_unstable", "cpu-serial-bitonic", "cpu-parallel-bitonic")
        if (r["metric"] == "device") != (not cpu):
            continue
        times[(r["name"], int(r["n"]))] = float(r["median_ms"])
        if r.get("extrapolated") == "true":
            starred.add((r["name"], int(r["n"])))
    sizes = sorted({n for (name, n) in times if name == "bitonic-tuned"})
    sizes = [n for n in sizes if n in (1 << 20, 1 << 24)] + sizes[-1:]
    names = [
        ("bitonic-v0", "V0: one launch a step"),
        ("bitonic-v1", "V1: fused steps"),
        ("bitonic-v2", "V2: shared memory"),
        ("bitonic-v3", "V3: warp shuffles"),
        ("bitonic-v4", "V4: half the threads"),
        ("bitonic-v5", "V5: no bank conflicts"),
        ("bitonic-tuned", "**tuned** (the default)"),
        ("cub-radix", "CUB radix sort"),
        ("cub-merge", "CUB merge sort"),
        ("torch.sort", "torch.sort (i32)"),
        ("cupy.sort", "cupy.sort"),
        ("rayon-par_sort_unstable", "CPU: rayon `par_sort_unstable`, all cores"),
        ("cpu-serial-bitonic", "CPU: the network on one core"),
    ]
    out = ["| implementation | " + " | ".join(f"{pow2(n)} keys" for n in sizes) + " |",
           "|---|" + "---:|" * len(sizes)]
    for name, label in names:
        cells = []
        for n in sizes:
            t = times.get((name, n))
            cells.append("" if t is None else ms(t) + ("*" if (name, n) in starred else ""))
        if any(cells):
            out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out, first_row(rows)


def rows_table(run):
    rows = read_area(run, "rows", ("rows.csv", "cub_rows.csv", "torch_rows.csv"))
    t = {(r["name"], int(r["rows"]), int(r["row_len"]), r["task"]): float(r["median_ms"]) for r in rows}
    shapes = sorted({(k[1], k[2]) for k in t if k[0] == "bitonic-tuned"}, key=lambda s: (s[1], s[0]))
    cols = [("bitonic-tuned", "sort", "bitonic sort"), ("cub-segmented", "sort", "CUB segmented sort"),
            ("torch", "sort", "torch.sort"), ("bitonic-tuned", "argsort", "bitonic argsort (stable)"),
            ("torch", "argsort", "torch.argsort (stable)"),
            ("bitonic-tuned", "sort_by_key", "bitonic key-value")]
    out = ["| rows × length | " + " | ".join(c[2] for c in cols) + " |", "|---|" + "---:|" * len(cols)]
    for r, n in shapes:
        cells = [t.get((name, r, n, task)) for name, task, _ in cols]
        out.append(f"| {r:,} × {n:,} | " + " | ".join("" if c is None else ms(c) for c in cells) + " |")
    return out, first_row(rows)


def topk_table(run):
    rows = read(os.path.join(run, "topk", "topk.csv"))
    theirs = read_area(run, "topk", ("torch_topk.csv",))
    key = lambda r: (r["dtype"], int(r["rows"]), int(r["row_len"]), int(r["k"]))  # noqa: E731
    ours = {key(r): float(r["median_ms"]) for r in rows if r["name"].startswith("bitonic")}
    torch = {key(r): float(r["median_ms"]) for r in theirs}
    ks = sorted({k[3] for k in ours})
    shapes = sorted({k[:3] for k in ours}, key=lambda s: (s[1] * s[2], s[1], s[0]))
    out = ["| rows × length | dtype | " + " | ".join(f"k = {k:,}" for k in ks) + " |",
           "|---|---|" + "---:|" * len(ks)]
    for dtype, r, n in shapes:
        cells = []
        for k in ks:
            a, b = ours.get((dtype, r, n, k)), torch.get((dtype, r, n, k))
            if a is None:
                cells.append("")
            elif b is None:
                cells.append(ms(a))
            else:
                cells.append(f"{ms(a)} / {ms(b)} ({b / a:.1f}×)")
        out.append(f"| {r:,} × {n:,} | {dtype} | " + " | ".join(cells) + " |")
    return out, first_row(rows)


def python_table(run):
    rows = read(os.path.join(run, "python-bench.csv"))
    out = ["| call | shape | bitonic | torch | torch / bitonic |", "|---|---|---:|---:|---:|"]
    for r in rows:
        unit = r["unit"]
        b, t = float(r["bitonic"]), float(r["torch"])
        op = r["op"] + (f", k = {r['k']}" if r["k"] and not r["op"].startswith("overhead") else "")
        out.append(f"| `{op}` | {r['shape'].replace('x', ' × ')} | {b:.3f} {unit} | {t:.3f} {unit} | {t / b:.2f}× |")
    return out, None


def sample_table(run):
    """bitonic.sample beside FlashInfer, f32 and bf16 logits of 128,256 (a Llama 3 vocabulary)."""
    rows = read(os.path.join(run, "sample-python-calls.csv"))
    ms_of = {(r["peer"], r["dtype"], int(r["batch"]), int(r["vocab"]), r["filters"]): float(r["ms_per_call"])
             for r in rows}
    vocab, dtypes = 128256, ("f32", "bf16")
    cells = sorted({(int(r["batch"]), r["filters"]) for r in rows if int(r["vocab"]) == vocab})
    out = ["| batch | filters | " + " | ".join(f"{d}: bitonic / FlashInfer" for d in dtypes)
           + " | f32: torch reference path |",
           "|---:|---|" + "---:|" * (len(dtypes) + 1)]
    for batch, filters in cells:
        line = []
        for d in dtypes:
            a, b = ms_of.get(("bitonic", d, batch, vocab, filters)), ms_of.get(("flashinfer", d, batch, vocab, filters))
            line.append("" if a is None else ms(a) if b is None else f"{ms(a)} / {ms(b)} ({b / a:.2f}×)")
        ref = ms_of.get(("torch reference", "f32", batch, vocab, filters))
        line.append("" if ref is None else ms(ref))
        out.append(f"| {batch} | {filters.replace('_', '-')} | " + " | ".join(line) + " |")
    return out, None


def host_table(run):
    """Host slices through the GPU: each size's cases, with the link's copies beside them."""
    rows = read(os.path.join(run, "host", "large.csv"))
    names = {"link-htod": "the link alone: pinned memory to the GPU",
             "link-dtoh": "the link alone: the GPU to pinned memory",
             "sort": "`Sorter::sort` (one in-memory GPU sort)",
             "sort_large": "`Sorter::sort_large`",
             "rayon": "rayon `par_sort_unstable`, all cores"}
    lens = sorted({int(r["len"]) for r in rows})
    out = ["| u32 keys, pageable host memory in and out | " + " | ".join(f"{pow2(n)} keys" for n in lens) + " |",
           "|---|" + "---:|" * len(lens)]
    for case, label in names.items():
        cells = []
        for n in lens:
            hit = [r for r in rows if r["case"] == case and int(r["len"]) == n]
            if not hit:
                cells.append("")
                continue
            r = hit[0]
            how = f" ({r['runs']} runs, {r['merge']})" if case == "sort_large" else ""
            cells.append(f"{ms(float(r['median_ms']))}{how}")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out, first_row(rows)


def first_row(rows):
    return rows[0] if rows else None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run")
    p.add_argument("--readme", default="README.md")
    p.add_argument("--print", action="store_true", help="print the tables instead of writing README")
    a = p.parse_args()
    run = a.run.rstrip("/")
    tables = {}
    for area, make in (("sort", sort_table), ("rows", rows_table), ("topk", topk_table),
                       ("host", host_table), ("python", python_table), ("sample", sample_table)):
        try:
            table, row = make(run)
        except FileNotFoundError as e:
            sys.exit(f"{area}: {e.filename} is missing: the run is incomplete")
        tables[area] = table
        if row is not None:
            tables.setdefault("_row", row)
    row = tables.pop("_row")
    source = (f"The steps of `bash bench/readme-results.sh` on an **{row['device']}** ({row['driver']}), "
              f"commit `{row['commit'][:7]}`, {row['date']}: "
              f"[{run}]({run}/) holds their CSVs and logs (its about.md says how they ran); "
              f"`python3 bench/readme-tables.py {run}` wrote these tables from them.")
    tables["source"] = [source]
    if a.print:
        for area, lines in tables.items():
            print(f"## {area}\n" + "\n".join(lines) + "\n")
        return
    text = open(a.readme).read()
    for area, lines in tables.items():
        pattern = re.compile(rf"(<!-- results:{area} -->\n).*?(<!-- /results:{area} -->)", re.S)
        if not pattern.search(text):
            sys.exit(f"{a.readme} has no <!-- results:{area} --> ... <!-- /results:{area} --> markers")
        text = pattern.sub(lambda m: m.group(1) + "\n".join(lines) + "\n" + m.group(2), text)
    with open(a.readme, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
