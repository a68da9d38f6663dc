"""The numpy path, on whatever backend "auto" picks (the CPU without a GPU) and on the CPU
network by name. The oracle is numpy's stable argsort of each key's rank in numpy's and
torch's float order (every NaN, either sign, after +inf; -0.0 equal to +0.0): the rank of its
canonical form, whose words sort as IEEE total order does. numpy's own stable argsort agrees
(test_agrees_with_numpy_on_nans_and_zeros)."""

import os
import threading

import numpy as np
import pytest

import bitonic

try:  # numpy's bfloat16 is ml_dtypes' (on the GPU host); its tests run where it is
    import ml_dtypes
except ImportError:
    ml_dtypes = None

KEY_DTYPES = [np.uint32, np.int32, np.uint64, np.int64, np.float32, np.float64, np.float16]
KEY_DTYPES += [ml_dtypes.bfloat16] if ml_dtypes is not None else []
SIZES = [0, 1, 2, 1000, 100003]
PATTERNS = ["random", "sorted", "reversed", "equal", "few"]
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def is_float(dtype):
    return np.dtype(dtype).kind == "f" or np.dtype(dtype).name == "bfloat16"


def finfo(dtype):
    return ml_dtypes.finfo(dtype) if np.dtype(dtype).name == "bfloat16" else np.finfo(dtype)


def bits(a):
    """The words of ``a``, to compare floats exactly (NaN signs, -0.0)."""
    a = np.asarray(a)
    return a.view(UINT[a.dtype.itemsize])


def canonical(a):
    """``a`` with -0.0 as +0.0 and every NaN as numpy's NaN: one form a float value."""
    a = np.array(a, copy=True)
    if is_float(a.dtype):
        a[a == 0] = 0
        a[np.isnan(a)] = np.nan
    return a


def rank(a):
    """Unsigned words whose numeric order is ``a``'s order: of canonical keys, in IEEE total
    order, in which numpy's NaN is positive and so after +inf."""
    a = np.ascontiguousarray(canonical(a))
    u = bits(a)
    top = UINT[a.dtype.itemsize](1) << UINT[a.dtype.itemsize](8 * a.dtype.itemsize - 1)
    if is_float(a.dtype):
        return np.where(u & top != 0, ~u, u | top)
    if a.dtype.kind == "i":
        return u ^ top
    return u


def expected_argsort(x, descending=False, axis=-1):
    r = rank(x)
    return np.argsort(~r if descending else r, axis=axis, kind="stable")


def assert_same_keys(got, want):
    """``got`` holds ``want``'s keys in ``want``'s order, values equal (a key-only sort may
    place -0.0 and +0.0, or NaNs, either way among themselves), and bit for bit the same
    keys along each row (nothing canonicalised)."""
    np.testing.assert_array_equal(bits(canonical(got)), bits(canonical(want)))
    np.testing.assert_array_equal(np.sort(bits(got), -1), np.sort(bits(want), -1))


