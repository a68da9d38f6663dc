"""bitonic.sample against an independent statement of the filtered distribution (``expected``
below, written with masks from docs/design/sample.md): kept sets of hand-made rows, the share
of a grid of uniform numbers each token gets (its probability, to a grid step), a chi-square
test of seeded draws, determinism, settings a row, and errors. Then torch: CPU tensors, the
CUDA path's torch operations run on CPU tensors against the CPU reference, torch.compile, and
on the GPU the CUDA path against the reference, 10^6 adversarial draws, and CUDA graphs.

The numpy tests run everywhere (CI too); torch's need torch, and its CUDA ones a GPU (skipped
with the reason otherwise, failed under BITONIC_REQUIRE_GPU=1)."""

import math

import numpy as np
import pytest

import bitonic
from bitonic import _sampling

INF = np.inf
SETTINGS = ("temperature", "min_p", "top_k", "top_p")


def expected(row, temperature=None, min_p=None, top_k=None, top_p=None):
    """The filtered distribution of one row in index order (float64), or the token of a
    greedy row or of one with nothing to draw (-1), as an int."""
    x = np.asarray(row, np.float32)
    t = np.float32(1 if temperature is None else temperature)
    with np.errstate(all="ignore"):
        s = x / t if t > 0 else x.copy()
    s[np.isnan(s)] = -INF
    top = s.max()
    if top == -INF:
        return -1
    if not t > 0:
        return int(np.argmax(s == top))
    with np.errstate(all="ignore"):
        w = (s == INF).astype(np.float64) if top == INF else np.exp(s - top).astype(np.float64)
    keep = s > -INF
    if min_p is not None and min_p > 0:
        keep &= w >= np.float32(min(min_p, 1))
    if top_k is not None and 0 < top_k < keep.sum():
        kth = np.sort(s[keep])[::-1][top_k - 1]
        keep &= s >= kth
    if top_p is not None and not top_p >= 1:
        order = sorted(np.flatnonzero(keep), key=lambda i: (-s[i], i))
        total = w[order].sum()
        running, last = 0.0, len(order) - 1
        for j, i in enumerate(order):
            running += w[i]
            if not top_p > 0 or running >= np.float64(np.float32(top_p)) * total:
                last = j
                break
        keep[order[last + 1 :]] = False
    p = np.where(keep, w, 0.0)
    return p / p.sum()


def grid(rows_of, row, n, **settings):
    """The tokens drawn for ``row`` at ``n`` uniform numbers spread over [0, 1)."""
    logits = np.tile(np.asarray(row, np.float32), (n, 1))
    u = ((np.arange(n) + 0.5) / n).astype(np.float32)
    return np.asarray(rows_of(logits, uniform=u, **settings))


def kept(row, **settings):
    return sorted(set(grid(bitonic.sample, row, 4096, **settings).tolist()))


def check_on_grid(sample, row, n=1 << 13, **settings):
    want = expected(row, **settings)
    got = grid(sample, row, n, **settings)
    if isinstance(want, int):
        assert (got == want).all(), settings
        return
    counts = np.bincount(got, minlength=len(row))
    outside = np.flatnonzero((want == 0) & (counts > 0))
    assert outside.size == 0, f"tokens {outside} drawn outside the set, {settings}"
    assert np.abs(counts - want * n).max() <= 2, (settings, counts, want * n)


def test_top_k_keeps_the_ties_of_the_kth():
    row = [0.0, 5.0, 1.0, 4.0, 5.0]
    assert kept(row, top_k=1) == [1, 4]
    assert kept(row, top_k=2) == [1, 4]
    assert kept(row, top_k=3) == [1, 3, 4]
    assert kept(row, top_k=99) == [0, 1, 2, 3, 4]
    assert kept([0.5, 2.0, -1.0], top_k=1) == [1]  # k = 1 is the argmax


