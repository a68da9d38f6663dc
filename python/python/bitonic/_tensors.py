"""torch tensors and cupy arrays: CUDA ones zero copy, on the caller's current stream; CPU
tensors through numpy, returned as tensors of their own library.

Outputs are allocated by the caller's library (``Tensor.new_empty`` or ``cupy.empty`` on the
input's device, on its current stream) and filled by bitonic's kernels: the Rust side
(python/src/dlpack.rs) reads what ``describe`` gives of each array (a cupy array's capsule of
``__dlpack__(stream=s)``, where ``s`` is the caller's current stream, so the producer has
nothing to order; a torch tensor's address, length, device and dtype as five integers, which
say the same) and queues the sort on ``s`` itself. Nothing waits on the host:
later work on ``s`` sees the results, as after a torch kernel, and a CUDA graph captured on
``s`` holds the sort.

Floats compare as torch's do (every NaN largest, -0.0 equal to +0.0). The values of a top-k,
and of a sort with indices (the top-k of the whole row), are the input's own keys, bit for bit:
the kernels read them back by their indices.
"""

import sys

from . import _native


# The array class of each library seen: ``torch.Tensor``, ``cupy.ndarray``. Read from
# ``sys.modules`` once, at import when the library is already there, else at the first array of
# it: torch.compile traces ``library`` in every call, and its first inductor compile in a process
# can import modules while dynamo walks ``sys.modules`` ("dictionary changed size during
# iteration"), so a call it traces should not read ``sys.modules`` at all.
_CLASSES = {}
_CLASS_NAMES = {"torch": "Tensor", "cupy": "ndarray"}


def _array_class(mod):
    """``mod``'s array class, once ``mod`` is imported (else None), kept in ``_CLASSES``."""
    cls = _CLASSES.get(mod)
    if cls is None and mod in sys.modules:
        cls = getattr(sys.modules[mod], _CLASS_NAMES[mod], None)  # None while it initialises
        if cls is not None:
            _CLASSES[mod] = cls
    return cls


for _mod in _CLASS_NAMES:
    _array_class(_mod)


def library(x):
    """``"torch"``, ``"cupy"`` or None: which array library ``x`` belongs to."""
    mod = type(x).__module__.split(".", 1)[0]
    if mod not in _CLASS_NAMES:
        return None
    cls = _array_class(mod)
    return mod if cls is not None and isinstance(x, cls) else None


