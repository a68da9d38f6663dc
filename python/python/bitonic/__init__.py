"""Sorting with bitonic networks on NVIDIA GPUs, with a CPU fallback, shaped like torch.

Functions take numpy arrays (or anything ``numpy.asarray`` takes) and return new numpy arrays,
or torch tensors and cupy arrays and return tensors of the same library: CUDA ones sorted on
the GPU zero copy (cupy's through DLPack), queued on the caller's current stream with nothing waiting
on the host (as a torch kernel would be); CPU tensors through numpy. Inputs are never
modified, but by ``sort_``. Keys are uint32, int32, uint64, int64, float32, float64, float16
or bfloat16 (torch.bfloat16; in numpy ``ml_dtypes.bfloat16``). Floats compare as in torch and
numpy: every NaN, whatever its sign, is larger than +inf, and -0.0 equals +0.0; values come
back bit for bit. Indices are int64, as torch's. Whatever has indices is stable: equal keys
keep their index order, ascending and descending, so indices equal
``torch.sort(stable=True)``'s and ``numpy.argsort(kind="stable")``'s. numpy arrays take
numpy's ``axis=`` as well as ``dim=``.

``backend`` is "auto" (the GPU when one works and the input is large, else the CPU), "cuda"
(the GPU or a BitonicError), "cpu", "cpu-network" or "cpu-network-serial". The GIL is released
while a sort runs.
"""

import sys
from collections import namedtuple

import numpy as np


def _preload_nvrtc():
    """Loads the NVRTC of the ``nvidia-cuda-nvrtc`` wheel (CUDA 13, or 12's ``-cu12``), when
    installed, so that the library finds it by its name without LD_LIBRARY_PATH. Best effort:
    NVRTC from the system comes first when the loader finds it there."""
    import ctypes
    import glob
    import os

    try:
        import nvidia
    except ImportError:
        return
    for root in getattr(nvidia, "__path__", []):
        for pattern in ("libnvrtc-builtins.so.1[23]*", "libnvrtc.so.1[23]"):
            for lib in sorted(glob.glob(os.path.join(root, "*", "lib", pattern))):
                try:
                    ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
                except OSError:
                    pass


_preload_nvrtc()

from . import _native, _sampling, _tensors, distributed  # noqa: E402
from ._native import BitonicError  # noqa: E402

__all__ = [
    "BitonicError",
    "SortResult",
    "TopkResult",
    "argsort",
    "distributed",
    "info",
    "sample",
    "sort",
    "sort_",
    "sort_pairs",
    "sort_values",
    "topk",
]

#: The result of :func:`sort`: ``values`` and ``indices``, as ``torch.sort``'s.
SortResult = namedtuple("SortResult", ["values", "indices"])

#: The result of :func:`topk`: ``values`` and ``indices``, as ``torch.topk``'s.
TopkResult = namedtuple("TopkResult", ["values", "indices"])

# The numpy key types, one line each (python/src/lib.rs has the Rust side's tables).
_KEY_DTYPES = tuple(
    np.dtype(t)
    for t in (
        np.uint32,
        np.int32,
        np.uint64,
        np.int64,
        np.float32,
        np.float64,
        np.float16,
    )
)


def _key_dtype(dtype):
    """``dtype`` in native byte order when it is a key type, else None. bfloat16 is not
    numpy's: its arrays come from ml_dtypes, imported by whoever made them."""
    if dtype.byteorder not in "=|" and dtype.newbyteorder("=") in _KEY_DTYPES:
        dtype = dtype.newbyteorder("=")
    if dtype in _KEY_DTYPES:
        return dtype
    ml = sys.modules.get("ml_dtypes")
    if ml is not None and dtype == ml.bfloat16:
        return dtype
    return None


def _tensor(x):
    """(the library's adapter, whether ``x`` is on the GPU) for torch and cupy arrays, or
    (None, False) for anything numpy takes."""
    name = _tensors.library(x)
    if name is None:
        return None, False
    if name == "torch" and not _ops_tried:
        _load_torch_operators()
    lib = _tensors.lib(name)
    return lib, lib.is_cuda(x)


