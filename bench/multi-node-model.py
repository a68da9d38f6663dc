"""The multi-GPU sort past one host, on paper (issue 53): predicted times of the partition
(sample sort) and merge-split algorithms on 1 to 64 nodes of 8 GPUs, from the rates measured
on one host and the links' published bandwidths. Prints a markdown table of each scenario, and
writes them as CSV with --csv.

    python3 bench/multi-node-model.py [--csv OUT.csv]

The model (docs/design/multi-gpu.md, "Past one host") in one place, u32 keys:
- local sort: LOCAL_SORT_RATE keys a second (the tile sorts and merge levels of one GPU);
- splitters and cuts: a fixed cost, plus one all-gather;
- partition's exchange: each GPU sends (G - 1)/P of its shard over NVLink and (P - G)/P over
  its own InfiniBand port, the two at once, on a non-blocking fat tree (no congestion), plus a
  latency a message it sends;
- partition's merges: ceil(log2 P) two-way merge levels over the shard (what runs today), or
  ceil(log16 P) with 16-way merges (multiway levels, as the one-GPU merge sort has);
- partition by rails: the exchange in two steps, within each node, then between the GPUs of
  the same index across nodes (fewer, larger messages over InfiniBand);
- partition first (not built): cut the unsorted shards at splitters from a sample, exchange,
  and sort what arrives while the rest arrives: the sort's time beyond the exchange's, plus one
  cutting pass ("sort ms" is then that remainder);
- merge-split: log2 P (log2 P + 1) / 2 rounds; the partner of a round differs in one bit of
  the rank, so a round is over NVLink when that bit is below log2 G and over InfiniBand when
  not; each round moves half a shard each way (random keys) and merges a shard.
"""
import argparse
import csv
import math

# Measured on one host (docs/notes/multi-gpu.md; H200, u32, 63b9bf7 / b536603):
LOCAL_SORT_RATE = 2**30 / 0.061  # keys/s: 2^30 keys in ~61 ms
MERGE_LEVEL_RATE = 2**30 / 0.00305  # keys/s through one two-way merge level (6.1 ms for 2)
SPLITTER_S = 0.0004  # samples, splitters and cuts: ~0.4 ms
TURN_S = 0.001  # merge-split's turn search and small copies, a round
NVLINK_BYTES_S = 290e9  # the measured all-to-all, a direction a GPU (NCCL over NVLink)
# Published: NDR InfiniBand is 400 Gb/s a port, one port a GPU on DGX H100-class nodes; taken
# at 80% (NCCL's all-to-all rarely passes that over IB). HDR (200 Gb/s) for older clusters.
LINKS = {"NDR 400G": 0.8 * 400e9 / 8, "HDR 200G": 0.8 * 200e9 / 8}
LATENCY_S = {"nvlink": 10e-6, "ib": 20e-6}  # a message; an upper bound (sends in a row)
GPUS_A_NODE = 8
KEY_BYTES = 4


def partition(keys_a_gpu, p, ib, ways):
    g = min(p, GPUS_A_NODE)
    shard = keys_a_gpu * KEY_BYTES
    intra = shard * (g - 1) / p / NVLINK_BYTES_S
    inter = shard * (p - g) / p / ib if p > g else 0.0
    latency = (g - 1) * LATENCY_S["nvlink"] + (p - g) * LATENCY_S["ib"]
    exchange = max(intra, inter) + latency
    levels = math.ceil(math.log(p, ways) - 1e-9) if p > 1 else 0
    merge = levels * keys_a_gpu / MERGE_LEVEL_RATE
    sort = keys_a_gpu / LOCAL_SORT_RATE
    return sort, SPLITTER_S if p > 1 else 0.0, exchange, merge


