"""bitonic's functions as torch operators (``torch.library`` custom ops): ``bitonic::sort``,
``bitonic::argsort``, ``bitonic::sort_values``, ``bitonic::topk``, ``bitonic::sort_pairs`` and
``bitonic::sample``.

Each has a fake implementation, which gives only the outputs' shapes and dtypes, so that
``torch.compile(fullgraph=True)`` traces a call as one node of its graph. ``sort`` and ``topk``
also have torch's gradient: the values' gradient flows back to the input through the indices
(and ``sort_values`` takes ``sort``'s where a gradient is wanted).

bitonic imports this module once torch is imported (bitonic/__init__.py). A torch tensor's
call goes through the operator only where torch has to see one: while torch.compile traces,
and where the input requires a gradient. Otherwise it calls the implementation directly,
which skips the operator's dispatch, about 10 µs of host time a call (python -m
bitonic.bench). Both run the same code, on the caller's current stream, and both can be
captured into a CUDA graph.

The operators' outputs are contiguous tensors of their own; a direct call along a ``dim``
other than the last may return views of them instead (``movedim``), as it always has.
"""

from typing import Optional, Tuple

import torch

from . import _sampling, _tensors
from . import _any_sort, _sort_pairs_host, _topk_rows  # the package's host paths

Tensor = torch.Tensor
_T = _tensors.lib("torch")


def _wants_operator(*tensors):
    """Whether a call must go through the operator: torch.compile is tracing it, or a
    gradient is wanted."""
    if torch.compiler.is_compiling():
        return True
    return any(t.requires_grad for t in tensors) and torch.is_grad_enabled()


def _direct_sort(x, dim, descending, backend, values, indices):
    """A sort's direct call: a CUDA tensor straight to the GPU path (its library is known
    here), any other through the package's host paths."""
    if x.is_cuda:
        return _tensors.sort(_T, x, dim, bool(descending), values, indices)
    return _any_sort(x, dim, descending, backend, values, indices)


def _dim(x, dim):
    return _tensors._dim(_T, x, dim)


def _shape_with(x, dim, length):
    shape = list(x.shape)
    shape[dim] = length
    return shape


# --- sort: values and int64 indices ---------------------------------------------------------


@torch.library.custom_op("bitonic::sort", mutates_args=())
def _sort_op(x: Tensor, dim: int, descending: bool, backend: str) -> Tuple[Tensor, Tensor]:
    v, i = _any_sort(x.detach(), dim, descending, backend, True, True)
    return v.contiguous(), i.contiguous()


@_sort_op.register_fake
def _(x, dim, descending, backend):
    _dim(x, dim)
    return torch.empty_like(x, memory_format=torch.contiguous_format), x.new_empty(
        x.shape, dtype=torch.int64
    )


def _save_indices(ctx, inputs, output):
    x, dim = inputs[0], inputs[1]
    ctx.dim = _dim(x, dim)
    ctx.shape = x.shape
    ctx.save_for_backward(output[1])


def _scatter_back(ctx, grad_values, grad_indices):
    """The input's gradient: each value's gradient where the value came from, 0 elsewhere
    (torch.sort's and torch.topk's)."""
    (indices,) = ctx.saved_tensors
    grad = grad_values.new_zeros(ctx.shape).scatter(ctx.dim, indices, grad_values)
    return (grad,) + (None,) * (len(ctx.needs_input_grad) - 1)


_sort_op.register_autograd(_scatter_back, setup_context=_save_indices)


def sort(x, dim, descending, backend):
    if _wants_operator(x):
        return _sort_op(x, dim, bool(descending), str(backend))
    return _direct_sort(x, dim, descending, backend, True, True)


# --- argsort --------------------------------------------------------------------------------


@torch.library.custom_op("bitonic::argsort", mutates_args=())
def _argsort_op(x: Tensor, dim: int, descending: bool, backend: str) -> Tensor:
    return _any_sort(x.detach(), dim, descending, backend, False, True)[1].contiguous()


@_argsort_op.register_fake
def _(x, dim, descending, backend):
    _dim(x, dim)
    return x.new_empty(x.shape, dtype=torch.int64)


def argsort(x, dim, descending, backend):
    # Indices carry no gradient: the operator sees the input detached.
    if torch.compiler.is_compiling():
        return _argsort_op(x.detach(), dim, bool(descending), str(backend))
    return _direct_sort(x, dim, descending, backend, False, True)[1]


# --- sort_values ----------------------------------------------------------------------------


@torch.library.custom_op("bitonic::sort_values", mutates_args=())
def _sort_values_op(x: Tensor, dim: int, descending: bool, backend: str) -> Tensor:
    return _any_sort(x.detach(), dim, descending, backend, True, False)[0].contiguous()


@_sort_values_op.register_fake
def _(x, dim, descending, backend):
    _dim(x, dim)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def sort_values(x, dim, descending, backend):
    if torch.is_grad_enabled() and x.requires_grad:
        # The gradient needs the indices: the sort with them.
        return _sort_op(x, dim, bool(descending), str(backend))[0]
    if torch.compiler.is_compiling():
        return _sort_values_op(x, dim, bool(descending), str(backend))
    return _direct_sort(x, dim, descending, backend, True, False)[0]


# --- topk -----------------------------------------------------------------------------------


@torch.library.custom_op("bitonic::topk", mutates_args=())
def _topk_op(x: Tensor, k: int, dim: int, largest: bool, backend: str) -> Tuple[Tensor, Tensor]:
    v, i = _topk_rows(x.detach(), k, dim, largest, backend)
    return v.contiguous(), i.contiguous()