def _via_numpy(lib, f, x, *args):
    """``f`` of a CPU tensor's numpy view, its arrays returned as tensors of its library."""
    out = f(lib.to_numpy(x), *args)
    return tuple(None if a is None else lib.from_numpy(a, x) for a in out)


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
    dtype = _key_dtype(x.dtype)
    if dtype is None:
        raise TypeError(
            f"{name} has dtype {x.dtype}: bitonic sorts keys of dtype uint32, int32, uint64, "
            "int64, float32, float64, float16 or bfloat16 (ml_dtypes)"
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


def __dir__():
    return __all__


def _axis(dim, axis):
    """``dim``, or numpy's ``axis`` when that is given instead."""
    if axis is None:
        return dim
    if dim != -1:
        raise TypeError("give dim or axis, not both")
    return axis


def _sort(x, dim, descending, backend, values, indices):
    keys, shape, dim = _as_rows(x, dim)
    v, i = _native.sort_rows(
        keys.reshape(-1), shape[-1], bool(descending), str(backend), values, indices
    )
    return (
        None if v is None else _back(v, shape, dim),
        None if i is None else _back(i, shape, dim),
    )


def _any_sort(x, dim, descending, backend, values, indices):
    lib, cuda = _tensor(x)
    if cuda:
        return _tensors.sort(lib, x, dim, bool(descending), values, indices)
    if lib is not None:
        return _via_numpy(lib, _sort, x, dim, descending, backend, values, indices)
    return _sort(x, dim, descending, backend, values, indices)


def sort(x, dim=-1, descending=False, *, stable=True, backend="auto", axis=None):
    """Sorts ``x`` along ``dim`` (or ``axis``), like ``torch.sort``: returns
    ``SortResult(values, indices)``, ``values[..., j] == x[..., indices[..., j]]`` along
    ``dim``. Always stable; ``stable`` is accepted for torch's signature. Any number of
    dimensions (1 or more): each 1-D slice along ``dim`` is sorted on its own (``dim`` other
    than the last costs a copy each way). CUDA tensors always sort on the GPU (``backend`` is
    for numpy arrays and CPU tensors)."""
    del stable  # every sort with indices is stable
    dim = _axis(dim, axis)
    if _ops is not None and isinstance(x, _ops.Tensor):
        return SortResult(*_ops.sort(x, dim, descending, backend))
    return SortResult(*_any_sort(x, dim, descending, backend, True, True))


def argsort(x, dim=-1, descending=False, *, stable=True, backend="auto", axis=None):
    """The int64 indices that sort ``x`` along ``dim`` (or ``axis``), like ``torch.argsort``
    and ``numpy.argsort(kind="stable")``. Always stable."""
    del stable
    dim = _axis(dim, axis)
    if _ops is not None and isinstance(x, _ops.Tensor):
        return _ops.argsort(x, dim, descending, backend)
    return _any_sort(x, dim, descending, backend, False, True)[1]


def sort_values(x, dim=-1, descending=False, *, backend="auto", axis=None):
    """The sorted values of ``x`` along ``dim`` (or ``axis``) alone, like ``numpy.sort``: the
    library's key-only sort, with no indices (but where a torch input requires a gradient,
    which needs them). Usually the fastest path; one very long array (2^26 keys) sorts faster
    with indices today."""
    dim = _axis(dim, axis)
    if _ops is not None and isinstance(x, _ops.Tensor):
        return _ops.sort_values(x, dim, descending, backend)
    return _any_sort(x, dim, descending, backend, True, False)[0]


def sort_(x, dim=-1, descending=False, *, backend="auto", axis=None):
    """Sorts ``x`` along ``dim`` (or ``axis``) in place (values only) and returns it, like
    ``Tensor.sort_`` would be: zero copy for CUDA tensors whose rows along ``dim`` are
    contiguous, else a sort and a copy back. ``x`` is a writable numpy array or a torch or
    cupy array."""
    dim = _axis(dim, axis)
    lib, cuda = _tensor(x)
    if cuda:
        return _tensors.sort_(lib, x, dim, bool(descending))
    if lib is not None:
        lib.copy_into(x, sort_values(x, dim, descending, backend=backend))
        return x
    if not isinstance(x, np.ndarray):
        raise TypeError(f"sort_ sorts numpy arrays and tensors in place, not {type(x).__name__}")
    x[...] = sort_values(x, dim, descending, backend=backend)
    return x


def _topk(x, k, dim, largest, backend):
    keys, shape, dim = _as_rows(x, dim)
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        raise TypeError(f"k must be an int, not {type(k).__name__}")
    row = shape[-1]
    if not 0 <= k <= row:
        raise ValueError(f"k {k} is out of range for rows of {row} keys")
    out = shape[:-1] + (int(k),)
    if k == 0 or keys.size == 0:
        return (
            _back(np.empty(out, keys.dtype), out, dim),
            _back(np.empty(out, np.int64), out, dim),
        )
    v, i = _native.topk_rows(keys.reshape(-1), row, int(k), bool(largest), str(backend))
    return _back(v, out, dim), _back(i, out, dim)


def topk(x, k, dim=-1, largest=True, sorted=True, *, backend="auto", axis=None):
    """The ``k`` largest (or smallest) elements of ``x`` along ``dim`` (or ``axis``), like
    ``torch.topk``: ``TopkResult(values, indices)``, best first. Among equal keys the smaller
    index wins: exactly the first ``k`` of a stable sort (NaN the largest, as in torch).
    ``k = 0`` gives empty results. ``sorted=False`` is accepted for torch's signature and
    still returns them sorted (torch leaves their order unspecified then, so sorted is one of
    its answers)."""
    del sorted
    dim = _axis(dim, axis)
    if _ops is not None and isinstance(x, _ops.Tensor):
        return TopkResult(*_ops.topk(x, k, dim, largest, backend))
    return TopkResult(*_topk_rows(x, k, dim, largest, backend))


def _topk_rows(x, k, dim, largest, backend):
    """(values, indices) of :func:`topk`, for any input."""
    lib, cuda = _tensor(x)
    if cuda:
        return _tensors.topk(lib, x, k, dim, bool(largest))
    if lib is not None:
        return _via_numpy(lib, _topk, x, k, dim, largest, backend)
    return _topk(x, k, dim, largest, backend)


def sort_pairs(keys, values, descending=False, *, backend="auto"):
    """Sorts ``keys`` and moves ``values`` (of the same shape, any dtype but object) with
    them, stably: returns new arrays ``(sorted_keys, sorted_values)``, the key-value sort of
    CUB's SortPairs. Arrays of more than one dimension sort each row along the last
    dimension, numpy arrays and tensors alike. Neither output carries a gradient."""
    if _ops is not None and isinstance(keys, _ops.Tensor):
        return _ops.sort_pairs(keys, values, descending, backend)
    return _sort_pairs_host(keys, values, descending, backend)


def _sort_pairs_host(keys, values, descending, backend):
    """(sorted keys, values) of :func:`sort_pairs`, for any input."""
    lib, cuda = _tensor(keys)
    if cuda:
        return _tensors.sort_pairs(lib, keys, values, bool(descending))
    if lib is not None:
        k, v = _sort_pairs_host(lib.to_numpy(keys), lib.to_numpy(values), descending, backend)
        return lib.from_numpy(k, keys), lib.from_numpy(v, keys)
    k, shape, _ = _as_rows(keys, -1, "keys")
    values = np.asarray(values)
    if values.shape != shape:
        raise ValueError(
            f"keys of shape {shape} but values of shape {values.shape}: one value a key"
        )
    if values.dtype.hasobject:
        raise TypeError("values of dtype object cannot be moved by bitonic (they hold references)")
    v = np.ascontiguousarray(values)
    size = v.dtype.itemsize
    row = shape[-1]
    if size in (1, 2, 4, 8, 16) and k.size:
        k, vb = _native.sort_pairs(
            k.reshape(-1), v.view(np.uint8).reshape(-1), size, row, bool(descending), str(backend)
        )
        return k.reshape(shape), vb.view(v.dtype).reshape(shape)
    # Other value sizes (structured, strings) and empty arrays: the stable permutation, then
    # numpy's gather.
    i = argsort(k, descending=descending, backend=backend)
    return np.take_along_axis(k, i, -1), np.take_along_axis(v, i, -1)


def sample(
    logits, *, temperature=None, top_k=None, top_p=None, min_p=None, generator=None, uniform=None
):
    """One token from each row of ``logits`` (shape ``(batch, vocab)``; float32, float16 or
    bfloat16), after vLLM's reference sampler's filters in its order: ``temperature``, then
    ``min_p``, ``top_k`` and ``top_p``, then a draw from what is left, renormalised. Returns
    int64 token ids of shape ``(batch,)``.

    - ``temperature`` divides the logits; 0 is greedy (the first largest logit).
    - ``min_p`` keeps the tokens of probability at least ``min_p`` times the largest.
    - ``top_k`` keeps the ``k`` largest logits and every token tied with the k-th.
    - ``top_p`` keeps the shortest run of the most likely tokens whose probabilities sum to at
      least ``p`` (ties in order of index).

    Each is None (off), one number (checked: temperature finite and >= 0, 0 <= min_p <= 1,
    top_k >= 1, 0 < top_p <= 1) or a tensor or array of one value a row, not checked, where a
    temperature <= 0 is greedy, min_p <= 0 and top_k <= 0 are off, top_p >= 1 is off and
    top_p <= 0 keeps the most likely token alone. NaN logits are never drawn; a row with no
    logit above -inf gives -1.

    The draw is the first kept token, in vocabulary order, at which the running sum of kept
    probabilities passes ``u``, the row's number of ``uniform`` (shape ``(batch,)``, in [0, 1)),
    or of ``torch.rand(batch, generator=generator)`` (numpy: ``generator.random``) when none is
    given. The same numbers give the same tokens (numpy and CUDA tensors agree up to the
    rounding of ``exp`` and of the running sums). CUDA tensors are sampled on the caller's
    stream without waiting on the host, so the call can be captured into a CUDA graph (where
    the generator's numbers advance on each replay) and traced by torch.compile (as
    ``bitonic::sample``). docs/design/sample.md says more."""
    settings = {"temperature": temperature, "min_p": min_p, "top_k": top_k, "top_p": top_p}
    name = _tensors.library(logits)
    if name is None:
        return _sampling.sample_numpy(logits, uniform, settings, generator)
    if name != "torch":
        raise TypeError(f"bitonic.sample takes numpy arrays and torch tensors, not {name} arrays")
    _tensor(logits)  # loads the torch operators
    if _ops is None:
        raise TypeError("bitonic.sample of torch tensors needs torch 2.4 or newer")
    return _ops.sample(logits, uniform, settings, generator)


# The torch operators (_torch_ops), once torch is imported; loaded at most once.
_ops = None
_ops_tried = False


def _load_torch_operators():
    global _ops, _ops_tried
    _ops_tried = True
    try:
        from . import _torch_ops
    except (ImportError, AttributeError):  # a torch without torch.library.custom_op (< 2.4)
        return
    _ops = _torch_ops


def info():
    """What the GPU probe found: ``{"version", "cuda", "reason", "device", "nvrtc_version",
    "kernel_pack_archs"}``; ``reason`` says why sorts run on the CPU when ``cuda`` is False, and
    ``kernel_pack_archs`` lists the architectures whose kernels the package carries compiled
    (on others they compile at first use, cached on disk)."""
    return _native.info()


# With torch already imported, its operators are registered now, so that a first call under
# torch.compile traces one (torch imported later: at bitonic's first call with a tensor).
if "torch" in sys.modules:
    _load_torch_operators()
