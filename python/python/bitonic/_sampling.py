"""``bitonic.sample``: one token from each row of logits after temperature, min-p, top-k and
top-p, as vLLM's reference sampler filters them (docs/design/sample.md states the semantics;
crates/bitonic/src/sample/ is the CPU reference).

Three paths, which give the same tokens for the same uniform numbers up to rounding: the sums
of weights are exact integers (fixed point) in the kernel and f64 elsewhere, and CUDA's
``exp`` may differ from the CPU's in the last bit, which can move a filter's boundary by one
token where a weight sits on it:

- numpy arrays and CPU tensors: the library's CPU reference (``_native.sample_rows``);
- CUDA tensors: the library's sampling kernel (``_native.cuda_sample``, kernels/sample.cu), one
  launch on the caller's stream with no copy to the host and no wait, so that a call can be
  captured into a CUDA graph;
- CUDA tensors of rows of 2^23 logits or more, past the kernel's fixed point: torch
  operations around the package's own stable top-k (``sample_torch``), also on the caller's
  stream. Every filter keeps a prefix of the row's stable descending order, so one top-k of
  the filtered logits (of k keys when ``top_k`` is one number, else the whole row) gives every
  boundary; the kept set is then "above the boundary value, and the first ties in index
  order", and the draw is a search in the running sums of the kept weights.
"""

import math

import numpy as np

from . import _native

_INF = float("inf")

#: The largest float32 below 1: uniform numbers are clamped to [0, this].
_BELOW_ONE = float(np.nextafter(np.float32(1), np.float32(0)))

# The settings, their kinds and the range a single number must be in.
_RANGES = {
    "temperature": (float, lambda t: math.isfinite(t) and t >= 0, "finite and >= 0"),
    "min_p": (float, lambda p: 0 <= p <= 1, "from 0 to 1"),
    "top_k": (int, lambda k: k >= 1, ">= 1"),
    "top_p": (float, lambda p: 0 < p <= 1, "above 0 and at most 1"),
}
#: The settings' names, in the order of the ``bitonic::sample`` operator and the native call.
SETTINGS = tuple(_RANGES)


def check_setting(name, value, rows, is_array):
    """``value`` as the paths take it: None, a Python number in its range (a float rounded to
    float32, as the library reads it; a ``top_k`` past 2^62 as 2^62, which keeps every token
    all the same), or an array of one value a row (``is_array(value)`` tells); else a
    ValueError or TypeError naming it."""
    if value is None:
        return None
    kind, in_range, words = _RANGES[name]
    if is_array(value):
        if tuple(value.shape) != (rows,):
            raise ValueError(
                f"{name} has shape {tuple(value.shape)}; give one number, or one a row ({rows},)"
            )
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number or one a row, not {type(value).__name__}")
    if kind is int and not isinstance(value, (int, np.integer)):
        raise TypeError(f"top_k must be an int, not {type(value).__name__}")
    value = min(int(value), 2**62) if kind is int else float(np.float32(value))
    if not in_range(value):
        raise ValueError(f"{name} is {value}; it must be {words}")
    return value


def check_logits(shape, dtype_ok, dtype_name):
    """A ValueError or TypeError unless the logits are (batch, vocab) of a logit dtype."""
    if len(shape) != 2:
        raise ValueError(f"logits have shape {tuple(shape)}; bitonic.sample takes (batch, vocab)")
    if shape[1] == 0:
        raise ValueError("logits have a vocabulary of 0 tokens: there is nothing to draw")
    if not dtype_ok:
        raise TypeError(
            f"logits have dtype {dtype_name}; bitonic.sample takes float32, float16 or bfloat16"
        )


# --- numpy and CPU tensors: the library's CPU reference -------------------------------------


