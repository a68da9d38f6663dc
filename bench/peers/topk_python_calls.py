"""Top-k from Python as a serving loop calls it: `calls` calls back to back on one CUDA tensor,
timed by CUDA events around all of them, the time a call their mean; the median over repeats,
each on fresh keys (uniform in [-1, 1), made before the start event), after one warm-up round
(which also lets FlashInfer compile its kernel). Beside bitonic.topk: torch.topk, and
flashinfer.top_k sorted and unsorted where flashinfer imports (FlashInfer 0.6 selects the k
largest; its sorted form orders them as torch.topk does). Host time is in the figure, as it is
in a serving loop: a call that costs more on the host than on the GPU shows it.

    python3 bench/peers/topk_python_calls.py --csv OUT.csv [--calls 50] [--repeats 7]
        [--dtypes f32,bf16] [--ks 1,50,256,1024] [--commit C] [ROWSxLEN ...]

CSV columns: peer, device, dtype, rows, row_len, k, ms_per_call (median), min, max, repeats,
calls, commit.
"""
import csv

import torch

import bitonic
from peer_timing import calls_parser, commit_of, device_and_driver, time_peers, uniform_keys

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
# The README's top-k shapes, then decoding batch 1 (one row of a vocabulary).
SHAPES = ["64x128256", "1x16777216", "16384x1024", "256x151936", "4096x32768", "1x128256",
          "1x262144"]


def peers():
    out = {
        "bitonic": lambda x, k: bitonic.topk(x, k),
        "torch": lambda x, k: torch.topk(x, k),
    }
    try:
        import flashinfer
    except Exception as e:  # noqa: BLE001 - any failure: measured without it, and said so
        print(f"# flashinfer does not import ({e.__class__.__name__}: {e}): not measured")
    else:
        print(f"# flashinfer {flashinfer.__version__}")
        out["flashinfer sorted"] = lambda x, k: flashinfer.top_k(x, k, sorted=True)
        out["flashinfer unsorted"] = lambda x, k: flashinfer.top_k(x, k, sorted=False)
    return out


def main():
    p = calls_parser(__doc__.split("\n\n")[0], 50)
    p.add_argument("--dtypes", default="f32,bf16")
    p.add_argument("--ks", default="1,50,256,1024")
    p.add_argument("shapes", nargs="*", default=SHAPES)
    a = p.parse_args()
    device, driver = device_and_driver()
    commit = commit_of(a.commit)
    funcs = peers()
    ks = [int(k) for k in a.ks.split(",")]
    with open(a.csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["peer", "device", "dtype", "rows", "row_len", "k", "ms_per_call", "min", "max",
                    "repeats", "calls", "commit"])
        for shape in a.shapes:
            rows, row_len = (int(v) for v in shape.split("x"))
            for name in a.dtypes.split(","):
                for k in ks:
                    if k > row_len:
                        continue
                    line = time_peers(w, funcs, lambda: uniform_keys(rows, row_len, DTYPES[name]),
                                      lambda fn, x: fn(x, k), [name, rows, row_len, k], a, commit,
                                      f"{device} (CUDA {driver})")
                    f.flush()
                    print(f"{name:4} {rows}x{row_len} k={k:<5} {line}", flush=True)


if __name__ == "__main__":
    main()