class _Torch:
    def __init__(self):
        import torch

        self.t = torch
        self.int32, self.int64 = torch.int32, torch.int64
        # The per-call host time is most of a small sort's (python -m bitonic.bench): the raw
        # stream handle skips torch.cuda.current_stream's Stream object, and `describe` skips
        # __dlpack__'s stream checks, which order nothing here (the call runs on the current
        # stream anyway), through torch's public calls, as cheap as a capsule of the private
        # torch._C._to_dlpack (bench/peers/host_cost_parts.py).
        self._raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self._dl_types = {}  # DLPack's (type code, bits) of each dtype seen (describe)

    def is_cuda(self, x):
        return x.is_cuda

    def stream(self, x):
        if self._raw_stream is not None:
            s = self._raw_stream(x.get_device())
        else:
            s = self.t.cuda.current_stream(x.device).cuda_stream
        return s if s else 1  # DLPack's legacy default stream is 1, not 0

    def describe(self, x, stream):
        """What the native calls read of the C-contiguous ``x``: ``(address, elements, CUDA
        device, DLPack type code, bits)``, what its capsule would say. Any dtype: the values
        of a key-value sort are moved by their width alone (complex64 as 8 bytes), and a key
        dtype bitonic does not sort is named in the native side's error."""
        dl = self._dl_types.get(x.dtype)
        if dl is None:
            dt = x.dtype
            if dt == self.t.bfloat16:
                code = 4
            elif dt.is_complex:
                code = 5
            elif dt == self.t.bool:
                code = 6
            elif dt.is_floating_point:
                code = 2
            else:
                code = 0 if dt.is_signed else 1
            dl = self._dl_types[dt] = (code, 8 * x.element_size())
        return (x.data_ptr(), x.numel(), x.get_device(), dl[0], dl[1])

    def ndim(self, x):
        return x.dim()

    def numel(self, x):
        return x.numel()

    def contiguous(self, x):
        return x.is_contiguous()

    def itemsize(self, x):
        return x.element_size()

    def rows(self, x, dim, copy):
        """``x`` with ``dim`` moved last, C-contiguous; a new tensor when ``copy``. Detached
        always: DLPack exports no tensor that requires grad, and a forward-mode tangent, which
        a tensor carries without requiring grad, would be cloned in input order while the keys
        are sorted in place (bitonic's outputs carry no gradient of either kind)."""
        m = x.detach()
        if dim != m.dim() - 1:
            m = m.movedim(dim, -1)
        if copy:
            return m.clone(memory_format=self.t.contiguous_format)
        return m.contiguous()

    def back(self, y, dim):
        return y if dim == y.dim() - 1 else y.movedim(-1, dim)

    def empty(self, shape, dtype, like):
        return like.new_empty(shape, dtype=dtype)

    def is_float(self, x):
        return x.dtype.is_floating_point

    def gather(self, v, i):
        return self.t.gather(v, -1, i)

    def to_numpy(self, x):
        x = x.detach().resolve_conj().resolve_neg()
        if x.dtype == self.t.bfloat16:  # numpy's bfloat16 is ml_dtypes'
            try:
                import ml_dtypes
            except ImportError:
                raise TypeError(
                    "bfloat16 CPU tensors go through numpy as ml_dtypes.bfloat16: "
                    "pip install ml_dtypes (or sort on the GPU)"
                ) from None
            return x.view(self.t.int16).numpy().view(ml_dtypes.bfloat16)
        return x.numpy()

    def from_numpy(self, a, like):
        if a.dtype.name == "bfloat16":
            return self.t.from_numpy(a.view("int16")).view(self.t.bfloat16)
        return self.t.from_numpy(a)

    def copy_into(self, dst, src):
        dst.copy_(src)

    def dtype_name(self, x):
        return str(x.dtype).replace("torch.", "")


class _Cupy:
    def __init__(self):
        import cupy

        self.c = cupy
        self.int32, self.int64 = cupy.int32, cupy.int64

    def is_cuda(self, x):
        return True

    def stream(self, x):
        s = self.c.cuda.get_current_stream().ptr
        return s if s else 1

    def describe(self, x, stream):
        """The capsule of ``x.__dlpack__(stream=stream)``."""
        return x.__dlpack__(stream=stream)

    def ndim(self, x):
        return x.ndim

    def numel(self, x):
        return x.size

    def contiguous(self, x):
        return x.flags.c_contiguous

    def itemsize(self, x):
        return x.itemsize

    def rows(self, x, dim, copy):
        m = self.c.moveaxis(x, dim, -1)
        if copy:
            return m.copy(order="C")
        return self.c.ascontiguousarray(m)

    def back(self, y, dim):
        return y if dim == y.ndim - 1 else self.c.moveaxis(y, -1, dim)

    def empty(self, shape, dtype, like):
        with like.device:
            return self.c.empty(shape, dtype=dtype)

    def is_float(self, x):
        return x.dtype.kind == "f"

    def gather(self, v, i):
        return self.c.take_along_axis(v, i, axis=-1)

    def to_numpy(self, x):  # never: cupy arrays are always on the GPU
        return self.c.asnumpy(x)

    def from_numpy(self, a, like):
        return self.c.asarray(a)

    def copy_into(self, dst, src):
        dst[...] = src

    def dtype_name(self, x):
        return str(x.dtype)


_LIBS = {}


