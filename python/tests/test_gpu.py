"""torch and cupy CUDA arrays: results equal to torch's (stable sort, top-k), every key type
through cupy against the numpy oracle of test_numpy.py, dims, non-contiguous and CPU inputs,
in-place sorts, and streams: the sort is queued on the caller's current stream behind the work
already there, with nothing waiting on the host.

Without torch or cupy on a GPU these tests are skipped, with the reason; under
BITONIC_REQUIRE_GPU=1 (the GPU host) they fail instead."""

import os
import time

import numpy as np
import pytest

import bitonic
from test_numpy import bits, expected_argsort, in_threads, make

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
    shows), else distinct with high probability. No NaN or -0.0 (torch orders them its way)."""
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


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(1000,), (64, 1000), (3, 100003)])
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
def test_torch_half_floats_in_total_order(torch, dtype, shape, descending):
    """NaNs of both signs, infinities, zeros and subnormals of 16-bit floats, against the
    oracle of test_numpy.py on their words (torch orders NaN and -0.0 its own way)."""
    host = make(np.float16, int(np.prod(shape)), "random", seed=len(shape))
    words = host.view(np.uint16)
    if dtype == "bfloat16":  # the float32 words' top halves: bf16 of the same specials
        words = (host.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    x = torch.from_numpy(words.view(np.int16).reshape(shape)).cuda().view(getattr(torch, dtype))
    # The total order of 16-bit floats is their words' sign-magnitude order, whatever the format.
    want = expected_argsort(words.view(np.float16).reshape(shape), descending, axis=-1)
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
    np.testing.assert_array_equal(bits(cupy.asnumpy(x)), bits(want))
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
