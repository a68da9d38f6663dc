"""Sorts of one tensor spread over the ranks of a ``torch.distributed`` process group, one
process a GPU (torchrun, MPI, Slurm): each rank gives its shard, a 1-D tensor (of any length,
empty too), and gets back its shard of the sorted whole, in global order (rank 0 the first
keys), with every rank's shard size. The ranks' inputs, concatenated in rank order, are the
array sorted; the result equals ``bitonic.sort`` of that array, stable, bit for bit.

Two ways, chosen by the shards and the group:

* **CUDA tensors in an NCCL group:** the library's own multi-GPU sort, one rank a process
  (``bitonic::cuda::multi::ProcessRank``: local merge sort, regular samples, one all-to-all of
  NCCL sends and receives, a merge of the runs received). Its communicator is bitonic's own,
  made once a group and device from an NCCL unique id that rank 0 makes (one all-gather
  through the group at the first call, which also tells every rank whether each can join:
  its GPU opens and NCCL loads; none joins otherwise). It sorts in IEEE total order, so
  floats are made to sort numerically here: -0.0 becomes +0.0 and every NaN one NaN in the
  keys it sorts, and when any rank holds a -0.0 or a NaN the original bits travel with them
  as a value (a key-value sort, which takes at most 2^32 - 1 keys in all). 16-bit floats
  sort as float32. The values of ``sort_pairs`` travel in 4- or 8-byte columns, one sort each
  (equal keys keep their global order, so every sort puts each pair at the same place), and
  so do ``argsort``'s positions (at most 2^32 - 1 keys). A rank that fails while it prepares
  a sort (out of memory, say) tells the others at that sort, so that every rank raises and
  none waits; a failure of NCCL itself leaves the others waiting in bitonic's communicator,
  which torch's watchdog does not see: the job must end them. ``release(group)`` lets a
  group's communicators go.
* **Otherwise** (CPU tensors over gloo, or another backend): a sample sort over the group's
  own collectives:

  1. every rank sorts its shard (``bitonic.sort``, stable, with indices);
  2. the ranks gather a regular sample of their sorted keys, each sample weighted by its
     shard's size, and all pick the same ``ranks - 1`` splitters: (key, global index) pairs,
     so that equal keys split between ranks in index order and the shards stay even whatever
     the ties;
  3. one all-to-all sends each rank the keys (and global indices, and values) between its
     splitters;
  4. every rank sorts what it received, stably: the runs arrive in rank order, so equal keys
     keep their global index order.

Keys compare as in ``bitonic.sort`` (every NaN largest, -0.0 equal to +0.0). Every rank checks
first, in one small all-gather, that all ranks call the same sort (dtypes, order): a
ValueError on every rank otherwise, none left waiting. The call waits on the host (for the
shard sizes): it is not for CUDA-graph capture.
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
    agreed = _agree(tensor, None, descending, group)
    if _on_nccl(tensor, group):
        keys, sizes = _ProcessSort.run(tensor, group, descending, agreed, 1, "sort")
        return SortShard(keys, sizes)
    keys, _, _, sizes = _sample_sort(tensor, None, group, descending, agreed.sizes)
    return SortShard(keys, sizes)


def argsort(tensor, group=None, *, descending=False):
    """This rank's shard of the stable argsort of all ranks' ``tensor`` (1-D): int64 positions
    in the ranks' inputs concatenated in rank order; ``ArgsortShard(indices, sizes)``."""
    agreed = _agree(tensor, None, descending, group)
    if _on_nccl(tensor, group):
        positions, sizes = _ProcessSort.run(tensor, group, descending, agreed, 1, "argsort")
        return ArgsortShard(positions, sizes)
    _, positions, _, sizes = _sample_sort(tensor, None, group, descending, agreed.sizes)
    return ArgsortShard(positions, sizes)


def sort_pairs(keys, values, group=None, *, descending=False):
    """This rank's shard of the stable sort of all ranks' ``keys`` (1-D) with ``values`` (one a
    key, of any dtype) moved with them: ``PairsShard(keys, values,
    sizes)``."""
    agreed = _agree(keys, values, descending, group)
    if _on_nccl(keys, group):
        sorts = int(agreed.odd_floats) + _column_count(values.element_size())
        k, v, sizes = _ProcessSort.run(
            keys, group, descending, agreed, sorts, "sort_pairs", values
        )
        return PairsShard(k, v, sizes)
    k, _, v, sizes = _sample_sort(keys, values, group, descending, agreed.sizes)
    return PairsShard(k, v, sizes)


