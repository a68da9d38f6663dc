"""torch and cupy CUDA arrays: results equal to torch's (stable sort, top-k), NaNs of both
signs and signed zeros included, every key type through cupy against the numpy oracle of
test_numpy.py, dims, non-contiguous and CPU inputs, in-place sorts, streams (the sort is queued
on the caller's current stream behind the work already there, with nothing waiting on the
host) and capture into CUDA graphs.

Without torch or cupy on a GPU these tests are skipped, with the reason; under
BITONIC_REQUIRE_GPU=1 (the GPU host) they fail instead."""

import os
import time

import numpy as np
import pytest

import bitonic
from test_numpy import assert_same_keys, bits, expected_argsort, in_threads, make

REQUIRE = os.environ.get("BITONIC_REQUIRE_GPU") == "1"


def _probe(name):
    """The module when it imports and sees a GPU that bitonic can use, else why not."""
    try:
        mod = __import__(name)
    except Exception as e:  # noqa: BLE001 - any failure is a reason
        return None, f"{name} does not import ({e.__class__.__name__}: {e})"
    try:
        ok = mod.cuda.is_available() if name == "torch" else mod.cuda.runtime.getDeviceCount() > 0
    except Exception as e:  # noqa: BLE001
        ok, why = False, f"{name} sees no GPU ({e})"
    else:
        why = f"{name} sees no GPU"
    if not ok:
        return None, why
    info = bitonic.info()
    if not info["cuda"]:
        return None, f"bitonic cannot use the GPU: {info['reason']}"
    return mod, None


_LIBS = {name: _probe(name) for name in ("torch", "cupy")}


def need(name):
    mod, why = _LIBS[name]
    if mod is None:
        if REQUIRE:
            pytest.fail(f"BITONIC_REQUIRE_GPU=1 but {why}")
        pytest.skip(why)
    return mod


@pytest.fixture
def torch():
    return need("torch")


@pytest.fixture
def cupy():
    return need("cupy")


TORCH_DTYPES = ["int32", "int64", "float32", "float64", "float16", "bfloat16"]
NP_DTYPES = [np.uint32, np.int32, np.uint64, np.int64, np.float32, np.float64, np.float16]


