"""The same lambda on handgrad and PyTorch, from the same float64 inputs: the forward, the first-
order gradients (backward and autograd.grad) and the second order must agree to float64 rounding.
Runs where torch imports (ctest's python_torch_compare uses bench/.venv); skipped otherwise.

Each case is fn(m, *inputs) with m the module (handgrad or torch), so one piece of code runs on
both. check() is the one entry point every case goes through; on a mismatch it names the case,
the quantity, the worst element, both values and the allowed error."""

import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import handgrad as hg  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

RTOL = 1e-12   # float64: a few hundred ulps, relative to each element ...
ATOL = 1e-12   # ... plus this much of the tensor's largest magnitude (for elements near 0)


class Const:
    """A float64 input that is a constant (requires no grad), e.g. an additive mask."""

    def __init__(self, value):
        self.value = np.asarray(value, dtype=np.float64)


def _to_numpy(t):
    return None if t is None else t.detach().numpy()


def _leaf(m, a, strided):
    """The leaf that requires grad, and the view of it the lambda sees. strided: the view is
    non-contiguous (a transpose of its storage, or every second element of a 1-D one)."""
    if not strided or a.ndim == 0:
        leaf = m.tensor(a, dtype=m.float64, requires_grad=True)
        return leaf, leaf
    if a.ndim == 1:
        leaf = m.tensor(np.stack([a, np.zeros_like(a)], axis=-1).reshape(-1), dtype=m.float64, requires_grad=True)
        return leaf, leaf[::2]
    leaf = m.tensor(np.ascontiguousarray(a.swapaxes(-1, -2)), dtype=m.float64, requires_grad=True)
    return leaf, leaf.transpose(-1, -2)


def _run(m, fn, inputs, strided, seed, second_order):
    """Everything one library computes for fn, as NumPy arrays (None for an unused input). The
    output's gradient G and the weights W are drawn from seed, so both libraries get the same."""
    draw = np.random.default_rng(seed).standard_normal
    leaves, args = [], []
    for a in inputs:
        if isinstance(a, Const):
            args.append(m.tensor(a.value, dtype=m.float64))
        elif a.dtype != np.float64:  # int64 targets, boolean masks
            args.append(m.tensor(a))
        else:
            leaf, view = _leaf(m, a, strided)
            if m is hg and strided and a.ndim >= 1 and min(a.shape[-2:]) > 1:
                assert not view.is_contiguous()
            leaves.append(leaf)
            args.append(view)
    out = fn(m, *args)
    g_out = m.tensor(draw(tuple(out.shape)), dtype=m.float64)
    result = {"forward": _to_numpy(out)}
    out.backward(g_out, retain_graph=True)
    result["backward"] = [_to_numpy(x.grad) for x in leaves]
    grads = m.autograd.grad(out, leaves, g_out, create_graph=True, allow_unused=True)
    result["autograd.grad"] = [_to_numpy(g) for g in grads]
    if second_order:
        # the scalar <grads, W>: its gradient is the Hessian-vector product H W
        weights = [m.tensor(draw(tuple(x.shape)), dtype=m.float64) for x in leaves]
        terms = [(g * w).sum() for g, w in zip(grads, weights) if g is not None and g.requires_grad]
        if terms:
            total = terms[0]
            for t in terms[1:]:
                total = total + t
            result["second order"] = [_to_numpy(g) for g in m.autograd.grad(total, leaves, allow_unused=True)]
        else:  # every gradient is a constant: the second order is zero
            result["second order"] = [None] * len(leaves)
    return result


def assert_close(what, got, want, rtol=RTOL, atol=ATOL):
    """got (handgrad) against want (torch); a gradient of None (unused) counts as zeros."""
    if got is None and want is None:
        return
    got = np.zeros_like(want) if got is None else np.asarray(got, dtype=np.float64)
    want = np.zeros_like(got) if want is None else np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: handgrad's shape {got.shape}, torch's {want.shape}"
    if got.size == 0:
        return
    with np.errstate(invalid="ignore"):  # inf - inf
        same = (got == want) | (np.isnan(got) & np.isnan(want))  # equal infinities, NaN for NaN
        err = np.where(same, 0.0, np.abs(got - want))
    err = np.where(np.isnan(err), np.inf, err)
    scale = np.where(np.isfinite(want), np.abs(want), 0.0)
    bound = rtol * scale + atol * max(1.0, scale.max())
    if np.all(err <= bound):
        return
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    raise AssertionError(
        f"{what}: worst element {tuple(int(i) for i in worst)}: handgrad {float(got[worst])!r}, "
        f"torch {float(want[worst])!r}, |diff| {err[worst]:.3e} > allowed {bound[worst]:.3e} "
        f"({int((err > bound).sum())} of {err.size} elements off)")