def test_top_p_keeps_the_shortest_prefix_and_splits_ties_by_index():
    row = [2.0, 1.0, 1.0, 1.0, 0.0]
    a, b = float(np.exp(np.float32(-1))), float(np.exp(np.float32(-2)))
    total = 1 + 3 * a + b
    assert kept(row, top_p=(1 + 0.5 * a) / total) == [0, 1]
    assert kept(row, top_p=(1 + 1.5 * a) / total) == [0, 1, 2]
    assert kept(row, top_p=(1 + 2.5 * a) / total) == [0, 1, 2, 3]
    assert kept(row, top_p=0.01) == [0]
    assert kept(row, top_p=1.0) == [0, 1, 2, 3, 4]


def test_min_p_and_the_order_of_the_filters():
    row = [0.0, -1.0, -3.0, 0.0]
    assert kept(row, min_p=0.1) == [0, 1, 3]
    assert kept(row, min_p=0.5) == [0, 3]
    assert kept(row, min_p=1.0) == [0, 3]
    row = [1.0, 0.5, -5.0, 2.0, 2.0]
    assert kept(row, min_p=0.1, top_k=3) == [0, 3, 4]
    assert kept(row, min_p=0.1, top_k=3, top_p=0.4) == [3]
    assert kept(row, min_p=0.1, top_k=3, top_p=0.6) == [3, 4]


def test_special_rows():
    nan = np.float32(np.nan)
    neg_nan = -nan
    s = bitonic.sample
    assert s(np.array([[-INF, nan, neg_nan]], np.float32)).tolist() == [-1]
    assert s(np.array([[-INF, nan]], np.float32), temperature=0).tolist() == [-1]
    assert kept([nan, 1.0, neg_nan, 0.0]) == [1, 3]
    # -0.0 ties with +0.0: top-p's boundary among them falls by index.
    assert kept([-0.0, 0.0, -0.0, 0.0], top_p=0.5) == [0, 1]
    assert kept([0.0, -0.0, -1.0], top_k=1) == [0, 1]
    for settings in ({}, {"top_k": 1}, {"top_p": 0.01}, {"min_p": 1.0}, {"temperature": 0}):
        assert kept([-INF, 3.0, nan], **settings) == [1], settings
    assert np.bincount(grid(s, [1.0, INF, 2.0, INF], 1000)).tolist() == [0, 500, 0, 500]
    assert s(np.array([[1.0, 3.0, 3.0]], np.float32), temperature=0.0, uniform=np.array([0.99])).tolist() == [1]
    two = np.zeros((4, 2), np.float32)
    assert s(two, uniform=np.array([-1, nan, 1, 7], np.float32)).tolist() == [0, 0, 1, 1]


def _random_row(rng, vocab, spread):
    x = (rng.random(vocab) * spread).astype(np.float32)
    ties = rng.random(vocab) < 0.2
    x[ties] = np.round(x[ties])
    return x


def _some_settings():
    out = []
    for temperature in (None, 0.5, 1.3, 0):
        for min_p in (None, 0.05, 0.3):
            for top_k, top_p in ((None, None), (1, None), (50, None), (None, 0.9), (5, 0.5), (50, 1.0)):
                out.append(dict(temperature=temperature, min_p=min_p, top_k=top_k, top_p=top_p))
    return out


@pytest.mark.parametrize("vocab", [1, 2, 32, 1000])
def test_the_draw_follows_the_distribution_on_a_grid(vocab):
    row = _random_row(np.random.default_rng(vocab), vocab, 8.0)
    for settings in _some_settings():
        check_on_grid(bitonic.sample, row, **settings)


@pytest.mark.parametrize("vocab", [32, 1000])
def test_random_draws_pass_a_chi_square_test(vocab):
    scipy_stats = pytest.importorskip("scipy.stats")  # CI installs scipy (.ci/run)
    rng = np.random.default_rng(2026 + vocab)
    row = _random_row(rng, vocab, 5.0)
    draws = 200_000
    for settings in (
        {},
        dict(temperature=0.7, top_k=20, top_p=0.9),
        dict(top_p=0.8),
        dict(min_p=0.2),
        dict(temperature=2.0, min_p=0.05, top_k=500),
    ):
        p = expected(row, **settings)
        tokens = bitonic.sample(np.tile(row, (draws, 1)), generator=rng, **settings)
        counts = np.bincount(tokens, minlength=vocab)
        assert counts[p == 0].sum() == 0
        cells = p > 0
        result = scipy_stats.chisquare(counts[cells], p[cells] * draws)
        assert result.pvalue > 1e-3, (vocab, settings, result)