def keep_freed_memory(nbytes, device=None, group=None):
    """Lets ``device``'s memory pool (the current CUDA device by default) keep up to
    ``nbytes`` that the distributed sorts free, instead of mapping a large sort's buffers
    afresh each call (tens of milliseconds for gigabytes). The pool is the device's default
    one, shared by the whole process, which is why bitonic does not do this unasked. Makes the
    group's sorter on first use, so every rank of ``group`` calls it."""
    import torch

    _process_rank(group, _cuda_device(device)).keep_freed_memory(int(nbytes))


def release(group=None):
    """Lets go of this process's sorters of ``group`` (every device's), and so of their
    communicators and the memory their pools keep; a later call makes new ones. Call it on
    every rank before ``torch.distributed.destroy_process_group(group)``, or after a sort whose
    communicator failed (an NCCL error: that sorter refuses every later sort)."""
    for key in [key for key, (held, _) in _RANKS.items() if held is group]:
        del _RANKS[key]


def _cuda_device(device):
    """``device`` (None: the current CUDA device) as a ``torch.device`` with an index."""
    import torch

    device = torch.device("cuda") if device is None else torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"keep_freed_memory takes a CUDA device, not {device}")
    return device if device.index is not None else torch.device("cuda", torch.cuda.current_device())


def _on_nccl(keys, group):
    """Whether the library's multi-GPU sort runs: CUDA shards in a group whose CUDA backend is
    NCCL (``"nccl"``, or a per-device list such as ``"cuda:nccl,cpu:gloo"``, torch's default
    when ``init_process_group`` is given no backend)."""
    import torch.distributed as dist

    return keys.is_cuda and "nccl" in str(dist.get_backend(group))


#: The sorter of each (group, device, world size, rank): ``(group, _native.ProcessRank)``, the
#: group held so its ``id`` is not reused while the entry lives. The communicator is bitonic's
#: own, so it outlives a torch group destroyed and made again by the same processes.
_RANKS = {}


def _process_rank(group, device):
    """This process's rank of the library's sorts over ``group`` on ``device``, made on the
    first call. Joining blocks until every rank has joined, so a rank that failed before it
    would leave the others waiting: every rank first checks that it can join (its GPU opens,
    NCCL loads), rank 0 makes an NCCL unique id, and one all-gather through the group brings
    every rank the id and every rank's failure flag. Only when no rank failed do they join."""
    import torch
    import torch.distributed as dist

    ranks, rank = dist.get_world_size(group), dist.get_rank(group)
    key = (id(group), device.index, ranks, rank)
    made = _RANKS.get(key)
    if made is not None:
        return made[1]
    message = torch.zeros(129, dtype=torch.uint8)
    failure, sent = None, None
    try:
        bitonic._native.check_can_join(device.index, ranks)
        if rank == 0:
            message[:128] = torch.frombuffer(
                bytearray(bitonic._native.nccl_unique_id()), dtype=torch.uint8
            )
        sent = message.to(device)
    except Exception as e:  # any failure: the others must hear of it, not wait for it
        failure = e
        message[128] = 1
    if sent is None:
        sent = message.to(device)
    every = [torch.empty_like(sent) for _ in range(ranks)]
    dist.all_gather(every, sent, group=group)
    every = [m.cpu() for m in every]
    if failure is not None:
        raise failure
    failed = [r for r, m in enumerate(every) if m[128].item()]
    if failed:
        raise bitonic.BitonicError(
            f"ranks {failed} of the group cannot join a distributed sort (see their errors)"
        )
    unique_id = bytes(every[0][:128].tolist())
    sorter = bitonic._native.ProcessRank(unique_id, rank, ranks, device.index)
    _RANKS[key] = (group, sorter)
    return sorter


def _describe(x):
    from . import _tensors

    return _tensors.lib("torch").describe(x, None)


