"""Sorts of one tensor spread over the ranks of a ``torch.distributed`` process group, one
process a GPU (torchrun, MPI, Slurm): each rank gives its shard, a 1-D tensor (of any length,
empty too), and gets back its shard of the sorted whole, in global order (rank 0 the first
keys), with every rank's shard size. The ranks' inputs, concatenated in rank order, are the
array sorted; the result equals ``bitonic.sort`` of that array, stable, bit for bit.

The collectives are the group's own (NCCL for CUDA tensors, gloo for CPU ones): no second
communicator and no transport of bitonic's. The algorithm is a sample sort:

1. every rank sorts its shard (``bitonic.sort``, stable, with indices);
2. the ranks gather a regular sample of their sorted keys, each sample weighted by its shard's
   size, and all pick the same ``ranks - 1`` splitters: (key, global index) pairs, so that equal
   keys split between ranks in index order and the shards stay even whatever the ties;
3. one all-to-all sends each rank the keys (and global indices, and values) between its
   splitters;
4. every rank sorts what it received, stably: the runs arrive in rank order, so equal keys
   keep their global index order.

Keys compare as in ``bitonic.sort`` (every NaN largest, -0.0 equal to +0.0). The call waits on
the host (for the shard sizes the all-to-all needs): it is not for CUDA-graph capture.
"""

from collections import namedtuple

import bitonic

#: :func:`sort`'s result: this rank's sorted ``values`` and every rank's shard size.
SortShard = namedtuple("SortShard", ["values", "sizes"])
#: :func:`argsort`'s result: this rank's ``indices`` (positions in the ranks' inputs
#: concatenated in rank order) and every rank's shard size.
ArgsortShard = namedtuple("ArgsortShard", ["indices", "sizes"])
#: :func:`sort_pairs`' result: this rank's sorted ``keys``, their ``values`` and the sizes.
PairsShard = namedtuple("PairsShard", ["keys", "values", "sizes"])

#: Samples a rank gives for each rank of the group (regular sampling's oversampling).
SAMPLES_PER_RANK = 16


def sort(tensor, group=None, *, descending=False):
    """This rank's shard of the stable sort of all ranks' ``tensor`` (1-D): ``SortShard(values,
    sizes)``."""
    keys, _, _, sizes = _sample_sort(tensor, None, group, descending)
    return SortShard(keys, sizes)


def argsort(tensor, group=None, *, descending=False):
    """This rank's shard of the stable argsort of all ranks' ``tensor`` (1-D): int64 positions
    in the ranks' inputs concatenated in rank order; ``ArgsortShard(indices, sizes)``."""
    _, positions, _, sizes = _sample_sort(tensor, None, group, descending)
    return ArgsortShard(positions, sizes)


def sort_pairs(keys, values, group=None, *, descending=False):
    """This rank's shard of the stable sort of all ranks' ``keys`` (1-D) with ``values`` (one a
    key, of any dtype) moved with them: ``PairsShard(keys, values,
    sizes)``."""
    k, _, v, sizes = _sample_sort(keys, values, group, descending)
    return PairsShard(k, v, sizes)


def _sample_sort(keys, values, group, descending):
    """(sorted keys, their global positions, their values or None, sizes) of this rank."""
    import torch
    import torch.distributed as dist

    ranks, rank = dist.get_world_size(group), dist.get_rank(group)
    device = keys.device
    sizes = _agree(keys, values, descending, group)
    offset = sum(sizes[:rank])

    # 1. The local sort.
    local, order = bitonic.sort(keys, descending=bool(descending))
    positions = order + offset
    if values is not None:
        values = values[order]
    ranked = _ordered(local, descending)  # int64, nondecreasing along the sorted shard

    # 2. The splitters, the same on every rank.
    splitters = _splitters(ranked, positions, sizes, group, device)

    # 3. The exchange: this rank's keys below the first splitter to rank 0, and so on.
    bounds = [0]
    if splitters:
        cut = torch.tensor([key for key, _ in splitters], dtype=torch.int64, device=device)
        below = torch.searchsorted(ranked, cut).tolist()
        equal_end = torch.searchsorted(ranked, cut, right=True).tolist()
        for (_, position), lo, hi in zip(splitters, below, equal_end):
            # Equal keys are in global-position order: those before the splitter's position.
            ties = positions[lo:hi]
            bounds.append(lo + (int(torch.searchsorted(ties, position).item()) if hi > lo else 0))
    bounds.append(keys.numel())
    send = [b - a for a, b in zip(bounds, bounds[1:])]
    receive = _all_to_all_ints(send, group, device)
    parts = [local, positions] + ([values] if values is not None else [])
    received = [_all_to_all(t, send, receive, group) for t in parts]

    # 4. The runs arrive in rank order: a stable sort keeps equal keys in position order.
    merged, order = bitonic.sort(received[0], descending=bool(descending))
    positions = received[1][order]
    values = received[2][order] if values is not None else None
    return merged, positions, values, _all_gather_ints(merged.numel(), group, device)