def lib(name):
    if name not in _LIBS:
        _LIBS[name] = _Torch() if name == "torch" else _Cupy()
    return _LIBS[name]


def _dim(L, x, dim):
    nd = L.ndim(x)
    if nd == 0:
        raise ValueError("x is 0-dimensional: bitonic sorts arrays of 1 or more dimensions")
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, not {type(dim).__name__}")
    if not -nd <= dim < nd:
        raise ValueError(f"dim {dim} is out of range for an array of {nd} dimensions")
    return dim % nd


def sort(L, x, dim, descending, values, indices):
    """(values or None, int64 indices or None) of a CUDA ``x`` sorted along ``dim``."""
    dim = _dim(L, x, dim)
    if not indices:
        # Keys alone: a copy of the rows, sorted in place.
        keys = L.rows(x, dim, copy=True)
        if L.numel(keys):
            s = L.stream(x)
            _native.cuda_sort(L.describe(keys, s), None, keys.shape[-1], descending, s)
        return L.back(keys, dim), None
    # With indices: the top-k of k = the whole row, which is the stable sort, read from the
    # input as it is into outputs of its own (one launch for rows a warp holds); the values are
    # the input's own keys, bit for bit (an argsort's are thrown away).
    sorted_keys, idx = topk(L, x, x.shape[dim], dim, descending)
    return (sorted_keys if values else None), idx


def sort_(L, x, dim, descending):
    """Sorts ``x`` along ``dim`` in place: zero copy when the rows are contiguous."""
    dim = _dim(L, x, dim)
    if L.contiguous(x) and dim == L.ndim(x) - 1:
        if L.numel(x):
            s = L.stream(x)
            target = x.detach() if L is lib("torch") else x
            _native.cuda_sort(L.describe(target, s), None, x.shape[-1], descending, s)
        return x
    v, _ = sort(L, x, dim, descending, True, False)
    L.copy_into(x, v)
    return x


def topk(L, x, k, dim, largest):
    dim = _dim(L, x, dim)
    keys = L.rows(x, dim, copy=False)
    shape = tuple(keys.shape)
    row = shape[-1]
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"k must be an int, not {type(k).__name__}")
    if not 0 <= k <= row:
        raise ValueError(f"k {k} is out of range for rows of {row} keys")
    out = shape[:-1] + (k,)
    values = L.empty(out, keys.dtype, keys)
    idx = L.empty(out, L.int64, keys)
    if L.numel(values) == 0:
        return L.back(values, dim), L.back(idx, dim)
    s = L.stream(x)
    # The values are the input's own keys, bit for bit: the kernels read them back.
    _native.cuda_topk(
        L.describe(keys, s), L.describe(values, s), L.describe(idx, s), row, k, largest, s
    )
    return L.back(values, dim), L.back(idx, dim)


def sort_pairs(L, keys, values, descending):
    """Keys and values of one shape, sorted along the last dimension; the values move with
    their keys. 4- and 8-byte values move in the sort; others, and the values of float keys
    (which come back bit for bit), by a gather of the permutation."""
    if tuple(keys.shape) != tuple(values.shape):
        raise ValueError(
            f"keys of shape {tuple(keys.shape)} but values of shape {tuple(values.shape)}: "
            "one value a key"
        )
    _dim(L, keys, -1)
    if L.itemsize(values) not in (4, 8) or L.is_float(keys):
        sorted_keys, i = sort(L, keys, -1, descending, True, True)
        return sorted_keys, L.gather(L.rows(values, -1, copy=False), i)
    k = L.rows(keys, -1, copy=True)
    if L.numel(k) == 0:
        return k, L.rows(values, -1, copy=True)
    v = L.rows(values, -1, copy=True)
    s = L.stream(keys)
    _native.cuda_sort_pairs(L.describe(k, s), L.describe(v, s), k.shape[-1], descending, s)
    return k, v