def test_the_same_numbers_give_the_same_tokens():
    logits = np.random.default_rng(1).standard_normal((64, 500)).astype(np.float32)
    a = bitonic.sample(logits, top_p=0.9, generator=np.random.default_rng(7))
    b = bitonic.sample(logits, top_p=0.9, generator=np.random.default_rng(7))
    assert (a == b).all() and a.dtype == np.int64 and a.shape == (64,)
    u = np.random.default_rng(7).random(64, dtype=np.float32)
    assert (bitonic.sample(logits, top_p=0.9, uniform=u) == a).all()


def test_settings_a_row_equal_the_same_settings_alone():
    rng = np.random.default_rng(3)
    settings = _some_settings()
    logits = np.stack([_random_row(rng, 100, 6.0) for _ in settings])
    u = rng.random(len(settings), dtype=np.float32)
    off = {"temperature": 1.0, "min_p": 0.0, "top_k": 0, "top_p": 1.0}
    each = {
        name: np.array([s[name] if s[name] is not None else off[name] for s in settings])
        for name in SETTINGS
    }
    together = bitonic.sample(logits, uniform=u, **each)
    for r, s in enumerate(settings):
        alone = bitonic.sample(logits[r : r + 1], uniform=u[r : r + 1], **s)
        assert together[r] == alone[0], (r, s)
    # Values a row are not checked: out of range, each means what the docstring says.
    row = np.tile(np.array([3.0, 2.0, 1.0, 0.0], np.float32), (3, 1))
    u = np.full(3, 0.999, np.float32)
    assert bitonic.sample(row, uniform=u, top_p=np.array([0.0, -1.0, 5.0])).tolist() == [0, 0, 3]
    assert bitonic.sample(row, uniform=u, temperature=np.array([-1.0, np.nan, 1.0])).tolist()[:2] == [0, 0]
    assert bitonic.sample(row, uniform=u, top_k=np.array([-3, 0, 1])).tolist() == [3, 3, 0]


def test_half_logits_sample_as_their_float32_values():
    rng = np.random.default_rng(5)
    logits = (rng.random((40, 300)) * 10).astype(np.float16)
    u = rng.random(40, dtype=np.float32)
    settings = dict(temperature=0.8, top_k=40, top_p=0.9)
    want = bitonic.sample(logits.astype(np.float32), uniform=u, **settings)
    assert (bitonic.sample(logits, uniform=u, **settings) == want).all()


def test_errors_name_what_is_wrong():
    x = np.zeros((2, 8), np.float32)
    for settings, what in (
        (dict(temperature=-1.0), "temperature"),
        (dict(temperature=math.inf), "temperature"),
        (dict(min_p=1.5), "min_p"),
        (dict(top_k=0), "top_k"),
        (dict(top_p=0.0), "top_p"),
        (dict(top_p=np.array([0.5, 0.5, 0.5])), "top_p"),
    ):
        with pytest.raises(ValueError, match=what):
            bitonic.sample(x, **settings)
    with pytest.raises(TypeError, match="top_k"):
        bitonic.sample(x, top_k=2.5)
    with pytest.raises(ValueError, match="batch, vocab"):
        bitonic.sample(np.zeros(8, np.float32))
    with pytest.raises(ValueError, match="vocabulary of 0"):
        bitonic.sample(np.zeros((2, 0), np.float32))
    with pytest.raises(TypeError, match="float32, float16 or bfloat16"):
        bitonic.sample(np.zeros((2, 8), np.int32))
    with pytest.raises(ValueError, match="uniform"):
        bitonic.sample(x, uniform=np.zeros(3, np.float32))
    assert bitonic.sample(np.zeros((0, 8), np.float32)).shape == (0,)


# --- torch ---------------------------------------------------------------------------------


@pytest.fixture
def torch_any():
    """torch, for the tests that need no GPU (skipped with the reason where it is missing)."""
    try:
        import torch
    except ImportError as e:
        pytest.skip(f"torch does not import ({e})")
    return torch