def sample_numpy(logits, uniform, settings, generator):
    """Tokens (int64, one a row) of a 2-D numpy array of float32, float16 or bfloat16."""
    logits = np.asarray(logits)
    dtype = logits.dtype
    logit_dtype = dtype.kind == "f" and dtype.itemsize in (2, 4) or dtype.name == "bfloat16"
    check_logits(logits.shape, logit_dtype, dtype)
    rows, vocab = logits.shape
    flat = np.ascontiguousarray(logits, dtype=logits.dtype.newbyteorder("=")).reshape(-1)
    if uniform is None:
        rng = generator if generator is not None else np.random.default_rng()
        uniform = rng.random(rows, dtype=np.float32)
    uniform = np.ascontiguousarray(np.asarray(uniform, dtype=np.float32))
    if uniform.shape != (rows,):
        raise ValueError(f"uniform has shape {uniform.shape}; give one number a row ({rows},)")
    args = {}
    for name, value in settings.items():
        value = check_setting(name, value, rows, lambda v: isinstance(v, np.ndarray))
        if isinstance(value, np.ndarray):
            dtype = np.int64 if name == "top_k" else np.float32
            value = np.ascontiguousarray(value, dtype=dtype)
        args[name] = value
    if rows == 0:
        return np.empty(0, np.int64)
    return _native.sample_rows(flat, vocab, uniform, **args)


# --- CUDA tensors: the library's sampling kernel -----------------------------------------------

# Longer rows go to the torch operations below: the kernel's fixed-point sums of weights (2^-40
# of the largest) must stay under 2^63 (the library's plan::SAMPLE_MOST_LOGITS_A_ROW).
NATIVE_MOST_LOGITS = _native.SAMPLE_MOST_LOGITS_A_ROW


def sample_native(L, logits, uniform, settings):
    """Tokens (int64, one a row) of a 2-D CUDA torch tensor by the library's sampling kernel:
    one launch on the current stream, no host copy, no wait. ``L`` is the package's torch
    wrapper (_tensors); ``settings`` are checked (``check_setting``), tensors among them on
    the logits' device."""
    import torch

    rows, vocab = logits.shape
    tokens = torch.empty(rows, dtype=torch.int64, device=logits.device)
    if rows == 0:
        return tokens
    logits = logits.contiguous()
    uniform = uniform.to(torch.float32).contiguous()
    s = L.stream(logits)
    args, alive = [], []
    for name in SETTINGS:
        v = settings[name]
        if isinstance(v, torch.Tensor):
            v = v.to(torch.int64 if name == "top_k" else torch.float32).contiguous()
            alive.append(v)
            args += [L.describe(v, s), None]
        else:
            args += [None, v]
    _native.cuda_sample(
        L.describe(logits, s), vocab, L.describe(uniform, s), L.describe(tokens, s), *args, s
    )
    # Freed here, their memory is reused only by later work on this stream, after the kernel.
    del alive
    return tokens


# --- CUDA tensors of long rows: torch operations around the package's top-k ---------------


def _per_row(torch, value, dtype):
    """A setting as a (rows, 1) tensor of ``dtype`` (float ones read as float32 first, as the
    library reads them), or a number as it is."""
    if isinstance(value, torch.Tensor):
        if value.dtype.is_floating_point:
            value = value.to(torch.float32)
        return value.to(dtype).unsqueeze(1)
    return value