def check(name, fn, *inputs, strided=False, second_order=True, rtol=RTOL, atol=ATOL):
    """Runs fn(m, *inputs) on handgrad and on torch and compares the forward, the gradients of
    <out, G> (G random, fixed) by backward() and by autograd.grad(create_graph=True), and the
    gradient of <grads, W> (W random, fixed): the second order. float64 inputs become leaves
    that require grad; Const, int64 and bool inputs are constants."""
    seed = zlib.crc32(name.encode())
    want = _run(torch, fn, inputs, strided, seed, second_order)
    got = _run(hg, fn, inputs, strided, seed, second_order)
    layout = "strided" if strided else "contiguous"
    assert_close(f"{name} [{layout}] forward", got["forward"], want["forward"], rtol, atol)
    for key in [k for k in want if k != "forward"]:
        for i, (g, w) in enumerate(zip(got[key], want[key])):
            assert_close(f"{name} [{layout}] {key} of input {i}", g, w, rtol, atol)


# ---------------------------------------------------------------- the cases

rng = np.random.default_rng(23)


def randn(*shape):
    return rng.standard_normal(shape)


def positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


def targets(n, classes, ignored=(), ignore_index=-100):
    t = rng.integers(0, classes, n)
    t[list(ignored)] = ignore_index
    return t


def keep_mask(*shape):
    """A boolean mask (True = may attend) where every query row sees at least one key."""
    keep = rng.random(shape) < 0.6
    keep[..., 0] = True
    return keep


TIES = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])


def F(m):
    return m.nn.functional


def mlp(m, x, w1, b1, w2, b2, t):
    hidden = (x @ w1 + b1).tanh()
    return F(m).cross_entropy(hidden @ w2 + b2, t)


def layer_norm(m, x, gain, bias):
    centred = x - x.mean(dim=-1, keepdim=True)
    return centred / ((centred * centred).mean(dim=-1, keepdim=True) + 1e-5).sqrt() * gain + bias


def masked_write(m, a, b):
    keep = m.ones(3, 4, dtype=m.float64)
    keep[0, 1:] = 0.5       # a write into a constant, through a view
    keep[2] = b[0].detach()
    return (a * keep * b).sum(dim=0)


