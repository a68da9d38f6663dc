"""bitonic.distributed over torch.distributed process groups: 2 and 4 processes, each with a
shard of a different size (empty ones too), sort, argsort and sort_pairs of random, sorted,
reversed, all-equal and few-distinct keys, NaN and -0.0 among the floats, ascending and
descending; values of 8 bytes, of 2 (padded to 4) and of 16 (two 8-byte columns). The ranks'
shards, concatenated, must equal bitonic.sort of the whole bit for bit. On NCCL the library's
multi-GPU sort runs (one ProcessRank a process), on gloo the sample sort over torch's
collectives.

On CPU tensors over gloo wherever torch imports (skipped with the reason otherwise); on CUDA
tensors over NCCL where there are GPUs enough, one a process (skipped otherwise, failed when
BITONIC_REQUIRE_GPUS names more GPUs than that)."""

import os

import numpy as np
import pytest

import bitonic

CASES = [
    (dtype, pattern, descending)
    for dtype in ("float32", "int64", "float16", "uint64", "int32", "float64")
    for pattern in ("random", "sorted", "reversed", "equal", "few")
    for descending in (False, True)
]


def _keys(dtype, pattern, n, seed):
    rng = np.random.default_rng(seed)
    if pattern == "equal":
        x = np.full(n, 3.0)
    elif pattern == "few":
        x = rng.integers(0, 4, n).astype(np.float64)
    else:
        x = rng.standard_normal(n) * 1000
        if dtype == "uint64":  # the whole range, the sign bit too
            x = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
        if pattern == "sorted":
            x.sort()
        elif pattern == "reversed":
            x = np.sort(x)[::-1].copy()
    x = x.astype(dtype)
    if dtype.startswith("float") and pattern == "random":
        x[::7] = np.nan
        x[3::11] = -np.nan
        x[5::13] = -0.0
        x[6::13] = 0.0
    return x


def _shard_sizes(ranks):
    """Shards of different sizes, some empty."""
    return {2: [1200, 1800], 3: [0, 2000, 777], 4: [1000, 0, 1, 2500]}[ranks]


def _worker(rank, ranks, backend, folder):
    import torch
    import torch.distributed as dist

    from bitonic import distributed

    device = torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
    dist.init_process_group(
        backend, init_method=f"file://{folder}/rendezvous", rank=rank, world_size=ranks
    )
    if backend == "nccl":
        distributed.keep_freed_memory(1 << 28, device="cuda")  # the current device's
    sizes = _shard_sizes(ranks)
    start = sum(sizes[:rank])
    for c, (dtype, pattern, descending) in enumerate(CASES):
        whole = _keys(dtype, pattern, sum(sizes), seed=c)
        mine = torch.from_numpy(whole[start : start + sizes[rank]].copy()).to(device)
        values = torch.arange(start, start + sizes[rank], device=device) * 3
        s = distributed.sort(mine, descending=descending)
        a = distributed.argsort(mine, descending=descending)
        p = distributed.sort_pairs(mine, values, descending=descending)
        # Values narrower than 4 bytes and wider than 8 travel padded, in columns.
        narrow = distributed.sort_pairs(mine, (values % 30011).to(torch.int16), descending=descending)
        wide = distributed.sort_pairs(
            mine, torch.complex(values.double(), -values.double()), descending=descending
        )
        assert s.sizes == a.sizes == p.sizes == narrow.sizes == wide.sizes
        assert sum(s.sizes) == sum(sizes)
        assert s.values.numel() == s.sizes[rank]
        # Even shards out, whatever the shards in and the ties.
        assert max(s.sizes) <= 1.25 * sum(sizes) / ranks + 50, s.sizes
        out = {
            "values": s.values.cpu().numpy(),
            "indices": a.indices.cpu().numpy(),
            "pair_keys": p.keys.cpu().numpy(),
            "pair_values": p.values.cpu().numpy(),
            "narrow_keys": narrow.keys.cpu().numpy(),
            "narrow_values": narrow.values.cpu().numpy(),
            "wide_keys": wide.keys.cpu().numpy(),
            "wide_values": wide.values.cpu().numpy(),
        }
        np.savez(f"{folder}/case{c}-rank{rank}.npz", **out)
    # CUDA shards in an NCCL group go to the library's multi-GPU sort, one rank a process.
    assert bool(distributed._RANKS) == (backend == "nccl"), distributed._RANKS
    # A shard that cannot be sorted with the others fails on every rank, none left waiting.
    odd = torch.zeros(3, dtype=torch.float64 if rank == 1 else torch.float32, device=device)
    flat_but_rank_0 = torch.zeros((2, 2) if rank == 0 else (4,), device=device)
    for shard, message in ((odd, "different dtypes"), (flat_but_rank_0, "ranks [0]")):
        try:
            distributed.sort(shard)
        except ValueError as e:
            assert message in str(e), e
        else:
            raise AssertionError(f"sorted shards that should fail with {message!r}")
    if backend == "nccl":
        _one_rank_fails(rank, ranks, device)
    dist.destroy_process_group()