def sample_torch(logits, uniform, settings):
    """Tokens (int64, one a row) of a 2-D torch tensor, by torch operations on its device (see
    the module's docstring). ``settings`` are checked (``check_setting``); tensors among them
    are on the logits' device."""
    import torch

    from . import topk

    rows, vocab = logits.shape
    temperature, min_p = settings["temperature"], settings["min_p"]
    top_k, top_p = settings["top_k"], settings["top_p"]

    # 1. Temperature; NaN counts as -inf.
    s = torch.nan_to_num(logits.float(), nan=-_INF, posinf=_INF, neginf=-_INF)
    greedy = None  # (rows, 1) bool where some rows are greedy, True where all are
    if isinstance(temperature, torch.Tensor):
        t = _per_row(torch, temperature, torch.float32)
        greedy = ~(t > 0)
        s = s / torch.where(greedy, 1.0, t)
    elif temperature == 0:
        greedy = True
    elif temperature is not None:
        # By a device tensor: CUDA divides by a host scalar as a product with its reciprocal,
        # which can differ from the quotient in the last bit.
        s = s / s.new_full((1, 1), temperature)
    if temperature is not None and greedy is not True:
        s = torch.nan_to_num(s, nan=-_INF, posinf=_INF, neginf=-_INF)
    largest = s.amax(-1, keepdim=True)
    dead = largest == -_INF
    first_largest = torch.argmax(s, -1, keepdim=True)
    if greedy is True:
        return torch.where(dead, -1, first_largest).squeeze(1)

    # 2. Weights, the largest 1 (each +inf token 1, all else 0, where the largest is +inf).
    w = torch.where(largest == _INF, (s == _INF).float(), torch.exp(s - largest))
    keep = s > -_INF
    # 4. min-p.
    if isinstance(min_p, torch.Tensor):
        mp = _per_row(torch, min_p, torch.float32)
        keep = keep & (~(mp > 0) | (w >= mp.clamp(max=1)))
    elif min_p is not None and min_p > 0:
        keep = keep & (w >= min(min_p, 1.0))
    # 5, 6. top-k and top-p, by the stable descending order.
    if top_k is not None or top_p is not None:
        keep = _prefix_filters(torch, topk, s, w, keep, top_k, top_p)

    # 7. The draw: the first kept token whose running sum passes u times the total.
    kept_w = torch.where(keep, w, 0.0).double()
    running = kept_w.cumsum(-1)
    u = torch.nan_to_num(uniform.float(), nan=0.0).clamp(0.0, _BELOW_ONE).double()
    target = u.unsqueeze(1) * running[:, -1:]
    token = torch.searchsorted(running, target, right=True).clamp(max=vocab - 1)
    # Running sums from a parallel scan may not be monotone to the last bit: a token that is
    # not kept (or weighs 0) is never returned, the row's most likely token instead.
    drawable = keep.gather(1, token) & (kept_w.gather(1, token) > 0)
    token = torch.where(drawable, token, first_largest)
    if greedy is not None:
        token = torch.where(greedy, first_largest, token)
    return torch.where(dead, -1, token).squeeze(1)


def _prefix_filters(torch, topk, s, w, keep, top_k, top_p):
    """``keep`` after top-k and top-p. Both keep a prefix of the stable descending order of the
    kept tokens, whose first ``K`` positions one top-k gives (K = top_k when it is one number,
    else the row); past them (ties with the k-th) every token weighs the same."""
    vocab = s.shape[1]
    K = min(top_k, vocab) if isinstance(top_k, int) else vocab
    values, indices = topk(torch.where(keep, s, -_INF), K)
    left = keep.sum(-1, keepdim=True)
    if top_k is not None:
        k = _per_row(torch, top_k, torch.int64)
        on = (k > 0) & (k < left)
        kth = values.gather(1, (k - 1).clamp(0, K - 1)) if isinstance(k, torch.Tensor) else values[:, K - 1 :]
        keep = keep & (~on | (s >= kth))
        left = keep.sum(-1, keepdim=True)
    if top_p is None:
        return keep
    position = torch.arange(K, device=s.device)
    weights = torch.where(position < left, w.gather(1, indices), 0.0).double()
    running = weights.cumsum(-1)
    ties_past = (left - K).clamp(min=0)  # kept tokens past the candidates, tied with the last
    last = weights[:, K - 1 :]
    total = running[:, -1:] + ties_past * last
    p = _per_row(torch, top_p, torch.float64)
    enough = p * total
    length = ((running - weights < enough) & (position < left)).sum(-1, keepdim=True)
    # Ties past the candidates: the j-th has the candidates' sum plus j weights before it.
    needed = torch.where(last > 0, torch.ceil((enough - running[:, -1:]) / last), ties_past)
    past = torch.minimum(needed.clamp(min=0), ties_past).long()
    length = torch.where((length == K) & (ties_past > 0), K + past, length)
    if isinstance(p, torch.Tensor):
        length = torch.where(p > 0, length, 1)
        length = torch.where(p >= 1, left, torch.minimum(length.clamp(min=1), left))
    elif p < 1:
        length = torch.minimum(length.clamp(min=1), left)
    else:
        length = left
    # The kept prefix: every token above its last value, and that value's first ties.
    boundary = values.gather(1, (length - 1).clamp(0, K - 1))
    above = keep & (s > boundary)
    tied = keep & (s == boundary)
    rank = tied.int().cumsum(-1)
    return above | (tied & (rank <= length - above.sum(-1, keepdim=True)))
