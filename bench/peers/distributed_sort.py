"""bitonic.distributed.sort with one process a GPU, as torchrun starts it (bench/torchrun-sort.sh):
every rank sorts its shard of `--keys` random keys (2^K, split evenly) over the NCCL process
group; the time of a call is from a barrier before it to a barrier after it, on the host, the
median of `--repeats` after one warm-up call. Rank 0 then times one GPU sorting all the keys
alone (`bitonic.sort_values`, CUDA events), the baseline, when they fit, and writes one CSV
line a run. Each rank's memory pool keeps half its GPU once freed
(`bitonic.distributed.keep_freed_memory`), as `bitonic bench --gpus` keeps it for the
one-process sort it is compared with, so neither maps its buffers afresh every call:

    torchrun --standalone --nproc-per-node 4 bench/peers/distributed_sort.py --csv OUT.csv \\
        [--keys 2^28] [--dtype int32] [--values int32] [--repeats 5] [--commit C]

Then every rank times NCCL's all-to-all (`all_to_all_single`) of a buffer as large as its
shard, from barrier to barrier, median of `--repeats`: what moving every key once costs on
this host, the floor under the sort's exchange.

CSV columns: ranks, device, dtype, keys, ms_distributed (median), min, max, ms_one_gpu,
repeats, commit, ms_all_to_all (median).
"""
import argparse
import csv
import os
import statistics
import time

import torch
import torch.distributed as dist

import bitonic
from bitonic import distributed
from peer_timing import commit_of, device_and_driver, event_time


def count(text):
    return 2 ** int(text[2:]) if text.startswith("2^") else int(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--csv", required=True)
    p.add_argument("--keys", type=count, default=2**28)
    p.add_argument("--dtype", default="int32")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--commit")
    p.add_argument("--values", help="a dtype: sort_pairs with values of it (their positions)")
    a = p.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    rank, ranks = dist.get_rank(), dist.get_world_size()
    dtype = getattr(torch, a.dtype)
    share = a.keys // ranks + (1 if rank < a.keys % ranks else 0)
    g = torch.Generator(device="cuda").manual_seed(rank)
    distributed.keep_freed_memory(torch.cuda.get_device_properties(local).total_memory // 2)

    def random_keys(count, generator=None):
        if dtype.is_floating_point:
            return torch.randn(count, generator=generator, device="cuda").to(dtype)
        if dtype == torch.uint32:  # torch draws no unsigned words: int64 ones, cast
            drawn = torch.randint(0, 2**32, (count,), generator=generator, device="cuda")
            return drawn.to(dtype)
        if dtype == torch.uint64:  # every int64, its bits read as uint64
            drawn = torch.randint(-(2**63), 2**63 - 1, (count,), generator=generator,
                                  device="cuda", dtype=torch.int64)
            return drawn.view(dtype)
        info = torch.iinfo(dtype)
        return torch.randint(info.min, info.max, (count,), generator=generator, device="cuda",
                             dtype=dtype)

    def fresh():
        return random_keys(share, g)

    values = getattr(torch, a.values) if a.values else None

    # The values (their positions), made once, outside the timed calls.
    shard_values = None if values is None else torch.arange(share, device="cuda").to(values)

    def call(keys):
        if values is None:
            return distributed.sort(keys)
        return distributed.sort_pairs(keys, shard_values)

    times = []
    for r in range(a.repeats + 1):
        keys = fresh()
        torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        out = call(keys)
        torch.cuda.synchronize()
        dist.barrier()
        if r:
            times.append((time.perf_counter() - start) * 1e3)
        del keys, out
    # As many bytes on every rank (all_to_all_single's even split needs a multiple of the
    # ranks): the smallest shard's keys and values.
    width = dtype.itemsize + (0 if values is None else values.itemsize)
    send = torch.empty((a.keys // ranks) * width // ranks * ranks, dtype=torch.uint8,
                       device="cuda")
    received = torch.empty_like(send)
    exchange = []
    for r in range(a.repeats + 1):
        torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        dist.all_to_all_single(received, send)
        torch.cuda.synchronize()
        dist.barrier()
        if r:
            exchange.append((time.perf_counter() - start) * 1e3)
    del send, received
    one_gpu = ""
    if rank == 0:
        try:
            whole = random_keys(a.keys)
            if values is None:
                alone = lambda: bitonic.sort_values(whole)  # noqa: E731
            else:
                whole_values = torch.arange(a.keys, device="cuda").to(values)
                alone = lambda: bitonic.sort_pairs(whole, whole_values)  # noqa: E731
            alone()
            one_gpu = f"{statistics.median(event_time(alone) for _ in range(a.repeats)):.3f}"
            del whole
        except (torch.OutOfMemoryError, bitonic.BitonicError) as e:
            print(f"# one GPU cannot sort {a.keys} keys alone: {e}")
        device, driver = device_and_driver()
        med = statistics.median(times)
        with open(a.csv, "a", newline="") as f:
            what = a.dtype + (f" with {a.values} values" if values is not None else "")
            csv.writer(f).writerow([ranks, f"{device} (CUDA {driver})", what, a.keys, f"{med:.3f}",
                                    f"{min(times):.3f}", f"{max(times):.3f}", one_gpu, a.repeats,
                                    commit_of(a.commit), f"{statistics.median(exchange):.3f}"])
        print(f"{ranks} ranks, {a.keys} {a.dtype}: distributed {med:.3f} ms, one GPU {one_gpu or '-'} ms, "
              f"all-to-all of the shards {statistics.median(exchange):.3f} ms")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