def _one_rank_fails(rank, ranks, device):
    """On NCCL: a rank that fails while it prepares a sort, before the first of the library's
    sorts of a call or between two of them, makes every rank raise (its own error there, a
    BitonicError elsewhere) instead of leaving them waiting, and one that fails after the last
    raises alone; values on another GPU fail on every rank; and the group still sorts
    afterwards, also after ``release``."""
    import torch

    from bitonic import distributed

    keys = torch.tensor([3.0, float("nan"), -0.0, 1.0] * (rank + 1), device=device)
    wide = torch.complex(keys.double(), keys.double())  # with NaN keys: three sorts a call

    class Injected(RuntimeError):
        pass

    def failing_on_last_rank(original, at_call):
        calls = []

        def wrapper(*args, **kwargs):
            calls.append(1)
            if rank == ranks - 1 and len(calls) == at_call:
                raise Injected("a failure injected on the last rank")
            return original(*args, **kwargs)

        return wrapper

    # Before the first sort (the call's preparation, the values' columns), after the first
    # and the second of three (a take), where the others fail too; and after the last, where
    # they have their results.
    cases = (
        ("__init__", 1, True),
        ("_value_columns", 1, True),
        ("_take", 1, True),
        ("_take", 2, True),
        ("_take", 3, False),
    )
    for name, at_call, others_fail in cases:
        holder = distributed if name == "_value_columns" else distributed._ProcessSort
        original = getattr(holder, name)
        setattr(holder, name, failing_on_last_rank(original, at_call))
        try:
            distributed.sort_pairs(keys, wide)
        except Injected:
            assert rank == ranks - 1
        except bitonic.BitonicError as e:
            assert rank != ranks - 1 and others_fail, e
        else:
            assert rank != ranks - 1 and not others_fail, f"rank {rank}: ({name}, {at_call})"
        finally:
            setattr(holder, name, original)
    if torch.cuda.device_count() > 1:
        elsewhere = torch.zeros(keys.numel(), device=(device.index + 1) % torch.cuda.device_count())
        try:
            distributed.sort_pairs(keys, elsewhere)
        except ValueError as e:
            assert "same device" in str(e), e
        else:
            raise AssertionError("sorted values on another GPU than their keys")
    for released in (False, True):
        if released:
            distributed.release()
            assert not distributed._RANKS
        s = distributed.sort(torch.arange(10, device=device) * ranks + rank)
        assert sum(s.sizes) == 10 * ranks, s.sizes
        start = sum(s.sizes[:rank])
        assert (s.values.cpu() == torch.arange(start, start + s.sizes[rank])).all()


def _run(ranks, backend, folder):
    import torch.multiprocessing as mp

    mp.spawn(_worker, args=(ranks, backend, str(folder)), nprocs=ranks, join=True)
    sizes = _shard_sizes(ranks)
    for c, (dtype, pattern, descending) in enumerate(CASES):
        whole = _keys(dtype, pattern, sum(sizes), seed=c)
        want, order = bitonic.sort(whole, descending=descending, backend="cpu")
        got = [np.load(f"{folder}/case{c}-rank{r}.npz") for r in range(ranks)]
        joined = {name: np.concatenate([g[name] for g in got]) for name in got[0].files}
        what = (ranks, backend, dtype, pattern, descending)
        assert joined["values"].view(np.uint8).tobytes() == want.view(np.uint8).tobytes(), what
        assert (joined["indices"] == order).all(), what
        assert joined["pair_keys"].tobytes() == want.tobytes(), what
        assert (joined["pair_values"] == order * 3).all(), what
        for pairs in ("narrow", "wide"):
            assert joined[f"{pairs}_keys"].tobytes() == want.tobytes(), what
        assert (joined["narrow_values"] == (order * 3) % 30011).all(), what
        assert (joined["wide_values"].real == order * 3).all(), what
        assert (joined["wide_values"].imag == -order * 3).all(), what


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_gloo_processes_sort_a_distributed_tensor(ranks, tmp_path):
    try:
        import torch.distributed as dist
    except ImportError as e:
        pytest.skip(f"torch does not import ({e})")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("this torch has no gloo backend")
    _run(ranks, "gloo", tmp_path)


@pytest.mark.parametrize("ranks", [2, 4])
def test_nccl_processes_sort_a_distributed_tensor(ranks, tmp_path):
    required = int(os.environ.get("BITONIC_REQUIRE_GPUS", "0"))
    try:
        import torch
    except ImportError as e:
        why = f"torch does not import ({e})"
    else:
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        why = None if count >= ranks else f"{ranks} processes need {ranks} GPUs; this host has {count}"
    if why:
        if required >= ranks:
            pytest.fail(f"BITONIC_REQUIRE_GPUS={required} but {why}")
        pytest.skip(why)
    _run(ranks, "nccl", tmp_path)