@_topk_op.register_fake
def _(x, k, dim, largest, backend):
    d = _dim(x, dim)
    if not 0 <= k <= x.shape[d]:
        raise ValueError(f"k {k} is out of range for rows of {x.shape[d]} keys")
    shape = _shape_with(x, d, k)
    return x.new_empty(shape), x.new_empty(shape, dtype=torch.int64)


def _save_topk_indices(ctx, inputs, output):
    x, _k, dim = inputs[:3]
    _save_indices(ctx, (x, dim), output)


_topk_op.register_autograd(_scatter_back, setup_context=_save_topk_indices)


def topk(x, k, dim, largest, backend):
    if _wants_operator(x):
        return _topk_op(x, k, dim, bool(largest), str(backend))
    if x.is_cuda:
        return _tensors.topk(_T, x, k, dim, bool(largest))
    return _topk_rows(x, k, dim, largest, backend)


# --- sort_pairs -----------------------------------------------------------------------------


@torch.library.custom_op("bitonic::sort_pairs", mutates_args=())
def _sort_pairs_op(
    keys: Tensor, values: Tensor, descending: bool, backend: str
) -> Tuple[Tensor, Tensor]:
    k, v = _sort_pairs_host(keys.detach(), values.detach(), descending, backend)
    return k.contiguous(), v.contiguous()


@_sort_pairs_op.register_fake
def _(keys, values, descending, backend):
    if tuple(keys.shape) != tuple(values.shape):
        raise ValueError(
            f"keys of shape {tuple(keys.shape)} but values of shape {tuple(values.shape)}: "
            "one value a key"
        )
    return (
        torch.empty_like(keys, memory_format=torch.contiguous_format),
        torch.empty_like(values, memory_format=torch.contiguous_format),
    )


def sort_pairs(keys, values, descending, backend):
    # Neither output carries a gradient: the operator sees its inputs detached.
    if torch.compiler.is_compiling():
        return _sort_pairs_op(keys.detach(), values.detach(), bool(descending), str(backend))
    return _sort_pairs_host(keys, values, descending, backend)


# --- sample ---------------------------------------------------------------------------------
# The operator takes each setting as a tensor of one value a row or as one number (the other
# None), since a schema has no "number or tensor": `_sampling.SETTINGS` is their order in it.

_SAMPLE_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@torch.library.custom_op("bitonic::sample", mutates_args=())
def _sample_op(
    logits: Tensor,
    uniform: Tensor,
    temperature: Optional[Tensor],
    temperature_all: Optional[float],
    min_p: Optional[Tensor],
    min_p_all: Optional[float],
    top_k: Optional[Tensor],
    top_k_all: Optional[int],
    top_p: Optional[Tensor],
    top_p_all: Optional[float],
) -> Tensor:
    pairs = (temperature, temperature_all, min_p, min_p_all, top_k, top_k_all, top_p, top_p_all)
    settings = {
        name: each if each is not None else alike
        for name, each, alike in zip(_sampling.SETTINGS, pairs[0::2], pairs[1::2])
    }
    return _sample_direct(logits, uniform, settings)


@_sample_op.register_fake
def _(logits, uniform, *settings):
    return logits.new_empty((logits.shape[0],), dtype=torch.int64)


def _sample_direct(logits, uniform, settings):
    """Tokens of ``logits`` at ``uniform``: CUDA tensors by the library's sampling kernel on
    their stream (rows too long for it by torch operations), CPU tensors by the library's CPU
    reference through numpy."""
    if logits.is_cuda:
        if logits.shape[1] <= _sampling.NATIVE_MOST_LOGITS:
            return _sampling.sample_native(_T, logits, uniform, settings)
        return _sampling.sample_torch(logits, uniform, settings)
    as_numpy = {
        name: _T.to_numpy(v) if isinstance(v, Tensor) else v for name, v in settings.items()
    }
    tokens = _sampling.sample_numpy(_T.to_numpy(logits), _T.to_numpy(uniform), as_numpy, None)
    return torch.from_numpy(tokens)


def sample(logits, uniform, settings, generator):
    """``bitonic.sample`` of a torch tensor: the settings checked, the uniform numbers drawn
    (torch.rand on the logits' device and the current stream) when not given."""
    _sampling.check_logits(logits.shape, logits.dtype in _SAMPLE_DTYPES, str(logits.dtype))
    rows = logits.shape[0]
    for name, value in settings.items():
        value = _sampling.check_setting(name, value, rows, lambda v: isinstance(v, Tensor))
        if isinstance(value, Tensor) and value.device != logits.device:
            raise ValueError(f"{name} is on {value.device} but the logits are on {logits.device}")
        settings[name] = value
    if uniform is None:
        uniform = torch.rand(rows, generator=generator, device=logits.device)
    elif not isinstance(uniform, Tensor) or tuple(uniform.shape) != (rows,):
        raise ValueError(f"uniform must be a tensor of one number a row ({rows},)")
    elif uniform.device != logits.device:
        raise ValueError(f"uniform is on {uniform.device} but the logits are on {logits.device}")
    if torch.compiler.is_compiling():
        pairs = []
        for name in _sampling.SETTINGS:
            v = settings[name]
            pairs += [v, None] if isinstance(v, Tensor) else [None, v]
        return _sample_op(logits, uniform, *pairs)
    return _sample_direct(logits, uniform, settings)