class _ProcessSort:
    """One call of the library's multi-GPU sort (``_process_rank``) on this rank's shard, with
    floats made to sort numerically (the module's doc): ``self.keys`` is what the library
    sorts, ``self.bits`` the shard's own bits when they must travel with them (else None)."""

    @classmethod
    def run(cls, shard, group, descending, agreed, sorts, task, *args):
        """``task``'s result (a method's name, with ``args``), which makes ``sorts`` collective
        sorts. Every rank makes as many (they follow from what ``_agree`` agreed), so when this
        rank fails where the others go on to a sort (preparing a shard before one, or after one
        whose failure was this rank's alone), it abstains from that sort, and they raise there
        instead of waiting for it."""
        sorter = _process_rank(group, shard.device)
        call = None
        try:
            call = cls(shard, group, descending, agreed, sorter, sorts)
            return getattr(call, task)(*args)
        except Exception as failure:
            left = sorts if call is None else call.sorts_left
            if left > 0 and (call is None or call.others_go_on):
                try:
                    sorter.abstain()
                except Exception as also:  # the caller hears of the first failure
                    if hasattr(failure, "add_note"):  # (Python 3.11 on)
                        failure.add_note(f"and this rank could not tell the others: {also}")
            raise

    def __init__(self, shard, group, descending, agreed, sorter, sorts):
        import torch

        import torch.distributed as dist

        self.torch, self.group, self.descending = torch, group, bool(descending)
        self.sorter, self.sorts_left, self.others_go_on = sorter, sorts, True
        self.shard = shard.contiguous()
        self.sizes_in = agreed.sizes
        self.rank = dist.get_rank(group)
        dtype = shard.dtype
        self.narrow = dtype in (torch.float16, torch.bfloat16)
        self.bits = None
        if dtype.is_floating_point:
            x = self.shard.float() if self.narrow else self.shard
            if agreed.odd_floats:
                nan = torch.full((), float("nan"), dtype=x.dtype, device=x.device)
                x = torch.where(torch.isnan(x), nan, torch.where(x == 0, 0.0, x))
                whole = {2: torch.int16, 4: torch.int32, 8: torch.int64}[dtype.itemsize]
                self.bits = self.shard.view(whole)
                if self.narrow:
                    self.bits = self.bits.to(torch.int32)  # sign-extended; narrowed back after
            self.keys = x
        else:
            self.keys = self.shard

    def _run(self, values):
        """One collective sort of ``self.keys`` (with a 4- or 8-byte ``values`` column, or
        none): every rank's part length, this rank's part held by the sorter."""
        self.torch.cuda.current_stream(self.shard.device).synchronize()  # inputs ready
        keys = _describe(self.keys)
        values = None if values is None else _describe(values)
        self.sorts_left -= 1
        try:
            if values is None:
                return self.sorter.sort(keys, self.descending)
            return self.sorter.sort_pairs(keys, values, self.descending)
        except Exception:
            # Failed at a collective, every rank did; after the exchange, this one alone.
            self.others_go_on = self.sorter.failed_alone
            raise

    def _take(self, sizes, keys_like, values_like=None):
        """This rank's part of the last sort: keys of ``keys_like``'s dtype, values of
        ``values_like``'s (each skipped when None)."""
        n = sizes[self.rank]
        out = [None if t is None else t.new_empty(n) for t in (keys_like, values_like)]
        self.sorter.take(*[None if t is None else _describe(t) for t in out])
        return out

    def _original(self, part):
        """This rank's sorted shard in the input's dtype: ``part`` is the sorted keys, or
        their original bits when those travelled."""
        if self.bits is None:
            return part.to(self.shard.dtype) if self.narrow else part
        if self.narrow:
            part = part.to(self.torch.int16)
        return part.view(self.shard.dtype)

    def sort(self):
        if self.bits is None:
            sizes = self._run(None)
            keys, _ = self._take(sizes, self.keys)
        else:
            sizes = self._run(self.bits)
            _, keys = self._take(sizes, None, self.bits)
        return self._original(keys), sizes

    def argsort(self):
        torch = self.torch
        offset = sum(self.sizes_in[: self.rank])
        n = self.keys.numel()
        # Positions below 2^32 (the library's most pairs) as 4-byte values, wrapped to int32.
        positions = torch.arange(offset, offset + n, device=self.keys.device).to(torch.int32)
        sizes = self._run(positions)
        _, positions = self._take(sizes, None, positions)
        return positions.to(torch.int64) & 0xFFFF_FFFF, sizes

    def sort_pairs(self, values):
        torch = self.torch
        columns = _value_columns(values.contiguous())
        keys, sizes, out = None, None, []
        if self.bits is not None:
            sizes = self._run(self.bits)
            _, keys = self._take(sizes, None, self.bits)
            keys = self._original(keys)
        for c, column in enumerate(columns):
            sizes = self._run(column)
            want_keys = keys is None and c == 0
            k, v = self._take(sizes, self.keys if want_keys else None, column)
            if want_keys:
                keys = self._original(k)
            out.append(v)
        return keys, _values_of_columns(out, values, sizes[self.rank]), sizes