def tdata(torch, dtype, shape, ties, seed=0):
    """Random keys of a torch dtype on the GPU: few distinct ones when ``ties`` (stability
    shows), else distinct with high probability. No NaN or -0.0 (test_torch_nans_and_zeros
    has them)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    dt = getattr(torch, dtype)
    hi = 8 if ties else 2**30
    x = torch.randint(-hi, hi, shape, generator=g, device="cuda", dtype=torch.int64)
    if dt.is_floating_point:
        x = x.to(dt) / 4 if ties else torch.randn(shape, generator=g, device="cuda", dtype=dt)
        return x + 0.0  # no -0.0
    return x.to(dt)


@pytest.mark.parametrize("dtype", TORCH_DTYPES)
@pytest.mark.parametrize("shape", [(1,), (1000,), (64, 1000), (3, 5, 257), (2, 1 << 17)])
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("ties", [True, False], ids=["ties", "distinct"])
def test_torch_sort_equals_torch_stable_sort(torch, dtype, shape, descending, ties):
    x = tdata(torch, dtype, shape, ties)
    before = x.clone()
    v, i = bitonic.sort(x, descending=descending)
    tv, ti = torch.sort(x, descending=descending, stable=True)
    assert v.device == x.device and v.dtype == x.dtype and i.dtype == torch.int64
    assert torch.equal(v, tv) and torch.equal(i, ti)
    assert torch.equal(bitonic.argsort(x, descending=descending), ti)
    assert torch.equal(bitonic.sort_values(x, descending=descending), tv)
    assert torch.equal(x, before)


def specials_in(torch, x, seed=0):
    """``x`` (a float tensor) with -0.0, +0.0, NaNs of both signs and infinities put in at
    random places: ties of equal values that torch's stable sort keeps in index order."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    flat = x.reshape(-1).clone()
    n = flat.numel()
    for value in (-0.0, 0.0, float("inf"), float("-inf"), float("nan")):
        flat[torch.randint(0, n, (max(n // 16, 1),), generator=g, device="cuda")] = value
    # NaNs with the sign bit, set in their words (arithmetic on the GPU makes positive ones).
    words = int_view(torch, flat)
    nan_word = int_view(torch, torch.tensor([float("nan")], dtype=x.dtype, device="cuda"))[0].item()
    sign = 2 ** (8 * flat.element_size() - 1)
    words[torch.randint(0, n, (max(n // 32, 1),), generator=g, device="cuda")] = nan_word - sign
    return flat.reshape(x.shape)


def int_view(torch, x):
    return x.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
# Rows a warp holds (one launch), rows the pair passes sort in one pass (a tile or a
# cluster's) and in several, and one long row (the key-value merge sort).
@pytest.mark.parametrize("shape", [(1000,), (64, 1000), (5, 4097), (3, 100003), (2, 1 << 19),
                                   (1, 1 << 20)])
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
def test_torch_nans_and_zeros(torch, dtype, shape, descending):
    """torch's documented order, as its CPU sort keeps it: every NaN largest, -0.0 equal to
    +0.0; indices bitwise those of torch.sort(stable=True) on the CPU (torch's CUDA sort puts
    NaNs with the sign bit first, its radix sort's total order), values the input's own bits,
    top-k NaN first as torch.topk."""
    x = specials_in(torch, tdata(torch, dtype, shape, ties=True), seed=len(shape))
    assert (int_view(torch, x) < 0).logical_and(x.isnan()).any(), "a NaN with its sign bit"
    tv, ti = torch.sort(x.cpu(), descending=descending, stable=True)
    tv, ti = tv.cuda(), ti.cuda()
    v, i = bitonic.sort(x, descending=descending)
    assert torch.equal(i, ti)
    assert torch.equal(int_view(torch, v), int_view(torch, tv))
    assert torch.equal(bitonic.argsort(x, descending=descending), ti)
    only = bitonic.sort_values(x, descending=descending)
    assert torch.equal(only.isnan(), tv.isnan()) and torch.equal(only.nan_to_num(), tv.nan_to_num())
    for k in (1, 50, 1000):
        kv, ki = bitonic.topk(x, k, largest=descending)
        assert torch.equal(ki, ti[..., :k])
        assert torch.equal(int_view(torch, kv), int_view(torch, tv[..., :k]))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(1000,), (64, 1000), (3, 100003)])
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
def test_torch_half_floats_against_the_oracle(torch, dtype, shape, descending):
    """NaNs of both signs, infinities, zeros and subnormals of 16-bit floats, against the
    numpy oracle of test_numpy.py: bf16 through the float32 of the same words' top halves."""
    host = make(np.float16, int(np.prod(shape)), "random", seed=len(shape))
    words = host.view(np.uint16)
    if dtype == "bfloat16":  # the float32 words' top halves: bf16 of the same specials
        words = (host.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        same = (words.astype(np.uint32) << 16).view(np.float32)
    else:
        same = words.view(np.float16)
    x = torch.from_numpy(words.view(np.int16).reshape(shape)).cuda().view(getattr(torch, dtype))
    want = expected_argsort(same.reshape(shape), descending, axis=-1)
    v, i = bitonic.sort(x, descending=descending)
    assert v.dtype == x.dtype and i.dtype == torch.int64
    np.testing.assert_array_equal(i.cpu().numpy(), want)
    got = v.view(torch.int16).cpu().numpy().view(np.uint16)
    np.testing.assert_array_equal(got, np.take_along_axis(words.reshape(shape), want, -1))
    for k in (1, 50, 1000):
        tv, ti = bitonic.topk(x, k, largest=descending)
        np.testing.assert_array_equal(ti.cpu().numpy(), want[..., :k])


@pytest.mark.parametrize("dim", [0, 1, -1, -3])
def test_torch_dims_and_non_contiguous(torch, dim):
    base = tdata(torch, "float32", (6, 40, 50), ties=True)
    for x in (base, base.transpose(0, 2), base[:, ::3, 1::2]):
        v, i = bitonic.sort(x, dim=dim)
        tv, ti = torch.sort(x, dim=dim, stable=True)
        assert torch.equal(v, tv) and torch.equal(i, ti)
        tk = torch.topk(x, 3, dim=dim)
        k = bitonic.topk(x, 3, dim=dim)
        assert torch.equal(k.values, tk.values)


@pytest.mark.parametrize("dtype", TORCH_DTYPES)
@pytest.mark.parametrize("shape", [(1000,), (64, 1000), (8, 128256), (1, 1 << 20)])
@pytest.mark.parametrize("k", [1, 8, 50, 1000])
@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
def test_torch_topk(torch, dtype, shape, k, largest):
    for ties in (False, True):
        x = tdata(torch, dtype, shape, ties, seed=k)
        v, i = bitonic.topk(x, k, largest=largest)
        tv, ti = torch.topk(x, k, largest=largest)
        assert v.shape == tv.shape and i.dtype == torch.int64
        assert torch.equal(v, tv)
        # Ties: the smaller index first, exactly the first k of a stable sort.
        sv, si = torch.sort(x, descending=largest, stable=True)
        assert torch.equal(i, si[..., :k])
        if torch.unique(x).numel() == x.numel():  # no ties: torch's indices are ours
            assert torch.equal(i, ti)


def test_torch_cpu_tensors_grad_and_errors(torch):
    x = torch.tensor([[3.0, 1.0, 2.0, 1.0]], requires_grad=True)
    v, i = bitonic.sort(x)
    assert isinstance(v, torch.Tensor) and v.device.type == "cpu"
    assert v.tolist() == [[1.0, 1.0, 2.0, 3.0]] and i.tolist() == [[1, 3, 2, 0]]
    k = bitonic.topk(x, 2)
    assert k.values.tolist() == [[3.0, 2.0]] and k.indices.tolist() == [[0, 2]]
    g = x.detach().cuda().requires_grad_()
    assert bitonic.sort(g).indices.tolist() == [[1, 3, 2, 0]]
    with pytest.raises(TypeError, match="int16"):
        bitonic.sort(torch.arange(10, dtype=torch.int16, device="cuda"))
    with pytest.raises(TypeError, match="bool"):
        bitonic.argsort(torch.arange(10, device="cuda") > 3)
    with pytest.raises(ValueError, match="out of range"):
        bitonic.topk(torch.arange(10, device="cuda"), 11)
    with pytest.raises(ValueError, match="0-dimensional"):
        bitonic.sort(torch.tensor(1.0, device="cuda"))
    e = torch.empty((0, 5), device="cuda")
    assert bitonic.sort(e).values.shape == (0, 5) and bitonic.topk(e, 2).values.shape == (0, 2)


def test_torch_in_place_and_pairs(torch):
    x = tdata(torch, "int64", (16, 5000), ties=True)
    want = torch.sort(x, descending=True).values
    y = x.clone()
    assert bitonic.sort_(y, descending=True) is y and torch.equal(y, want)
    z = x.clone()
    bitonic.sort_(z[:, ::2], dim=0)
    assert torch.equal(z[:, ::2], torch.sort(x[:, ::2], dim=0).values)
    assert torch.equal(z[:, 1::2], x[:, 1::2])
    vals = torch.arange(x.numel(), device="cuda", dtype=torch.float64).reshape(x.shape)
    for values in (vals, vals.to(torch.float32), vals.to(torch.int16)):
        k, v = bitonic.sort_pairs(x, values)
        tv, ti = torch.sort(x, stable=True)
        assert torch.equal(k, tv) and torch.equal(v, torch.gather(values, -1, ti))


def test_torch_description_says_what_its_capsule_says(torch):
    """A torch tensor goes to the native calls as five integers (_tensors._Torch.describe),
    not a capsule: they name the same memory, length, device and dtype as its DLPack capsule,
    a view's offset included, for every dtype bitonic sorts or writes."""
    from bitonic import _native, _tensors

    T = _tensors.lib("torch")
    names = TORCH_DTYPES + [n for n in ("uint32", "uint64") if hasattr(torch, n)]
    for name in names:
        dt = getattr(torch, name)
        base = torch.zeros(3, 1000, device="cuda", dtype=torch.int64).to(dt)
        for x in (base, base[1:], base[2, 7:], base[:, :0].contiguous()):
            assert x.is_contiguous()
            got = _native.dlpack_describe(T.describe(x, 0))
            want = _native.dlpack_describe(torch.utils.dlpack.to_dlpack(x))
            if x.numel() == 0:  # an empty tensor's address is any
                got, want = got[:4], want[:4]
            assert got == want, name
    # Other dtypes are described by their DLPack code and width: a key dtype bitonic does not
    # sort is named in the error, and 8-byte values of any kind move with their keys.
    for name in ("bool", "complex64", "int16"):
        x = torch.zeros(8, device="cuda", dtype=getattr(torch, name))
        got = _native.dlpack_describe(T.describe(x, 0))
        assert got == _native.dlpack_describe(torch.utils.dlpack.to_dlpack(x)), name
    with pytest.raises(TypeError, match="bool"):
        bitonic.sort(torch.zeros(8, device="cuda", dtype=torch.bool))
    keys = torch.tensor([3, 1, 2], device="cuda", dtype=torch.int32)
    values = torch.tensor([3 + 1j, 1 + 2j, 2 + 3j], device="cuda", dtype=torch.complex64)
    k, v = bitonic.sort_pairs(keys, values)
    assert k.tolist() == [1, 2, 3] and v.tolist() == [1 + 2j, 2 + 3j, 3 + 1j]


def test_torch_streams(torch):
    """The sort runs on the caller's (non-default) stream behind a long kernel queued there
    before it, the call returns before that kernel ends (nothing waits on the host), and work
    queued after it on the stream sees sorted results, read after one stream sync."""
    n = 1 << 22
    bitonic.sort(torch.rand(n, device="cuda"))  # kernels compiled and loaded
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    src = torch.rand(n, device="cuda")
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        x = torch.empty_like(src)
        torch.cuda._sleep(int(2e9))  # about a second of GPU time on the stream
        x.copy_(src)  # the keys exist only after the sleep
        t0 = time.perf_counter()
        v, i = bitonic.sort(x)
        k = bitonic.topk(x, 100)
        queued = time.perf_counter() - t0
        busy = not s.query()
        after = v * 2  # later work on the caller's stream
    assert busy, "the stream finished early: the call waited for the GPU"
    assert queued < 0.3, f"the call took {queued:.3f} s: it waited for the GPU"
    s.synchronize()
    tv, ti = torch.sort(src, stable=True)
    assert torch.equal(v, tv) and torch.equal(i, ti) and torch.equal(after, tv * 2)
    assert torch.equal(k.values, torch.topk(src, 100).values)


def test_torch_threads_each_on_its_stream(torch):
    xs = [tdata(torch, "float32", (4, 1 << 16), ties=True, seed=j) for j in range(4)]
    out = [None] * 4

    def work(j):
        with torch.cuda.stream(torch.cuda.Stream()):
            out[j] = bitonic.sort(xs[j])
            torch.cuda.current_stream().synchronize()

    in_threads(work, 4)
    for j in range(4):
        tv, ti = torch.sort(xs[j], stable=True)
        assert torch.equal(out[j].values, tv) and torch.equal(out[j].indices, ti)


@pytest.mark.parametrize("dtype", NP_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(1000,), (64, 1000), (3, 100003)])
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
def test_cupy_every_key_type_against_the_oracle(cupy, dtype, shape, descending):
    host = make(dtype, int(np.prod(shape)), "random").reshape(shape)
    x = cupy.asarray(host)
    v, i = bitonic.sort(x, descending=descending)
    assert isinstance(v, cupy.ndarray) and i.dtype == np.int64
    want = expected_argsort(host, descending, axis=-1)
    np.testing.assert_array_equal(cupy.asnumpy(i), want)
    np.testing.assert_array_equal(
        bits(cupy.asnumpy(v)), bits(np.take_along_axis(host, want, -1))
    )
    for k in (1, 50, 1000):
        tv, ti = bitonic.topk(x, k, largest=descending)
        np.testing.assert_array_equal(cupy.asnumpy(ti), want[..., :k])
        np.testing.assert_array_equal(
            bits(cupy.asnumpy(tv)), bits(np.take_along_axis(host, want[..., :k], -1))
        )


def test_cupy_streams_in_place_and_non_contiguous(cupy):
    host = make(np.float32, 8 * 4096, "few").reshape(8, 4096)
    want = np.take_along_axis(host, expected_argsort(host, axis=0), 0)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        x = cupy.asarray(host)
        y = x.T  # not contiguous: sorted along dim 1 of the transpose
        v = bitonic.sort(y, dim=1).values
        bitonic.sort_(x, dim=0)
        twice = v * 2
    s.synchronize()
    assert_same_keys(cupy.asnumpy(x).T, want.T)  # a key-only sort: -0.0 and +0.0 either way
    np.testing.assert_array_equal(cupy.asnumpy(twice), want.T * 2)
    k, vals = bitonic.sort_pairs(cupy.asarray(host), cupy.arange(host.size).reshape(host.shape))
    order = expected_argsort(host, axis=-1)
    np.testing.assert_array_equal(cupy.asnumpy(vals), np.take_along_axis(
        np.arange(host.size).reshape(host.shape), order, -1))


def test_torch_tensor_into_cupy_stream_mix(torch, cupy):
    """A torch tensor sorted while cupy's current stream differs: torch's stream counts."""
    x = tdata(torch, "int32", (4, 3000), ties=True)
    with cupy.cuda.Stream():
        v = bitonic.sort(x).values
    assert torch.equal(v, torch.sort(x).values)


def _every_op(x, values):
    """Each of bitonic's calls on ``x`` (and ``values`` for sort_pairs): their tensors, flat."""
    v, i = bitonic.sort(x)
    kv, ki = bitonic.topk(x, min(50, x.shape[-1]))
    pk, pv = bitonic.sort_pairs(x, values, descending=True)
    return [
        v,
        i,
        bitonic.argsort(x, descending=True),
        bitonic.sort_values(x, descending=True),
        kv,
        ki,
        pk,
        pv,
    ]


@pytest.mark.parametrize("shape", [(1, 128256), (64, 128256), (4096, 4096), (1, 1 << 24)])
def test_torch_cuda_graph_capture(torch, shape):
    """Every call captured into a CUDA graph on the capturing stream, then replayed on new
    keys copied into the captured input: each replay bit-identical to the same calls run
    uncaptured on those keys, and to torch's answers."""
    static = tdata(torch, "float32", shape, ties=True)
    values = torch.arange(static.numel(), device="cuda", dtype=torch.int64).reshape(shape)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up: the kernels compiled and loaded before capture
        _every_op(static, values)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = _every_op(static, values)
    for seed in (1, 2, 3):
        new = tdata(torch, "float32", shape, ties=seed % 2 == 1, seed=seed)
        static.copy_(new)
        graph.replay()
        torch.cuda.synchronize()
        for got, want in zip(captured, _every_op(new, values)):
            assert got.dtype == want.dtype and torch.equal(tbits(got), tbits(want))
        tv, ti = torch.sort(new, stable=True)
        assert torch.equal(captured[0], tv) and torch.equal(captured[1], ti)
        k = captured[4].shape[-1]
        assert torch.equal(captured[4], torch.topk(new, k).values)
        assert torch.equal(captured[5], torch.sort(new, descending=True, stable=True).indices[..., :k])


def tbits(t):
    """A tensor's bits, so that equal means bit for bit (a NaN equals its own bits)."""
    import torch

    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_torch_compile_fullgraph(torch, device):
    """Each call is a registered operator that torch.compile(fullgraph=True) traces (through
    its fake implementation) and then runs: the same answers as the call itself."""
    x = tdata(torch, "float32", (64, 1000), ties=True).to(device)
    values = torch.arange(x.numel(), device=device).reshape(x.shape)
    compiled = torch.compile(_every_op, fullgraph=True, backend="aot_eager")
    for got, want in zip(compiled(x, values), _every_op(x, values)):
        assert got.dtype == want.dtype and torch.equal(got, want)
    # The example of issue 50, through inductor (on the GPU), bf16 included.
    for dtype in ("float32", "bfloat16") if device == "cuda" else ():
        z = tdata(torch, dtype, (8, 4096), ties=False).to(device)
        f = torch.compile(lambda z: bitonic.topk(z, 8).values * 2, fullgraph=True)
        assert torch.equal(f(z), torch.topk(z, 8).values * 2)
    # dim other than the last, and numpy's axis.
    g = torch.compile(lambda z: bitonic.sort(z, dim=0).values + bitonic.argsort(z, axis=0), fullgraph=True,
                      backend="aot_eager")
    assert torch.equal(g(x), torch.sort(x, dim=0, stable=True).values + torch.sort(x, dim=0, stable=True).indices)


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_torch_autograd_as_torch(torch, device):
    """The gradient of values flows back through the indices, as torch.sort's and torch.topk's,
    eager and compiled; sort_values takes sort's."""
    x = tdata(torch, "float32", (16, 3000), ties=True).to(device)
    w = torch.randn(16, 3000, device=device)
    cases = [
        (lambda z: bitonic.sort(z, descending=True).values, lambda z: torch.sort(z, descending=True, stable=True).values),
        (lambda z: bitonic.sort_values(z, dim=0), lambda z: torch.sort(z, dim=0, stable=True).values),
        # Ties: torch.topk picks any of them; the first 100 of torch's stable sort are ours.
        (lambda z: bitonic.topk(z, 100).values, lambda z: torch.sort(z, descending=True, stable=True).values[..., :100]),
    ]
    for ours, theirs in cases:
        for f in (ours, torch.compile(ours, fullgraph=True, backend="aot_eager")):
            a = x.clone().requires_grad_()
            b = x.clone().requires_grad_()
            ya, yb = f(a), theirs(b)
            (ya * w[..., : ya.shape[-1]]).sum().backward()
            (yb * w[..., : yb.shape[-1]]).sum().backward()
            assert torch.equal(ya.detach(), yb.detach())
            # Ties: the same positions as torch's stable sort, so the same gradient.
            assert torch.equal(a.grad, b.grad)
    i = bitonic.argsort(x.clone().requires_grad_())
    assert not i.requires_grad and i.dtype == torch.int64


def test_forward_mode_tangents_are_dropped(torch):
    """A forward-mode dual tensor (a tangent without requires_grad) sorts as its primal, and the
    outputs carry no tangent: none could follow the keys through the GPU sort."""
    import torch.autograd.forward_ad as fwAD

    x = tdata(torch, "float32", (8, 1000), ties=False)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.randn_like(x))
        outputs = [
            bitonic.sort_values(dual),
            bitonic.sort(dual).values,
            bitonic.topk(dual, 10).values,
            bitonic.sort_pairs(torch.arange(1000, 0, -1, device="cuda").repeat(8, 1).int(), dual)[1],
        ]
        for y in outputs:
            assert fwAD.unpack_dual(y).tangent is None
    assert torch.equal(outputs[0], torch.sort(x).values)
    assert torch.equal(outputs[3], x.flip(-1))




def _packed_for(arch, packed):
    """Whether a pack of `packed` architectures holds CUBINs a device of `arch` runs: its own,
    or a lower minor of its major (sm_80's run on an sm_86)."""
    major, minor = arch[3:-1], int(arch[-1])
    return any(p[3:-1] == major and int(p[-1]) <= minor for p in packed if p[-1].isdigit())


def test_first_use_on_a_packed_architecture_compiles_nothing(torch, tmp_path):
    """A fresh process with an empty kernel cache: the first topk, sort, argsort and key-value
    sort of torch tensors, and a numpy sort on the GPU, load the package's kernels; the cache
    folder, where a compiled kernel would go, stays empty."""
    import subprocess
    import sys

    info = bitonic.info()
    arch, packed = info["device"]["arch"], info["kernel_pack_archs"]
    if not _packed_for(arch, packed):
        pytest.skip(f"the package carries no kernels for {arch} (it has {packed})")
    script = """
import numpy as np, torch, bitonic
x = torch.randn(64, 128256, device="cuda")
h = x.to(torch.bfloat16)
bitonic.topk(x, 50); bitonic.topk(h, 8); bitonic.topk(x[:1], 1024)
bitonic.sort(x); bitonic.argsort(h, descending=True); bitonic.sort_values(x[0])
bitonic.sort_pairs(x[0], torch.arange(x.shape[1], device="cuda"))
u = torch.randint(0, 2**31, (1 << 22,), device="cuda", dtype=torch.int64)
bitonic.sort(u)
bitonic.sort(np.random.default_rng(1).random(1 << 20), backend="cuda")
torch.cuda.synchronize()
"""
    env = dict(os.environ, BITONIC_CACHE_DIR=str(tmp_path))
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=300)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