def _agree(keys, values, descending, group):
    """Every rank's shard size, once every rank has checked that all shards can be sorted
    together (1-D, values of the keys' shape, the same dtypes and order everywhere): a
    ValueError on every rank otherwise, so that no rank waits in a collective alone."""
    import zlib

    import torch
    import torch.distributed as dist

    ok = keys.dim() == 1 and (values is None or tuple(values.shape) == tuple(keys.shape))
    code = lambda t: -1 if t is None else zlib.crc32(str(t.dtype).encode())  # noqa: E731
    mine = [keys.numel(), int(ok), code(keys), code(values), int(bool(descending))]
    ranks = dist.get_world_size(group)
    shared = torch.tensor(mine, dtype=torch.int64, device=keys.device)
    every = [torch.empty_like(shared) for _ in range(ranks)]
    dist.all_gather(every, shared, group=group)
    every = [t.tolist() for t in every]
    bad = [r for r, e in enumerate(every) if not e[1]]
    if bad:
        raise ValueError(
            f"ranks {bad} gave shards that cannot be sorted: a distributed sort takes a 1-D "
            "shard a rank (and values of the same shape)"
        )
    if any(e[2:] != every[0][2:] for e in every):
        raise ValueError(
            "the ranks gave keys (or values) of different dtypes, or different orders: every "
            "rank must give the same"
        )
    return [e[0] for e in every]


def _ordered(keys, descending):
    """An int64 of each key, nondecreasing in the sort's order: integers as they are, floats
    by their f64 bits with every NaN one NaN and -0.0 as +0.0; complemented when descending."""
    import torch

    if keys.dtype.is_floating_point:
        x = keys.double()
        x = torch.where(torch.isnan(x), float("nan"), torch.where(x == 0, 0.0, x))
        bits = x.view(torch.int64)
        ordered = torch.where(bits < 0, bits ^ 0x7FFF_FFFF_FFFF_FFFF, bits)
    elif keys.dtype == torch.uint64:
        ordered = keys.view(torch.int64) ^ (-(2**63))  # the sign bit flipped: signed order
    else:
        ordered = keys.long()
    return ~ordered if descending else ordered


def _splitters(ranked, positions, sizes, group, device):
    """``ranks - 1`` (key, position) pairs, each a Python int, that cut the whole into shards
    of about equal size: quantiles of every rank's regular sample, a sample weighted by the
    keys it stands for."""
    import torch
    import torch.distributed as dist

    ranks = len(sizes)
    count = SAMPLES_PER_RANK * ranks
    n = ranked.numel()
    taken = torch.full((count, 2), torch.iinfo(torch.int64).max, dtype=torch.int64, device=device)
    if n:
        at = (torch.arange(count, device=device) * n) // count
        taken[:, 0], taken[:, 1] = ranked[at], positions[at]
    gathered = [torch.empty_like(taken) for _ in range(ranks)]
    dist.all_gather(gathered, taken, group=group)
    samples, weights = [], []
    for q, t in enumerate(gathered):
        if sizes[q]:
            samples += t.tolist()
            weights += [sizes[q] / count] * count
    if not samples:
        return []
    by_key = sorted(range(len(samples)), key=lambda j: samples[j])
    total, running, cuts, j = sum(sizes), 0.0, [], 1
    for s in by_key:
        running += weights[s]
        while j < ranks and running >= j * total / ranks:
            cuts.append(tuple(samples[s]))
            j += 1
    while len(cuts) < ranks - 1:
        cuts.append((torch.iinfo(torch.int64).max, torch.iinfo(torch.int64).max))
    return cuts


def _all_gather_ints(value, group, device):
    import torch
    import torch.distributed as dist

    ranks = dist.get_world_size(group)
    mine = torch.tensor([value], dtype=torch.int64, device=device)
    out = [torch.empty_like(mine) for _ in range(ranks)]
    dist.all_gather(out, mine, group=group)
    return [int(t.item()) for t in out]


def _all_to_all_ints(send, group, device):
    import torch
    import torch.distributed as dist

    out = torch.empty(len(send), dtype=torch.int64, device=device)
    dist.all_to_all_single(out, torch.tensor(send, dtype=torch.int64, device=device), group=group)
    return out.tolist()


def _all_to_all(tensor, send, receive, group):
    """``tensor`` (1-D) split by ``send`` to the ranks, and what they split to this one
    (``receive`` from each), by the group's all-to-all. Dtypes other than 32- and 64-bit
    floats and integers (which gloo may refuse) travel as their bytes."""
    import torch
    import torch.distributed as dist

    tensor = tensor.contiguous()
    if tensor.dtype in (torch.float32, torch.float64, torch.int32, torch.int64):
        out = tensor.new_empty(sum(receive))
        dist.all_to_all_single(out, tensor, receive, send, group=group)
        return out
    width = tensor.element_size()
    out = torch.empty(sum(receive) * width, dtype=torch.uint8, device=tensor.device)
    scale = lambda counts: [c * width for c in counts]  # noqa: E731
    dist.all_to_all_single(out, tensor.view(torch.uint8), scale(receive), scale(send), group=group)
    return out.view(tensor.dtype)
