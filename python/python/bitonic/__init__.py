"""Sorting with bitonic networks on NVIDIA GPUs, with a CPU fallback, shaped like torch.

Functions take numpy arrays (or anything ``numpy.asarray`` takes) and return new numpy arrays;
inputs are never modified. Keys are uint32, int32, uint64, int64, float32 or float64. Floats
sort in IEEE 754 total order: -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN (numpy puts
every NaN last and keeps -0.0 and +0.0 as they come). Indices are int64, as torch's. Whatever
has indices is stable: equal keys keep their index order, ascending and descending.

``backend`` is "auto" (the GPU when one works and the input is large, else the CPU), "cuda"
(the GPU or a BitonicError), "cpu", "cpu-network" or "cpu-network-serial". The GIL is released
while a sort runs.
"""

from collections import namedtuple

import numpy as np

from . import _native
from ._native import BitonicError

__all__ = [
    "BitonicError",
    "SortResult",
    "argsort",
    "info",
    "sort",
    "sort_pairs",
    "sort_values",
]

#: The result of :func:`sort`: ``values`` and ``indices``, as ``torch.sort``'s.
SortResult = namedtuple("SortResult", ["values", "indices"])

_KEY_DTYPES = tuple(
    np.dtype(t) for t in (np.uint32, np.int32, np.uint64, np.int64, np.float32, np.float64)
)


def _as_rows(x, dim, name="x"):
    """(C-contiguous native-order keys with ``dim`` moved last, that shape, dim in range)."""
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError(f"{name} is 0-dimensional: bitonic sorts arrays of 1 or more dimensions")
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, not {type(dim).__name__}")
    if not -x.ndim <= dim < x.ndim:
        raise ValueError(f"dim {dim} is out of range for an array of {x.ndim} dimensions")
    dim = int(dim) % x.ndim
    dtype = x.dtype
    if dtype.byteorder not in "=|" and dtype.newbyteorder("=") in _KEY_DTYPES:
        dtype = dtype.newbyteorder("=")
    if dtype not in _KEY_DTYPES:
        raise TypeError(
            f"{name} has dtype {x.dtype}: bitonic sorts keys of dtype uint32, int32, uint64, "
            "int64, float32 or float64"
        )
    moved = np.moveaxis(x, dim, -1)
    # A copy only when the rows are not already contiguous (dim not last, a strided view) or
    # not in native byte order; the original is never written.
    keys = np.ascontiguousarray(moved, dtype=dtype)
    return keys, moved.shape, dim


def _back(flat, shape, dim):
    """``flat`` in ``shape`` (dim last), with the last dimension moved back to ``dim``."""
    out = flat.reshape(shape)
    if dim != len(shape) - 1:
        out = np.ascontiguousarray(np.moveaxis(out, -1, dim))
    return out


def _sort(x, dim, descending, backend, values, indices):
    keys, shape, dim = _as_rows(x, dim)
    v, i = _native.sort_rows(
        keys.reshape(-1), shape[-1], bool(descending), str(backend), values, indices
    )
    return (
        None if v is None else _back(v, shape, dim),
        None if i is None else _back(i, shape, dim),
    )


def sort(x, dim=-1, descending=False, *, stable=True, backend="auto"):
    """Sorts ``x`` along ``dim``, like ``torch.sort``: returns ``SortResult(values, indices)``,
    ``values[..., j] == x[..., indices[..., j]]`` along ``dim``. Always stable; ``stable`` is
    accepted for torch's signature. Any number of dimensions (1 or more): each 1-D slice along
    ``dim`` is sorted on its own (``dim`` other than the last costs a copy each way)."""
    del stable  # every sort with indices is stable
    v, i = _sort(x, dim, descending, backend, True, True)
    return SortResult(v, i)


def argsort(x, dim=-1, descending=False, *, stable=True, backend="auto"):
    """The int64 indices that sort ``x`` along ``dim``, like ``torch.argsort``. Always stable."""
    del stable
    return _sort(x, dim, descending, backend, False, True)[1]


def sort_values(x, dim=-1, descending=False, *, backend="auto"):
    """The sorted values of ``x`` along ``dim`` alone (like ``numpy.sort``): the library's
    key-only sort, the fastest path, with no indices."""
    return _sort(x, dim, descending, backend, True, False)[0]


def sort_pairs(keys, values, descending=False, *, backend="auto"):
    """Sorts the 1-D ``keys`` and moves ``values`` (1-D, as long, any dtype but object) with
    them, stably: returns new arrays ``(sorted_keys, sorted_values)``, the key-value sort of
    CUB's SortPairs."""
    k, shape, _ = _as_rows(keys, -1, "keys")
    values = np.asarray(values)
    if len(shape) != 1 or values.ndim != 1:
        raise ValueError(
            f"sort_pairs takes 1-D keys and values, not {len(shape)}-D keys and {values.ndim}-D "
            "values (for rows: argsort, then numpy.take_along_axis)"
        )
    if values.shape[0] != shape[0]:
        raise ValueError(f"{shape[0]} keys but {values.shape[0]} values: one value a key")
    if values.dtype.hasobject:
        raise TypeError("values of dtype object cannot be moved by bitonic (they hold references)")
    v = np.ascontiguousarray(values)
    size = v.dtype.itemsize
    if size in (1, 2, 4, 8, 16):
        k, vb = _native.sort_pairs(
            k, v.view(np.uint8).reshape(-1), size, bool(descending), str(backend)
        )
        return k, vb.view(v.dtype)
    # Other value sizes (structured, strings): the stable permutation, then numpy's gather.
    i = argsort(k, descending=descending, backend=backend)
    return k[i], v[i]


def info():
    """What the GPU probe found: ``{"version", "cuda", "reason", "device", "nvrtc_version"}``;
    ``reason`` says why sorts run on the CPU when ``cuda`` is False."""
    return _native.info()