CASES = [
    # arithmetic, broadcasting, Python scalars
    ("add broadcast", lambda m, a, b: a + b, randn(3, 4), randn(4)),
    ("sub mul broadcast 3-D", lambda m, a, b, c: (a - b) * c, randn(2, 1, 4), randn(3, 1), randn(4)),
    ("div", lambda m, a, b: a / b, randn(3, 4), positive(3, 1)),
    ("scalars both sides", lambda m, a: 2 - a * 3 + a / 4 - 1 + 0.5 * a * a, randn(3, 4)),
    ("rdiv rpow", lambda m, a, b: 1 / b + 2 ** a, randn(3, 4), positive(3, 4)),
    ("neg pow", lambda m, a, b: (-a) ** 2 + a.pow(3) + b ** 1.5 + b ** -0.5, randn(3, 4), positive(3, 4)),
    # maps
    ("exp log", lambda m, a, b: b.log() * a.exp(), randn(3, 4), positive(3, 4)),
    ("sqrt", lambda m, b: b.sqrt() * b, positive(2, 5)),
    ("tanh", lambda m, a: a.tanh(), randn(3, 4)),
    ("relu", lambda m, a: a.relu() * a + F(m).relu(a), randn(4, 5)),
    ("functional tanh", lambda m, a: F(m).tanh(a) * a, randn(3, 4)),
    # matmul
    ("matmul", lambda m, a, b: a @ b, randn(3, 4), randn(4, 5)),
    ("matmul batched broadcast", lambda m, a, b: m.matmul(a, b), randn(2, 3, 4), randn(4, 5)),
    ("matmul 4-D", lambda m, a, b: a @ b, randn(2, 3, 4, 5), randn(2, 3, 5, 2)),
    ("matmul vector", lambda m, a, v: a @ v, randn(3, 4), randn(4)),
    # views and indexing
    ("permute transpose", lambda m, a, b: a.permute(2, 0, 1).transpose(0, 1) * b, randn(2, 3, 4), randn(2, 4, 3)),
    ("reshape view", lambda m, a, b: a.reshape(6, 2).contiguous().view(2, 6) @ b, randn(3, 4), randn(6, 3)),
    ("unsqueeze squeeze", lambda m, a, b: (a.unsqueeze(1) * b.unsqueeze(0)).squeeze(), randn(3, 1), randn(1, 4)),
    ("T", lambda m, a, b: a.T @ b, randn(4, 3), randn(4, 2)),
    ("indexing", lambda m, a: a[1:, ::2] * a[0, None, 1:3] + a[..., 1:, -1, None], randn(3, 4)),
    ("select then slice", lambda m, a: a[1][:, 2:] * a[0, ..., 1:4], randn(2, 3, 5)),
    ("masked write", masked_write, randn(3, 4), randn(3, 4)),
    # reductions
    ("sum", lambda m, a: a.sum() + a.sum(dim=1).sum() * a, randn(2, 3, 4)),
    ("sum dims keepdim", lambda m, a: a.sum(dim=(0, 2), keepdim=True) * a, randn(2, 3, 4)),
    ("mean", lambda m, a: a.mean(dim=-1) * a.mean(dim=(0, 2)), randn(2, 3, 4)),
    ("max", lambda m, a: a.max() * a, randn(3, 4)),
    ("max dim", lambda m, a: a.max(dim=1).values * a.max(0, keepdim=True).values.sum(), randn(3, 4)),
    # softmax and losses
    ("softmax", lambda m, a: a.softmax(-1) * F(m).softmax(a, dim=0), randn(3, 4)),
    ("log_softmax", lambda m, a: F(m).log_softmax(a, dim=-1) * a.log_softmax(1), randn(2, 3, 4)),
    ("cross_entropy ignore", lambda m, x, t: F(m).cross_entropy(x, t), randn(6, 5), targets(6, 5, ignored=[2, 4])),
    ("cross_entropy ignore_index=3", lambda m, x, t: F(m).cross_entropy(x, t, ignore_index=3),
     randn(6, 4), np.array([0, 3, 1, 3, 2, 0])),
    ("cross_entropy (N, C, d)", lambda m, x, t: F(m).cross_entropy(x, t),
     randn(2, 4, 3), np.array([[0, 1, 3], [2, -100, 0]])),
    # edges: 0-d inputs, -1 in shapes, ties, -inf, large logits, module functions
    ("0-d input", lambda m, s, a: s * a + s.exp() / a.sum(), np.asarray(1.3), randn(3)),
    ("reshape -1 squeeze", lambda m, a: a.reshape(-1, 2).unsqueeze(-1).squeeze(2).transpose(-1, -2), randn(3, 4)),
    ("matmul broadcast batch", lambda m, a, b: a @ b, randn(2, 1, 3, 4), randn(3, 4, 2)),
    ("max(dim) with ties", lambda m, a: a.max(dim=-1).values * a.max(dim=0, keepdim=True).values.sum(),
     TIES),
    ("softmax with -inf", lambda m, a, bias: (a + bias).softmax(-1), randn(3, 4),
     Const(np.where(keep_mask(3, 4), 0.0, -np.inf))),
    ("log_softmax large", lambda m, a: (a * 300).log_softmax(-1), randn(3, 4)),
    ("module functions",
     lambda m, a, b: m.exp(m.tanh(a)) * m.log(b) + m.softmax(m.matmul(a, a.transpose(0, 1)), 0).sum(),
     randn(3, 4), positive(3, 4)),
    ("cross_entropy 1-D", lambda m, x, t: F(m).cross_entropy(x, t), randn(5), np.array(2)),
    ("cross_entropy 3 of 4 ignored", lambda m, x, t: F(m).cross_entropy(x, t),
     randn(4, 3), np.array([-100, -100, 1, -100])),
    ("log_softmax with -inf", lambda m, a, bias: (a + bias).log_softmax(-1).exp(), randn(2, 3),
     Const([[0.0, -np.inf, 0.0], [0.0, 0.0, -np.inf]])),
    ("pow 0, 1, -1", lambda m, a: a ** 0 + a ** 1 + a ** -1 + a ** 2, positive(3, 4) * np.sign(randn(3, 4))),
    ("matmul 1-D", lambda m, a, b, c, x: a @ b + (a @ c).sum() + (x @ a).sum(),
     randn(4), randn(4), randn(4, 3), randn(2, 3, 4)),
    # the same non-finite values: NaN from a negative base, -inf from log 0, inf from overflow
    ("pow of a negative base", lambda m, a: a ** 2.5, randn(3, 4)),
    ("log of 0", lambda m, a: (a * 0).log() + a, randn(3)),
    ("exp overflow", lambda m, a: (a * 300).exp().sum().log(), randn(3, 4)),
    # compositions
    ("mlp", mlp, randn(5, 3), randn(3, 8), randn(8), randn(8, 4), randn(4), targets(5, 4, ignored=[1])),
    ("layer norm", layer_norm, randn(3, 6), randn(6), randn(6)),
]


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_op(case, strided):
    name, fn, *inputs = case
    check(name, fn, *inputs, strided=strided)


