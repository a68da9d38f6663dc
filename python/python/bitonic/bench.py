"""``python -m bitonic.bench``: bitonic's sort, argsort and top-k beside torch's, in one process,
on CUDA tensors, and what the binding costs a call.

Each case times one call with CUDA events on the caller's stream (bitonic queues its work
there, so the end event waits for it), after warm-up calls, on fresh random data each repeat
(made before the start event), and reports the median. The binding's overhead is host time: a
tiny input sorted many times in batches, the Python call (``bitonic.sort``: the dim/contiguity
checks, the output tensors, their descriptions) against the bare native call on ready
descriptions (the Rust side: the checks, the plan and the kernel launches), and torch's own
call on the same input.

    python -m bitonic.bench [--csv FILE] [--repeats N] [--quick]
"""

import argparse
import csv
import statistics
import sys
import time

import bitonic
from bitonic import _native, _tensors

SORT_SHAPES = [(4096, 4096), (16384, 1024), (1, 1 << 24)]
TOPK_SHAPES = [(64, 128256), (16384, 1024), (1, 1 << 24)]
TOPK_KS = [8, 50, 1024]


def _median_ms(torch, make, f, repeats, warmup=2):
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for r in range(warmup + repeats):
        x = make()
        start.record()
        f(x)
        end.record()
        end.synchronize()
        if r >= warmup:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def _host_us(torch, f, batches=20, calls=100):
    """Median host microseconds a call of ``f``, ``calls`` calls a batch, the stream drained
    between batches (so the launch queue never fills)."""
    per = []
    for _ in range(batches + 2):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        per.append((time.perf_counter() - t0) / calls * 1e6)
    torch.cuda.synchronize()
    return statistics.median(per[2:])


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bitonic.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--csv", help="also write the results to this CSV file")
    p.add_argument("--repeats", type=int, default=10, help="timed calls a case (median)")
    p.add_argument("--quick", action="store_true", help="small shapes, to try the harness")
    a = p.parse_args(argv)
    try:
        import torch
    except ImportError as e:
        sys.exit(f"python -m bitonic.bench compares with torch, which does not import: {e}")
    if not torch.cuda.is_available() or not bitonic.info()["cuda"]:
        sys.exit(f"python -m bitonic.bench needs a GPU for torch and bitonic: {bitonic.info()['reason']}")
    dev = torch.cuda.get_device_name()
    sort_shapes = [(64, 1024), (1, 1 << 16)] if a.quick else SORT_SHAPES
    topk_shapes = [(64, 4096), (1, 1 << 16)] if a.quick else TOPK_SHAPES
    rows = []

    def case(op, shape, k, ours, theirs):
        make = lambda: torch.rand(shape, device="cuda")  # noqa: E731
        b = _median_ms(torch, make, ours, a.repeats)
        t = _median_ms(torch, make, theirs, a.repeats)
        shape_s = "x".join(map(str, shape))
        rows.append(dict(op=op, shape=shape_s, k=k or "", dtype="float32", bitonic=round(b, 4),
                         torch=round(t, 4), unit="ms", speedup=round(t / b, 2)))
        print(f"{op:12} {shape_s:>14} {k or '':>5}  bitonic {b:9.3f} ms  torch {t:9.3f} ms  "
              f"x{t / b:5.2f}", flush=True)

    print(f"# bitonic {bitonic.info()['version']} vs torch {torch.__version__} on {dev}, float32 keys, "
          f"median of {a.repeats}")
    for shape in sort_shapes:
        case("sort", shape, None, lambda x: bitonic.sort(x), lambda x: torch.sort(x))
        case("sort stable", shape, None, lambda x: bitonic.sort(x),
             lambda x: torch.sort(x, stable=True))
        case("argsort", shape, None, lambda x: bitonic.argsort(x), lambda x: torch.argsort(x))
        case("sort_values", shape, None, lambda x: bitonic.sort_values(x),
             lambda x: torch.sort(x).values)
    for shape in topk_shapes:
        for k in TOPK_KS:
            if k <= shape[-1]:
                case("topk", shape, k, lambda x, k=k: bitonic.topk(x, k),
                     lambda x, k=k: torch.topk(x, k))

    # The binding's overhead: host time a call on a tiny input.
    x = torch.rand(1, 256, device="cuda")
    keys, idx = x.clone(), torch.empty(x.shape, dtype=torch.int64, device="cuda")
    s = torch.cuda.current_stream().cuda_stream or 1
    describe = _tensors.lib("torch").describe  # what the Python call passes the native one
    ck, ci = describe(keys, s), describe(idx, s)
    out = torch.empty(1, 8, device="cuda")
    oi = torch.empty(1, 8, dtype=torch.int64, device="cuda")
    co, coi = describe(out, s), describe(oi, s)
    # A sort with indices is the top-k of the whole row, into outputs of its own.
    cv = describe(torch.empty_like(x), s)
    over = [
        ("sort", lambda: bitonic.sort(x), lambda: _native.cuda_topk(ck, cv, ci, 256, 256, False, s),
         lambda: torch.sort(x)),
        ("argsort", lambda: bitonic.argsort(x),
         lambda: _native.cuda_topk(ck, cv, ci, 256, 256, False, s), lambda: torch.argsort(x)),
        ("sort_values", lambda: bitonic.sort_values(x),
         lambda: _native.cuda_sort(ck, None, 256, False, s), lambda: torch.sort(x).values),
        ("topk", lambda: bitonic.topk(x, 8),
         lambda: _native.cuda_topk(ck, co, coi, 256, 8, True, s), lambda: torch.topk(x, 8)),
    ]
    print("# host time a call, 1x256 float32 (binding overhead = python call - native call)")
    for op, py, native, th in over:
        for f in (py, native, th):
            f()
        p_us, n_us, t_us = _host_us(torch, py), _host_us(torch, native), _host_us(torch, th)
        rows.append(dict(op=f"overhead {op}", shape="1x256", k=8 if op == "topk" else "",
                         dtype="float32", bitonic=round(p_us, 2), torch=round(t_us, 2), unit="us",
                         speedup="", native=round(n_us, 2), binding=round(p_us - n_us, 2)))
        print(f"{op:12}  python call {p_us:7.2f} us  native call {n_us:7.2f} us  "
              f"binding {p_us - n_us:6.2f} us  torch call {t_us:7.2f} us", flush=True)
    if a.csv:
        fields = ["op", "shape", "k", "dtype", "bitonic", "torch", "unit", "speedup", "native",
                  "binding"]
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for r in rows:
                w.writerow(r)
        print(f"# wrote {a.csv}")


if __name__ == "__main__":
    main()