def in_threads(work, n):
    """Runs ``work(j)`` for j in 0..n, each on a thread of its own, and waits for them all."""
    threads = [threading.Thread(target=work, args=(j,)) for j in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def specials(dtype):
    """Every special float of ``dtype``: NaNs of both signs, infinities, zeros, subnormals."""
    f = finfo(dtype)
    u = UINT[np.dtype(dtype).itemsize]
    nan = np.array([np.nan], dtype=dtype)
    neg_nan = (nan.view(u) | (u(1) << u(8 * np.dtype(dtype).itemsize - 1))).view(dtype)
    vals = [np.inf, -np.inf, 0.0, -0.0, f.tiny / 4, -f.tiny / 4, f.max, -f.max, 1.0, -1.0]
    return np.concatenate([nan, neg_nan, np.array(vals, dtype=dtype)])


def make(dtype, n, pattern, seed=0):
    rng = np.random.default_rng(seed + n)
    dtype = np.dtype(dtype)
    if is_float(dtype):
        x = rng.standard_normal(n).astype(dtype) * dtype.type(1000)
        if n >= 24:
            s = specials(dtype)
            x[rng.integers(0, n, 2 * len(s))] = np.tile(s, 2)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    if pattern == "sorted":
        x = x[expected_argsort(x)]
    elif pattern == "reversed":
        x = x[expected_argsort(x, descending=True)]
    elif pattern == "equal":
        x = np.full(n, x[0] if n else 0, dtype=dtype)
    elif pattern == "few":
        x = x[:4][rng.integers(0, 4, n)] if n >= 4 else x
    return np.ascontiguousarray(x)


@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
def test_sort_argsort_values_1d(dtype, n, pattern, descending):
    x = make(dtype, n, pattern)
    before = x.copy()
    want = expected_argsort(x, descending)

    values, indices = bitonic.sort(x, descending=descending)
    assert values.dtype == x.dtype and values.shape == x.shape
    assert indices.dtype == np.int64 and indices.shape == x.shape
    np.testing.assert_array_equal(indices, want)
    np.testing.assert_array_equal(bits(values), bits(x[want]))

    np.testing.assert_array_equal(bitonic.argsort(x, descending=descending), want)
    only = bitonic.sort_values(x, descending=descending)
    assert_same_keys(only, x[want])
    np.testing.assert_array_equal(bits(x), bits(before))  # the input is left as it was


@pytest.mark.parametrize("backend", ["cpu", "cpu-network", "cpu-network-serial"])
@pytest.mark.parametrize("dtype", [np.int32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1000, 4099])
def test_named_cpu_backends(backend, dtype, n):
    x = make(dtype, n, "few") if n == 4099 else make(dtype, n, "random")
    for descending in (False, True):
        want = expected_argsort(x, descending)
        v, i = bitonic.sort(x, descending=descending, backend=backend)
        np.testing.assert_array_equal(i, want)
        np.testing.assert_array_equal(bits(v), bits(x[want]))
        only = bitonic.sort_values(x, descending=descending, backend=backend)
        assert_same_keys(only, x[want])


@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_agrees_with_numpy_on_nans_and_zeros(dtype, pattern):
    if np.dtype(dtype).name == "bfloat16":
        pytest.skip("numpy's own sort of ml_dtypes.bfloat16 is not the reference here")
    x = make(dtype, 5000, pattern)
    if is_float(dtype):  # many ties of -0.0 and +0.0, NaNs of both signs, -NaN made by arithmetic
        x[::7] = -0.0
        x[3::7] = 0.0
        with np.errstate(invalid="ignore"):
            x[5::11] = np.array(-np.inf, dtype) * np.array(0, dtype)  # -nan on x86
    want = np.argsort(x, kind="stable")
    np.testing.assert_array_equal(bitonic.argsort(x), want)
    np.testing.assert_array_equal(bitonic.argsort(x, axis=0), want)
    v, i = bitonic.sort(x)
    np.testing.assert_array_equal(i, want)
    np.testing.assert_array_equal(bits(v), bits(x[want]))  # the input's own bits
    # Equal to numpy's sort by value (whose vectorised sort gives every NaN one form), and
    # bit for bit the input's keys.
    np.testing.assert_array_equal(bitonic.sort_values(x), np.sort(x))
    assert_same_keys(bitonic.sort_values(x), x[want])


def test_float_order_by_hand():
    s = specials(np.float32)  # nan, -nan, inf, -inf, 0.0, -0.0, ...
    x = np.array([s[0], 1.0, s[5], s[2], s[4], s[3], -2.5, s[1]], dtype=np.float32)
    v, i = bitonic.sort(x)
    np.testing.assert_array_equal(i, [5, 6, 2, 4, 1, 3, 0, 7])
    # NaNs last in input order, each with its own sign; -0.0 before +0.0 as they came.
    assert np.isnan(v[6]) and not np.signbit(v[6]) and np.isnan(v[7]) and np.signbit(v[7])
    assert v[2] == 0 and np.signbit(v[2]) and not np.signbit(v[3])
    np.testing.assert_array_equal(bitonic.argsort(x, descending=True), [0, 7, 3, 1, 2, 4, 6, 5])
    v, i = bitonic.topk(x, 3)
    np.testing.assert_array_equal(i, [0, 7, 3])
    assert np.signbit(v[1]) and np.isnan(v[1])  # the -NaN itself, not a canonical NaN


def test_stable_in_both_orders():
    x = np.array([2, 1, 2, 1, 2], dtype=np.int64)
    np.testing.assert_array_equal(bitonic.argsort(x), [1, 3, 0, 2, 4])
    np.testing.assert_array_equal(bitonic.argsort(x, descending=True), [0, 2, 4, 1, 3])
    eq = np.zeros(1000, dtype=np.float32)
    for d in (False, True):
        np.testing.assert_array_equal(bitonic.sort(eq, descending=d).indices, np.arange(1000))


@pytest.mark.parametrize("shape", [(3, 1000), (100, 7), (1, 0), (0, 5), (5, 1), (2, 100003)])
@pytest.mark.parametrize("dtype", [np.uint64, np.float32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
def test_rows_2d(shape, dtype, descending):
    x = make(dtype, int(np.prod(shape)), "random").reshape(shape)
    want = expected_argsort(x, descending, axis=-1)
    v, i = bitonic.sort(x, descending=descending)
    assert v.shape == shape and i.shape == shape
    np.testing.assert_array_equal(i, want)
    np.testing.assert_array_equal(bits(v), bits(np.take_along_axis(x, want, -1)))
    only = bitonic.sort_values(x, dim=1, descending=descending)
    assert_same_keys(only, np.take_along_axis(x, want, -1))


@pytest.mark.parametrize("dim", [0, 1, -2, -3])
def test_other_dims_3d(dim):
    x = make(np.int32, 4 * 5 * 6, "few").reshape(4, 5, 6)
    want = expected_argsort(x, axis=dim)
    v, i = bitonic.sort(x, dim=dim)
    np.testing.assert_array_equal(i, want)
    np.testing.assert_array_equal(v, np.take_along_axis(x, want, dim))
    assert v.flags.c_contiguous and i.flags.c_contiguous


def test_non_contiguous_and_foreign_inputs():
    base = make(np.float64, 2 * 3000, "random").reshape(2, 3000)
    strided = base[:, ::3]
    fortran = np.asfortranarray(base)
    big_endian = base.astype(">f8")
    for x in (strided, fortran, big_endian):
        before = x.copy()
        want = expected_argsort(np.ascontiguousarray(x, dtype=np.float64))
        np.testing.assert_array_equal(bitonic.argsort(x), want)
        assert bitonic.sort_values(x).dtype == np.float64
        np.testing.assert_array_equal(x, before)
    np.testing.assert_array_equal(bitonic.sort([3, 1, 2]).values, [1, 2, 3])


@pytest.mark.parametrize(
    "values",
    [
        np.arange(1000, dtype=np.int64),
        np.linspace(0, 1, 1000, dtype=np.float32),
        np.arange(1000, dtype=np.uint8),
        np.arange(1000) % 3 == 0,
        np.arange(1000, dtype=np.int16),
        np.arange(1000) * (1 + 2j),
        np.array([f"v{i}" for i in range(1000)]),  # 20-byte strings: the permutation path
    ],
    ids=lambda v: v.dtype.str,
)
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
def test_sort_pairs(values, descending):
    keys = make(np.int32, 1000, "few")
    kb, vb = keys.copy(), values.copy()
    want = expected_argsort(keys, descending)
    k, v = bitonic.sort_pairs(keys, values, descending=descending)
    np.testing.assert_array_equal(k, keys[want])
    np.testing.assert_array_equal(v, values[want])
    assert v.dtype == values.dtype
    np.testing.assert_array_equal(keys, kb)
    np.testing.assert_array_equal(values, vb)


@pytest.mark.parametrize("shape", [(3, 1000), (100, 7), (0, 5), (4, 0), (2, 3, 5)])
@pytest.mark.parametrize("vdtype", [np.int64, np.float32, np.uint8, "U3"], ids=str)
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
def test_sort_pairs_rows(shape, vdtype, descending):
    n = int(np.prod(shape))
    keys = make(np.float64, n, "few").reshape(shape)
    values = np.arange(n).astype(vdtype).reshape(shape)
    want = expected_argsort(keys, descending, axis=-1)
    k, v = bitonic.sort_pairs(keys, values, descending=descending)
    assert k.shape == shape and v.shape == shape and v.dtype == values.dtype
    np.testing.assert_array_equal(bits(k), bits(np.take_along_axis(keys, want, -1)))
    np.testing.assert_array_equal(v, np.take_along_axis(values, want, -1))


def test_dir_shows_the_api():
    public = [n for n in dir(bitonic) if not n.startswith("_")]
    assert sorted(public) == sorted(bitonic.__all__)


def test_sort_pairs_empty_and_strided():
    k, v = bitonic.sort_pairs(np.array([], np.float32), np.array([], np.int64))
    assert k.shape == (0,) and v.shape == (0,)
    keys = np.arange(20, dtype=np.uint32)[::-2]
    vals = np.arange(30, dtype=np.int64)[::3]
    k, v = bitonic.sort_pairs(keys, vals)
    np.testing.assert_array_equal(k, keys[::-1])
    np.testing.assert_array_equal(v, vals[::-1])


def test_errors():
    x = np.arange(10, dtype=np.int32)
    with pytest.raises(TypeError, match="int16"):
        bitonic.sort(x.astype(np.int16))
    with pytest.raises(TypeError, match="bool"):
        bitonic.argsort(x > 3)
    with pytest.raises(TypeError, match="object"):
        bitonic.sort(x.astype(object))
    with pytest.raises(ValueError, match="0-dimensional"):
        bitonic.sort(np.int32(3))
    with pytest.raises(ValueError, match="out of range"):
        bitonic.sort(x, dim=1)
    with pytest.raises(TypeError, match="dim"):
        bitonic.sort(x, dim=None)
    with pytest.raises(ValueError, match="cpu-network"):
        bitonic.sort(x, backend="gpu")
    with pytest.raises(ValueError, match=r"shape \(10,\) but values of shape \(9,\)"):
        bitonic.sort_pairs(x, x[:9])
    with pytest.raises(ValueError, match="shape"):
        bitonic.sort_pairs(x.reshape(2, 5), x)
    with pytest.raises(TypeError, match="dim or axis"):
        bitonic.sort(x, dim=0, axis=0)
    with pytest.raises(TypeError, match="object"):
        bitonic.sort_pairs(x, x.astype(object))
    assert issubclass(bitonic.BitonicError, RuntimeError)


def test_cuda_backend_without_gpu_is_a_bitonic_error():
    if bitonic.info()["cuda"]:
        pytest.skip("a GPU works here")
    with pytest.raises(bitonic.BitonicError, match="no GPU can be used"):
        bitonic.sort(np.arange(10, dtype=np.float32), backend="cuda")


def test_info():
    i = bitonic.info()
    assert set(i) == {"version", "cuda", "reason", "device", "nvrtc_version", "kernel_pack_archs"}
    packed = i["kernel_pack_archs"]
    assert packed == sorted(packed) and all(a.startswith("sm_") for a in packed)
    # A wheel built where NVRTC loads carries the default architectures (python/build.rs); CI
    # builds it so, and says so.
    if os.environ.get("BITONIC_EXPECT_KERNEL_PACK"):
        assert packed == os.environ["BITONIC_EXPECT_KERNEL_PACK"].split(",")
    if i["cuda"]:
        assert i["reason"] is None and i["device"]["arch"].startswith("sm_")
    else:
        assert isinstance(i["reason"], str) and i["reason"] and i["device"] is None


def test_threads():
    xs = [make(np.float32, 200003, "random", seed=s) for s in range(4)]
    out = [None] * 4

    def work(j):
        out[j] = bitonic.argsort(xs[j], descending=bool(j % 2))

    in_threads(work, 4)
    for j in range(4):
        np.testing.assert_array_equal(out[j], expected_argsort(xs[j], bool(j % 2)))


@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(1000,), (3, 1000), (64, 257), (2, 100003)])
@pytest.mark.parametrize("k", [1, 8, 50, 257])
@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
def test_topk_is_the_first_k_of_a_stable_sort(dtype, shape, k, largest):
    x = make(dtype, int(np.prod(shape)), "few" if k == 8 else "random").reshape(shape)
    want = expected_argsort(x, largest, axis=-1)[..., :k]
    v, i = bitonic.topk(x, k, largest=largest)
    assert v.shape == shape[:-1] + (k,) and i.dtype == np.int64
    np.testing.assert_array_equal(i, want)
    np.testing.assert_array_equal(bits(v), bits(np.take_along_axis(x, want, -1)))


def test_topk_dims_edges_and_errors():
    x = make(np.int64, 4 * 5 * 6, "few").reshape(4, 5, 6)
    for dim in (0, 1, -1):
        want = expected_argsort(x, True, axis=dim).take(range(3), axis=dim)
        v, i = bitonic.topk(x, 3, dim=dim)
        np.testing.assert_array_equal(i, want)
        np.testing.assert_array_equal(v, np.take_along_axis(x, want, dim))
    v, i = bitonic.topk(x, 0)
    assert v.shape == (4, 5, 0) and i.shape == (4, 5, 0) and i.dtype == np.int64
    v, i = bitonic.topk(x, 2, axis=1, sorted=False)
    np.testing.assert_array_equal(i, expected_argsort(x, True, axis=1)[:, :2])
    v, i = bitonic.topk(np.empty((0, 7), np.float32), 2)
    assert v.shape == (0, 2)
    with pytest.raises(ValueError, match="out of range"):
        bitonic.topk(x, 7)
    with pytest.raises(TypeError, match="k must be an int"):
        bitonic.topk(x, 2.0)


def test_sort_in_place():
    x = make(np.float32, 3 * 1001, "random").reshape(3, 1001)
    want = np.take_along_axis(x, expected_argsort(x, True, axis=0), 0)
    y = x.copy()
    assert bitonic.sort_(y, dim=0, descending=True) is y
    np.testing.assert_array_equal(bits(y), bits(want))
    with pytest.raises(TypeError, match="in place"):
        bitonic.sort_([3, 1, 2])