@pytest.mark.xfail(raises=hg.Error, strict=True,
                   reason="handgrad refuses an in-place write into a tensor that requires grad "
                          "(the tape would not see it); PyTorch records the write")
def test_write_into_an_intermediate():
    def fn(m, a, b):
        y = a * 1.0
        y[0, 1:] = 0.5
        return (y * b).sum(dim=0)
    check("write into an intermediate", fn, randn(3, 4), randn(3, 4))


@pytest.mark.xfail(raises=AssertionError, strict=True,
                   reason="max() over all elements sends the gradient to the first of equal maxima "
                          "(ops/reduce.h); PyTorch splits it evenly among them, as a central difference does")
def test_max_of_all_with_ties():
    check("max() with ties", lambda m, a: a.max() * a, TIES)


# ---------------------------------------------------------------- attention, on every path

PATHS = ["automatic", "materialized", "tiled"]


def attention(m, path):
    """F.scaled_dot_product_attention; on handgrad through the named path (torch: its math
    kernel, the one that has a second derivative)."""
    if m is torch:
        return torch.nn.functional.scaled_dot_product_attention

    def run(q, k, v, attn_mask=None, is_causal=False, scale=None):
        return hg.nn.functional.attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale, path=path)
    return run


def attention_block(sdpa):
    """Two-head causal self-attention, the heads merged and projected, then log_softmax."""
    def fn(m, x, wq, wk, wv, wo):
        b, t, c = x.shape
        def heads(w):
            return (x @ w).reshape(b, t, 2, c // 2).transpose(1, 2)   # (B, H, T, c/H)
        o = sdpa(m)(heads(wq), heads(wk), heads(wv), is_causal=True)
        return F(m).log_softmax(o.transpose(1, 2).reshape(b, t, c) @ wo, dim=-1)
    return fn


ATTENTION_CASES = [
    ("no mask", lambda a: lambda m, q, k, v: a(m)(q, k, v), randn(2, 4, 3), randn(2, 5, 3), randn(2, 5, 2)),
    ("causal", lambda a: lambda m, q, k, v: a(m)(q, k, v, is_causal=True),
     randn(2, 5, 3), randn(2, 5, 3), randn(2, 5, 4)),
    ("causal Tq < Tk", lambda a: lambda m, q, k, v: a(m)(q, k, v, is_causal=True),
     randn(3, 3), randn(5, 3), randn(5, 2)),
    ("boolean mask", lambda a: lambda m, q, k, v, keep: a(m)(q, k, v, attn_mask=keep),
     randn(2, 4, 3), randn(2, 5, 3), randn(2, 5, 3), keep_mask(2, 4, 5)),
    ("padding mask (B, 1, 1, S)", lambda a: lambda m, q, k, v, keep: a(m)(q, k, v, attn_mask=keep),
     randn(2, 2, 4, 3), randn(2, 2, 4, 3), randn(2, 2, 4, 3), keep_mask(2, 1, 1, 4)),
    ("additive mask", lambda a: lambda m, q, k, v, bias: a(m)(q, k, v, attn_mask=bias),
     randn(4, 3), randn(5, 3), randn(5, 2), Const(randn(4, 5))),
    ("additive mask requires grad", lambda a: lambda m, q, k, v, bias: a(m)(q, k, v, attn_mask=bias),
     randn(2, 4, 3), randn(2, 5, 3), randn(2, 5, 2), randn(4, 5)),
    ("additive mask (1, S) requires grad", lambda a: lambda m, q, k, v, bias: a(m)(q, k, v, attn_mask=bias),
     randn(2, 4, 3), randn(2, 5, 3), randn(2, 5, 2), randn(1, 5)),
    ("additive mask with -inf", lambda a: lambda m, q, k, v, bias: a(m)(q, k, v, attn_mask=bias),
     randn(4, 3), randn(5, 3), randn(5, 2), Const(np.where(keep_mask(4, 5), randn(4, 5), -np.inf))),
    ("causal Tq > Tk", lambda a: lambda m, q, k, v: a(m)(q, k, v, is_causal=True),
     randn(5, 3), randn(3, 3), randn(3, 2)),
    # more queries and keys than one tile of the tiled path holds (128 x 256)
    ("causal, several tiles", lambda a: lambda m, q, k, v: a(m)(q, k, v, is_causal=True),
     randn(1, 130, 4), randn(1, 300, 4), randn(1, 300, 3)),
    ("boolean mask, several tiles", lambda a: lambda m, q, k, v, keep: a(m)(q, k, v, attn_mask=keep),
     randn(130, 4), randn(300, 4), randn(300, 3), keep_mask(130, 300)),
    ("additive mask (B, 1, 1, S) requires grad", lambda a: lambda m, q, k, v, bias: a(m)(q, k, v, attn_mask=bias),
     randn(2, 2, 4, 3), randn(2, 2, 4, 3), randn(2, 2, 4, 3), randn(2, 1, 1, 4)),
    ("additive mask requires grad, several tiles", lambda a: lambda m, q, k, v, bias: a(m)(q, k, v, attn_mask=bias),
     randn(130, 4), randn(300, 4), randn(300, 3), randn(130, 300)),
    ("batch broadcast", lambda a: lambda m, q, k, v: a(m)(q, k, v),
     randn(2, 3, 4, 3), randn(1, 3, 5, 3), randn(1, 3, 5, 2)),
    ("one query", lambda a: lambda m, q, k, v: a(m)(q, k, v, is_causal=True),
     randn(1, 3), randn(4, 3), randn(4, 2)),
    ("scale", lambda a: lambda m, q, k, v: a(m)(q, k, v, scale=0.3),
     randn(2, 4, 3), randn(2, 4, 3), randn(2, 4, 3)),
    ("causal scale 4-D", lambda a: lambda m, q, k, v: a(m)(q, k, v, is_causal=True, scale=1.7),
     randn(2, 2, 5, 4), randn(2, 2, 5, 4), randn(2, 2, 5, 3)),
    ("attention then softmax", lambda a: lambda m, q, k, v: a(m)(q, k, v, is_causal=True).softmax(-1),
     randn(4, 3), randn(4, 3), randn(4, 3)),
    ("attention block", attention_block, randn(2, 4, 6), randn(6, 6), randn(6, 6), randn(6, 6), randn(6, 5)),
]


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", ATTENTION_CASES, ids=[c[0] for c in ATTENTION_CASES])
def test_attention(case, path, strided):
    name, make, *inputs = case
    fn = make(lambda m: attention(m, path))
    with sdpa_kernel([SDPBackend.MATH]):
        check(f"attention {name} ({path})", fn, *inputs, strided=strided)