def partition_by_rails(keys_a_gpu, p, ib, ways):
    """Partition with a two-step exchange: first within each node (NVLink), so that GPU i
    holds what goes to GPU i of every node, then between the GPUs of one index ("rails") over
    InfiniBand: nodes - 1 messages a GPU instead of p - g, for one more NVLink pass."""
    g = min(p, GPUS_A_NODE)
    nodes = p // g
    sort, split, _, merge = partition(keys_a_gpu, p, ib, ways)
    shard = keys_a_gpu * KEY_BYTES
    within = shard * (g - 1) / g / NVLINK_BYTES_S + (g - 1) * LATENCY_S["nvlink"]
    across = shard * (nodes - 1) / nodes / ib + (nodes - 1) * LATENCY_S["ib"] if nodes > 1 else 0.0
    return sort, split, within + across, merge


def partition_first(keys_a_gpu, p, ib, ways):
    """Not built: splitters from a sample of the unsorted keys, one pass that cuts each shard
    into its buckets, then the exchange, with each arriving piece sorted as a run while the
    rest arrive, and one multiway merge of the runs: the local sort hides behind the exchange
    (or the other way round)."""
    sort, split, exchange, merge = partition(keys_a_gpu, p, ib, ways)
    cut = keys_a_gpu / MERGE_LEVEL_RATE  # one pass over the shard, as a merge level
    hidden = max(sort, exchange)
    return hidden - exchange + cut, split, exchange, merge


def merge_split(keys_a_gpu, p, ib):
    bits = int(math.log2(p))
    node_bits = int(math.log2(min(p, GPUS_A_NODE)))
    half = keys_a_gpu * KEY_BYTES / 2
    exchange = merge = 0.0
    for j in range(bits):  # bit j is a round's partner bit in bits - j stages
        rounds = bits - j
        over_ib = j >= node_bits
        link = ib if over_ib else NVLINK_BYTES_S
        alpha = LATENCY_S["ib" if over_ib else "nvlink"]
        exchange += rounds * (half / link + alpha + TURN_S)
        merge += rounds * keys_a_gpu / MERGE_LEVEL_RATE
    return keys_a_gpu / LOCAL_SORT_RATE, 0.0, exchange, merge


def rows(scenario, total_of, link_name):
    ib = LINKS[link_name]
    out = []
    for nodes in (1, 2, 4, 8, 16, 32, 64):
        p = nodes * GPUS_A_NODE
        keys = total_of(p)
        n = keys / p
        one_gpu = keys / LOCAL_SORT_RATE  # one GPU at the same rate, as if the keys fitted
        for name, parts in (
            ("partition, 2-way merges", partition(n, p, ib, 2)),
            ("partition, 16-way merges", partition(n, p, ib, 16)),
            ("partition by rails, 16-way", partition_by_rails(n, p, ib, 16)),
            ("partition first, overlapped", partition_first(n, p, ib, 16)),
            ("merge-split", merge_split(n, p, ib)),
        ):
            sort, split, exchange, merge = parts
            total = sort + split + exchange + merge
            out.append({
                "scenario": scenario, "link": link_name, "nodes": nodes, "gpus": p,
                "keys": f"2^{math.log2(keys):.0f}", "algorithm": name,
                "sort_ms": sort * 1e3, "exchange_ms": exchange * 1e3, "merge_ms": merge * 1e3,
                "total_ms": total * 1e3, "speed_up": one_gpu / total,
                "exchange_share": exchange / total,
            })
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--csv")
    a = p.parse_args()
    table = []
    for link in LINKS:
        table += rows("2^30 keys a GPU", lambda gpus: 2**30 * gpus, link)
        table += rows("2^36 keys in all", lambda gpus: 2**36, link)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(table[0]))
            w.writeheader()
            w.writerows(table)
    print("| scenario | link | nodes | GPUs | algorithm | sort ms | exchange ms | merge ms "
          "| total ms | speed-up | exchange share |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for r in table:
        print(f"| {r['scenario']} | {r['link']} | {r['nodes']} | {r['gpus']} | {r['algorithm']} "
              f"| {r['sort_ms']:.1f} | {r['exchange_ms']:.1f} | {r['merge_ms']:.1f} "
              f"| {r['total_ms']:.1f} | {r['speed_up']:.0f}× | {100 * r['exchange_share']:.0f}% |")


if __name__ == "__main__":
    main()