def _torch_path_on(torch, device):
    """The CUDA path's torch operations, run on ``device`` (any), as bitonic.sample's
    signature."""

    def sample(logits, uniform, **settings):
        t = torch.as_tensor(logits, device=device)
        u = torch.as_tensor(uniform, device=device)
        full = {name: settings.get(name) for name in SETTINGS}
        for name, v in full.items():
            if isinstance(v, np.ndarray):
                full[name] = torch.as_tensor(v, device=device)
        return _sampling.sample_torch(t, u, full).cpu().numpy()

    return sample


@pytest.mark.parametrize("vocab", [1, 2, 32, 1000])
def test_the_torch_path_draws_the_distribution(torch_any, vocab):
    """The CUDA path's operations on CPU tensors: every filter's boundary, including ties with
    the k-th past the top-k's k, on a grid."""
    row = _random_row(np.random.default_rng(vocab), vocab, 8.0)
    for settings in _some_settings():
        check_on_grid(_torch_path_on(torch_any, "cpu"), row, **settings)


def test_torch_cpu_tensors_equal_numpy(torch_any):
    torch = torch_any
    rng = np.random.default_rng(9)
    logits = rng.standard_normal((16, 300)).astype(np.float32)
    u = rng.random(16, dtype=np.float32)
    want = bitonic.sample(logits, uniform=u, top_k=20, top_p=0.8)
    got = bitonic.sample(torch.from_numpy(logits), uniform=torch.from_numpy(u), top_k=20, top_p=0.8)
    assert got.dtype == torch.int64 and (got.numpy() == want).all()
    g = torch.Generator().manual_seed(4)
    a = bitonic.sample(torch.from_numpy(logits), min_p=0.1, generator=g)
    g.manual_seed(4)
    assert torch.equal(a, bitonic.sample(torch.from_numpy(logits), min_p=0.1, generator=g))
    compiled = torch.compile(
        lambda z, u: bitonic.sample(z, uniform=u, temperature=0.7, top_p=0.9), fullgraph=True, backend="aot_eager"
    )
    t, tu = torch.from_numpy(logits), torch.from_numpy(u)
    assert torch.equal(compiled(t, tu), bitonic.sample(t, uniform=tu, temperature=0.7, top_p=0.9))


def test_the_type_check_reads_sys_modules_once(torch_any, monkeypatch):
    """torch.compile traces bitonic's check of an array's library in every call, and dynamo's
    walk of ``sys.modules`` can race with the imports of a first inductor compile: once a
    library's array class is known, the check reads ``sys`` no more."""
    from bitonic import _tensors

    x = torch_any.zeros(2, 3)
    assert _tensors.library(x) == "torch"

    class NoSys:
        def __getattr__(self, name):
            raise AssertionError(f"sys.{name} read")

    monkeypatch.setattr(_tensors, "sys", NoSys())
    assert _tensors.library(x) == "torch"
    assert _tensors.library(np.zeros(3)) is None
    assert _tensors.library(torch_any.Size([2])) is None  # module "torch", not a tensor


def test_torch_settings_tensors_must_match(torch_any):
    torch = torch_any
    x = torch.zeros(2, 8)
    with pytest.raises(ValueError, match="top_k has shape"):
        bitonic.sample(x, top_k=torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="batch, vocab"):
        bitonic.sample(torch.zeros(8))


@pytest.fixture
def torch_cuda():
    from test_gpu import need

    return need("torch")


VOCABS = [128256, 151936]


