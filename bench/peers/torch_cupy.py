"""torch.sort and cupy.sort timed like `bitonic bench` times ours: fresh random keys for every
repeat, one warm-up, CUDA events around the sort call alone, the median of the repeats; plus
torch's end-to-end time from a pageable NumPy array and back. Prints rows in bitonic's bench CSV
format (crates/bitonic-bench/src/lib.rs).

    python3 bench/peers/torch_cupy.py MIN_EXP MAX_EXP REPEATS COMMIT DATE > torch_cupy.csv

torch sorts int32 (its uint32 support on CUDA is partial); cupy sorts uint32.
"""
import statistics
import sys
import time

import numpy as np
import torch

from peer_timing import device_and_driver, event_time


def row(name, device, driver, commit, date, dtype, n, metric, times_ms):
    times_ms = sorted(times_ms)
    print(f"{name},{device},CUDA {driver},{commit},{date},{dtype},{n},{metric},"
          f"{statistics.median(times_ms):.6f},{times_ms[0]:.6f},{times_ms[-1]:.6f},{len(times_ms)},,false",
          flush=True)




def main():
    min_exp, max_exp, repeats = (int(a) for a in sys.argv[1:4])
    commit, date = sys.argv[4:6]
    device, driver = device_and_driver()
    try:
        import cupy
    except ImportError:
        cupy = None
        print("cupy not installed: no cupy rows", file=sys.stderr)
    info = torch.iinfo(torch.int32)
    rng = np.random.default_rng(1)
    for exp in range(min_exp, max_exp + 1):
        n = 1 << exp
        torch_times, cupy_times, e2e_times = [], [], []
        for r in range(repeats + 1):
            x = torch.randint(info.min, info.max, (n,), dtype=torch.int32, device="cuda")
            t = event_time(lambda: torch.sort(x))
            if r:
                torch_times.append(t)
            del x
            if cupy is not None:
                y = cupy.random.randint(0, 2**32, size=n, dtype=cupy.uint64).astype(cupy.uint32)
                t = event_time(lambda: cupy.sort(y))
                if r:
                    cupy_times.append(t)
                del y
            host = rng.integers(info.min, info.max, size=n, dtype=np.int32)
            torch.cuda.synchronize()
            start = time.perf_counter()
            out = torch.sort(torch.from_numpy(host).cuda()).values.cpu().numpy()
            if r:
                e2e_times.append((time.perf_counter() - start) * 1e3)
            del out, host
        row("torch.sort", device, driver, commit, date, "i32", n, "device", torch_times)
        row("torch.sort", device, driver, commit, date, "i32", n, "end_to_end", e2e_times)
        if cupy is not None:
            row("cupy.sort", device, driver, commit, date, "u32", n, "device", cupy_times)
        torch.cuda.empty_cache()
        if cupy is not None:
            cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
