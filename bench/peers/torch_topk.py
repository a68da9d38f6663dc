"""torch.topk timed like `bitonic bench-topk` times ours: fresh random keys every repeat, drawn
as ours are (uniform in [-1, 1): crates/bitonic-bench/src/gen.rs), one warm-up, CUDA events
around the call alone, the median. Prints rows in the top-k CSV format
(crates/bitonic-bench/src/topk.rs), named "torch":

    torch.topk(x, k, dim=-1, largest=True, sorted=True)     values and int64 indices

    python3 bench/peers/torch_topk.py REPEATS COMMIT DATE DTYPES KS ROWSxLEN... > torch_topk.csv

DTYPES and KS are comma-separated (f32,bf16 and 1,8,50,256,1024); a k above the row length is
skipped, as in ours.
"""
import statistics
import sys

import torch

from peer_timing import device_and_driver, event_time

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def main():
    repeats = int(sys.argv[1])
    commit, date = sys.argv[2:4]
    dtypes = sys.argv[4].split(",")
    ks = [int(k) for k in sys.argv[5].split(",")]
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[6:]]
    device, driver = device_and_driver()
    for rows, row_len in shapes:
        for name in dtypes:
            for k in ks:
                if k > row_len:
                    continue
                times = []
                for r in range(repeats + 1):
                    x = (torch.rand(rows, row_len, device="cuda") * 2 - 1).to(DTYPES[name])
                    t = event_time(lambda: torch.topk(x, k, dim=-1, largest=True, sorted=True))
                    if r:
                        times.append(t)
                    del x
                times.sort()
                print(f"torch,{device},CUDA {driver},{commit},{date},{name},{rows},{row_len},{k},"
                      f"{statistics.median(times):.6f},{times[0]:.6f},{times[-1]:.6f},{len(times)}",
                      flush=True)


if __name__ == "__main__":
    main()