def _mixed_rows(torch, rows, vocab, dtype, seed):
    """Logits like a model's: a few large, most small, some ties and -inf."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(rows, vocab, generator=g, device="cuda") * 2
    x[:, :: vocab // 50] += 8  # a head of likely tokens
    x[:, 7::97] = x[:, 7:8]  # ties
    x[:, 3::1009] = -INF
    return x.to(getattr(torch, dtype))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("rows", [1, 8, 64])
def test_cuda_equals_the_cpu_reference(torch_cuda, dtype, rows):
    """The same tokens as the CPU reference for the same numbers, but where CUDA's exp (or the
    order of a running sum) moves a boundary by its last bit: at most 1 row in 100."""
    torch = torch_cuda
    differ, total = 0, 0
    for vocab in VOCABS:
        x = _mixed_rows(torch, rows, vocab, dtype, seed=rows)
        u = torch.rand(rows, device="cuda")
        cpu_x = x.float().cpu().numpy()
        for settings in (
            dict(top_k=50, top_p=0.9),
            dict(top_p=0.9),
            dict(min_p=0.1),
            dict(temperature=0.6, top_k=1000),
            dict(temperature=0.0),
            dict(top_k=torch.randint(0, 100, (rows,), device="cuda"), top_p=torch.rand(rows, device="cuda")),
        ):
            got = bitonic.sample(x, uniform=u, **settings).cpu().numpy()
            host = {k: v.cpu().numpy() if hasattr(v, "cpu") else v for k, v in settings.items()}
            want = bitonic.sample(cpu_x, uniform=u.cpu().numpy(), **host)
            assert (got >= 0).all() and got.shape == want.shape
            differ += int((got != want).sum())
            total += rows
    assert differ <= max(1, total // 100), (dtype, rows, differ, total)


def test_cuda_kernel_and_torch_path_agree(torch_cuda):
    """The torch operations that rows too long for the kernel take (sample_torch), on CUDA
    tensors, give the kernel's tokens, but where a boundary moves by its last bit."""
    torch = torch_cuda
    x = _mixed_rows(torch, 32, 5003, "float32", seed=5)
    u = torch.rand(32, device="cuda")
    differ = 0
    for settings in (dict(top_k=50, top_p=0.9), dict(top_p=0.9), dict(min_p=0.1), dict()):
        full = {name: settings.get(name) for name in SETTINGS}
        a = _sampling.sample_torch(x, u, full)
        b = bitonic.sample(x, uniform=u, **settings)
        differ += int((a != b).sum())
    assert differ <= 1, differ


def test_cuda_never_draws_outside_the_set(torch_cuda):
    """10^6 draws over adversarial rows: ties at the k-th value and at the p boundary, -inf,
    NaN, a single finite logit, p = 1, k = vocab, k = 1."""
    torch = torch_cuda
    vocab = 1000
    cases = []
    base = torch.zeros(vocab, device="cuda")
    ties = base.clone()
    ties[100:110] = 5.0  # ten tied at the top
    cases += [(ties, dict(top_k=3)), (ties, dict(top_p=0.5)), (ties, dict(top_k=1))]
    lone = torch.full((vocab,), -INF, device="cuda")
    lone[321] = 1.0
    cases += [(lone, dict(top_p=0.9)), (lone, dict(min_p=0.5)), (lone, {})]
    nans = torch.randn(vocab, device="cuda")
    nans[::3] = float("nan")
    cases += [(nans, dict(top_p=1.0)), (nans, dict(top_k=vocab)), (nans, dict(min_p=0.2, top_k=5))]
    for row, settings in cases:
        want = expected(row.cpu().numpy(), **settings)
        allowed = torch.from_numpy(want > 0).cuda()
        x = row.expand(10_000, vocab).contiguous()
        for _ in range(11):
            tokens = bitonic.sample(x, **settings)
            assert (tokens >= 0).all() and allowed[tokens].all(), settings


def test_cuda_graph_replays(torch_cuda):
    torch = torch_cuda
    x = _mixed_rows(torch, 64, 128256, "float32", seed=0)
    u = torch.rand(64, device="cuda")
    top_p = torch.full((64,), 0.9, device="cuda")
    eager = bitonic.sample(x, uniform=u, top_k=50, top_p=top_p)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        bitonic.sample(x, uniform=u, top_k=50, top_p=top_p)
        bitonic.sample(x, top_p=0.9)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        given = bitonic.sample(x, uniform=u, top_k=50, top_p=top_p)
        drawn = bitonic.sample(x, top_p=0.9)
    seen = set()
    for _ in range(3):
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(given, eager)
        seen.add(tuple(drawn.tolist()))
    assert len(seen) == 3  # the generator's numbers advance on each replay
    f = torch.compile(lambda z, u: bitonic.sample(z, uniform=u, top_k=50, top_p=0.9), fullgraph=True)
    assert torch.equal(f(x, u), bitonic.sample(x, uniform=u, top_k=50, top_p=0.9))
