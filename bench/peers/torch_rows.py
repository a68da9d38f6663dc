"""torch's row sorts timed like `bitonic bench-rows` times ours: fresh random keys every repeat,
one warm-up, CUDA events around the call alone, the median. Prints rows in the row-bench CSV
format (crates/bitonic-bench/src/rows.rs), all named "torch":

    sort         torch.sort(x, dim=-1)            (values and indices: torch always makes both)
    argsort      torch.argsort(x, dim=-1, stable=True)   (ours is stable too)
    sort_by_key  torch.sort(x, dim=-1), then the values gathered by its indices

    python3 bench/peers/torch_rows.py REPEATS COMMIT DATE ROWSxLEN... > torch_rows.csv

Keys are int32 (torch's uint32 support on CUDA is partial).
"""
import statistics
import sys

import torch

from peer_timing import device_and_driver, event_time




def main():
    repeats = int(sys.argv[1])
    commit, date = sys.argv[2:4]
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[4:]]
    device, driver = device_and_driver()
    info = torch.iinfo(torch.int32)
    for rows, row_len in shapes:
        values = torch.arange(rows * row_len, dtype=torch.int32, device="cuda").reshape(rows, row_len)
        tasks = {
            "sort": lambda x: torch.sort(x, dim=-1),
            "argsort": lambda x: torch.argsort(x, dim=-1, stable=True),
            "sort_by_key": lambda x: torch.gather(values, -1, torch.sort(x, dim=-1).indices),
        }
        for task, work in tasks.items():
            times = []
            for r in range(repeats + 1):
                x = torch.randint(info.min, info.max, (rows, row_len), dtype=torch.int32, device="cuda")
                t = event_time(lambda: work(x))
                if r:
                    times.append(t)
            times.sort()
            print(f"torch,{device},CUDA {driver},{commit},{date},i32,{rows},{row_len},{task},"
                  f"{statistics.median(times):.6f},{times[0]:.6f},{times[-1]:.6f},{len(times)}", flush=True)


if __name__ == "__main__":
    main()
