"""Row sorts with indices from Python, as issue 51 measures them: `calls` calls back to back on
one CUDA tensor, timed by CUDA events around all of them, the time a call their mean; the
median over repeats, each on fresh keys (uniform in [-1, 1), made before the start event),
after one warm-up round. Peers, in one process on the same keys:

    bitonic sort        bitonic.sort(x, descending=d): values (the input's own bits) and
                        int64 indices, stable
    bitonic sort_values bitonic.sort_values(x, descending=d): the values alone
    bitonic argsort     bitonic.argsort(x, descending=d): the int64 indices alone, stable
    torch sort          torch.sort(x, descending=d, stable=True)
    torch argsort       torch.argsort(x, descending=d, stable=True)

    python3 bench/peers/sort_python_calls.py --csv OUT.csv [--calls 10] [--repeats 7]
        [--commit C] [ROWSxLEN:DTYPE:ORDER ...]

CSV columns: peer, device, dtype, rows, row_len, order, ms_per_call (median), min, max,
repeats, calls, commit.
"""
import csv

import torch

import bitonic
from peer_timing import calls_parser, commit_of, device_and_driver, time_peers, uniform_keys

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
# Issue 51's shapes (ascending f32), then the vocabulary rows a top-p sampler sorts.
CASES = [
    "65536x256:f32:asc", "16384x1024:f32:asc", "4096x4096:f32:asc", "1024x16384:f32:asc",
    "1x16777216:f32:asc", "1x67108864:f32:asc", "1x1048576:f32:asc",
    "64x128256:f32:desc", "64x128256:bf16:desc", "256x151936:f32:desc", "256x151936:bf16:desc",
]

PEERS = {
    "bitonic sort": lambda x, d: bitonic.sort(x, descending=d),
    "bitonic sort_values": lambda x, d: bitonic.sort_values(x, descending=d),
    "bitonic argsort": lambda x, d: bitonic.argsort(x, descending=d),
    "torch sort": lambda x, d: torch.sort(x, descending=d, stable=True),
    "torch argsort": lambda x, d: torch.argsort(x, descending=d, stable=True),
}


def main():
    p = calls_parser(__doc__.split("\n\n")[0], 10)
    p.add_argument("cases", nargs="*", default=CASES)
    a = p.parse_args()
    device, driver = device_and_driver()
    commit = commit_of(a.commit)
    with open(a.csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["peer", "device", "dtype", "rows", "row_len", "order", "ms_per_call", "min",
                    "max", "repeats", "calls", "commit"])
        for case in a.cases:
            shape, name, order = case.split(":")
            rows, row_len = (int(v) for v in shape.split("x"))
            descending = order == "desc"
            line = time_peers(w, PEERS, lambda: uniform_keys(rows, row_len, DTYPES[name]),
                              lambda fn, x: fn(x, descending), [name, rows, row_len, order], a,
                              commit, f"{device} (CUDA {driver})")
            f.flush()
            print(f"{case:24} {line}", flush=True)


if __name__ == "__main__":
    main()