def _column_count(width):
    """How many columns ``_value_columns`` makes of values of ``width`` bytes."""
    return 1 if width <= 8 else -(-width // 8)


def _value_columns(values):
    """``values`` (1-D, contiguous) as columns the library moves: one int32 column for values
    of up to 4 bytes (zero-padded), else int64 columns of 8 bytes each (the last zero-padded)."""
    import torch

    n, width = values.numel(), values.element_size()
    if width in (4, 8):
        return [values.view({4: torch.int32, 8: torch.int64}[width])]
    raw = values.view(torch.uint8).reshape(n, width)
    padded_width = 4 if width < 4 else 8 * _column_count(width)
    padded = torch.zeros((n, padded_width), dtype=torch.uint8, device=values.device)
    padded[:, :width] = raw
    if padded_width == 4:
        return [padded.view(torch.int32).reshape(n)]
    words = padded.view(torch.int64)
    return [words[:, j].contiguous() for j in range(padded_width // 8)]


def _values_of_columns(columns, like, n):
    """The inverse of ``_value_columns``: ``n`` values of ``like``'s dtype from their sorted
    columns."""
    import torch

    width = like.element_size()
    if width in (4, 8):
        return columns[0].view(like.dtype)
    # Explicit widths: torch cannot infer a -1 dimension of an empty tensor.
    parts = [c.view(torch.uint8).reshape(n, c.element_size()) for c in columns]
    raw = torch.cat(parts, dim=1)
    return raw[:, :width].contiguous().view(like.dtype).reshape(n)


def _sample_sort(keys, values, group, descending, sizes):
    """(sorted keys, their global positions, their values or None, sizes) of this rank, by a
    sample sort over the group's collectives; ``sizes`` are every rank's shard size."""
    import torch
    import torch.distributed as dist

    ranks, rank = dist.get_world_size(group), dist.get_rank(group)
    device = keys.device
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


#: What every rank learns before a sort (``_agree``): every rank's shard size, and whether any
#: rank's float keys hold a -0.0 or a NaN (whose bits the library's sort would not keep).
Agreed = namedtuple("Agreed", ["sizes", "odd_floats"])


def _agree(keys, values, descending, group):
    """What every rank learns before a sort (``Agreed``), once every rank has checked that all
    shards can be sorted together (1-D, values of the keys' shape, the same dtypes, order and
    device kind everywhere): a ValueError on every rank otherwise, so that no rank waits in a
    collective alone."""
    import zlib

    import torch
    import torch.distributed as dist

    floats = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
    ok = (
        keys.dim() == 1
        and (not keys.dtype.is_floating_point or keys.dtype in floats)
        and (
            values is None
            or (tuple(values.shape) == tuple(keys.shape) and values.device == keys.device)
        )
    )
    code = lambda t: -1 if t is None else zlib.crc32(str(t.dtype).encode())  # noqa: E731
    odd = 0
    if ok and keys.dtype.is_floating_point and keys.numel():
        odd = int(bool((torch.isnan(keys) | ((keys == 0) & torch.signbit(keys))).any()))
    mine = [keys.numel(), int(ok), odd, code(keys), code(values), int(bool(descending)),
            int(keys.is_cuda)]
    ranks = dist.get_world_size(group)
    shared = torch.tensor(mine, dtype=torch.int64, device=keys.device)
    every = [torch.empty_like(shared) for _ in range(ranks)]
    dist.all_gather(every, shared, group=group)
    every = [t.tolist() for t in every]
    bad = [r for r, e in enumerate(every) if not e[1]]
    if bad:
        raise ValueError(
            f"ranks {bad} gave shards that cannot be sorted: a distributed sort takes a 1-D "
            "shard a rank, floats of 16, 32 or 64 bits (and values of the same shape, on the "
            "same device)"
        )
    if any(e[3:] != every[0][3:] for e in every):
        raise ValueError(
            "the ranks gave keys (or values) of different dtypes, or different orders: every "
            "rank must give the same"
        )
    return Agreed([e[0] for e in every], any(e[2] for e in every))


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
