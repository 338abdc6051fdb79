"""The arguments of torch's own samples (its OpInfo database) that hg.nn.functional answers:
cross_entropy with class-probability targets, label_smoothing and weight; scaled_dot_product_attention
with enable_gqa and dropout_p; embedding's padding_idx, max_norm and scale_grad_by_freq. Each is held
to a NumPy float64 formula written out here and to float64 gradcheck / gradgradcheck, and, where
torch imports, to torch.nn.functional's values and gradients (dropout: its distribution)."""

import math

import numpy as np
import pytest

import handgrad as hg
import handgrad.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
rng = np.random.default_rng(11)
REDUCTIONS = ("mean", "sum", "none")


def f64(a, requires_grad=False):
    return hg.tensor(np.asarray(a, dtype=np.float64), dtype=hg.float64, requires_grad=requires_grad)


def close(got, want, tol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * (1 + np.abs(want).max(initial=0)), equal_nan=True)


def log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


# ---------------------------------------------------------------- cross_entropy

def ce_probabilities(x, p, weight=None, reduction="mean", smoothing=0.0):
    """PyTorch's formula for class-probability targets, classes at axis 1 (axis 0 of a 1-D x)."""
    axis = 0 if x.ndim == 1 else 1
    classes = x.shape[axis]
    p = p * (1 - smoothing) + smoothing / classes if smoothing > 0 else p
    w = np.ones(classes) if weight is None else weight
    w = w.reshape((-1,) + (1,) * (x.ndim - 2)) if x.ndim > 1 else w
    losses = -(log_softmax(x, axis) * p * w).sum(axis=axis)
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.sum() / (x.size // classes)


def ce_classes(x, t, weight=None, ignore_index=-100, reduction="mean", smoothing=0.0):
    """PyTorch's formula for class-index targets with label smoothing (0 for an all-ignored mean)."""
    axis = 0 if x.ndim == 1 else 1
    classes = x.shape[axis]
    lp = np.moveaxis(log_softmax(x, axis), axis, -1)  # (..., C)
    w = np.ones(classes) if weight is None else weight
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    picked = np.take_along_axis(lp, safe[..., None], -1)[..., 0]
    nll = np.where(keep, -w[safe] * picked, 0.0)
    smooth = np.where(keep, -(lp * w).sum(-1), 0.0)
    if reduction == "none":
        return (1 - smoothing) * nll + smoothing / classes * smooth
    if reduction == "sum":
        return (1 - smoothing) * nll.sum() + smoothing / classes * smooth.sum()
    total = np.where(keep, w[safe], 0.0).sum()
    total = total if total != 0 else 1.0
    return ((1 - smoothing) * nll.sum() + smoothing / classes * smooth.sum()) / total


SHAPES = [(4,), (3, 4), (2, 4, 3), (2, 4, 2, 3)]


def _probabilities(shape):
    axis = 0 if len(shape) == 1 else 1
    return np.exp(log_softmax(rng.standard_normal(shape), axis))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probability_targets(shape, reduction, weighted, smoothing):
    x, p = rng.standard_normal(shape), _probabilities(shape)
    w = rng.uniform(0.5, 2.0, 4) if weighted else None
    got = F.cross_entropy(f64(x), f64(p), None if w is None else f64(w), reduction=reduction,
                          label_smoothing=smoothing)
    close(got.numpy(), ce_probabilities(x, p, w, reduction, smoothing))
    if torch is not None:
        want = TF.cross_entropy(torch.tensor(x), torch.tensor(p), None if w is None else torch.tensor(w),
                                reduction=reduction, label_smoothing=smoothing)
        close(got.numpy(), want.numpy())


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_cross_entropy_class_targets_smoothing_weight(shape, reduction, weighted, smoothing, ignore_index):
    x = rng.standard_normal(shape)
    t = rng.integers(0, 4, shape[:1] + shape[2:] if len(shape) > 1 else ())
    if ignore_index == -100 and t.size > 1:
        t.reshape(-1)[0] = -100
    w = rng.uniform(0.5, 2.0, 4) if weighted else None
    got = F.cross_entropy(f64(x), hg.tensor(t), None if w is None else f64(w), ignore_index=ignore_index,
                          reduction=reduction, label_smoothing=smoothing)
    close(got.numpy(), ce_classes(x, t, w, ignore_index, reduction, smoothing))
    all_ignored = reduction == "mean" and not (t != ignore_index).any()
    if torch is not None and not all_ignored:  # torch: nan for an all-ignored mean (hg: 0)
        want = TF.cross_entropy(torch.tensor(x), torch.tensor(t), None if w is None else torch.tensor(w),
                                ignore_index=ignore_index, reduction=reduction, label_smoothing=smoothing)
        close(got.numpy(), want.numpy())


@needs_torch
@pytest.mark.parametrize("case", ["probabilities", "classes"])
def test_cross_entropy_gradients_match_torch(case):
    x = rng.standard_normal((3, 4, 2))
    w = rng.uniform(0.5, 2.0, 4)
    t = _probabilities((3, 4, 2)) if case == "probabilities" else np.array([[0, 3], [-100, 1], [2, 2]])
    kw = dict(reduction="mean", label_smoothing=0.2)
    hx, tx = f64(x, True), torch.tensor(x, requires_grad=True)
    ht = f64(t, True) if case == "probabilities" else hg.tensor(t)
    tt = torch.tensor(t, requires_grad=case == "probabilities")
    F.cross_entropy(hx, ht, f64(w), **kw).backward()
    TF.cross_entropy(tx, tt, torch.tensor(w), **kw).backward()
    close(hx.grad.numpy(), tx.grad.numpy())
    if case == "probabilities":
        close(ht.grad.numpy(), tt.grad.numpy())


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_gradcheck(reduction):
    x, p = rng.standard_normal((3, 4, 2)), _probabilities((3, 4, 2))
    w = f64(rng.uniform(0.5, 2.0, 4))
    t = hg.tensor(np.array([[0, 3], [-100, 1], [2, 2]]))
    soft = [f64(x, True), f64(p, True)]

    def probs(a, b):
        return F.cross_entropy(a, b, w, reduction=reduction, label_smoothing=0.1)

    def classes(a):
        return F.cross_entropy(a, t, w, reduction=reduction, label_smoothing=0.1)
    hg.autograd.gradcheck(probs, soft)
    hg.autograd.gradgradcheck(probs, soft)
    hg.autograd.gradcheck(classes, [f64(x, True)])
    hg.autograd.gradgradcheck(classes, [f64(x, True)])


def test_cross_entropy_edges_and_refusals():
    x = f64(rng.standard_normal((2, 3)))
    p = f64(_probabilities((2, 3)))
    # torch's positional order: weight third
    w = f64([1.0, 2.0, 0.5])
    close(F.cross_entropy(x, p, w).numpy(), ce_probabilities(x.numpy(), p.numpy(), w.numpy()))
    # an empty batch of probabilities: nan mean, 0 sum (PyTorch's)
    empty = f64(np.zeros((0, 3)))
    assert math.isnan(F.cross_entropy(empty, empty).item())
    assert F.cross_entropy(empty, empty, reduction="sum").item() == 0.0
    # every target ignored under label smoothing: 0, as without it
    assert F.cross_entropy(x, hg.tensor([-100, -100]), label_smoothing=0.2).item() == 0.0
    # a negative label_smoothing is none, as in PyTorch
    t = hg.tensor([0, 2])
    assert F.cross_entropy(x, t, label_smoothing=-0.1).item() == F.cross_entropy(x, t).item()
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(x, t, label_smoothing=1.5)
    with pytest.raises(ValueError, match="ignore_index"):
        F.cross_entropy(x, p, ignore_index=1)
    with pytest.raises(TypeError, match="float tensor"):
        F.cross_entropy(x, hg.tensor([[0, 1, 1], [1, 0, 0]]))
    with pytest.raises(TypeError, match="int64 class indices"):
        F.cross_entropy(x, f64([0.0, 1.0]))
    with pytest.raises(ValueError, match="one number per class"):
        F.cross_entropy(x, t, f64([1.0, 2.0]))
    with pytest.raises(ValueError, match="0-d"):
        F.cross_entropy(f64(1.0), hg.tensor(0))
    with pytest.warns(UserWarning, match="deprecated"):
        assert F.cross_entropy(x, p, size_average=False).item() == F.cross_entropy(x, p, reduction="sum").item()


# ---------------------------------------------------------------- scaled_dot_product_attention

def attention_numpy(q, k, v, mask=None, causal=False, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    m = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0))
    total = e.sum(-1, keepdims=True)
    return (e / np.where(total == 0, 1, total)) @ v


GQA = [((2, 4, 3, 8), (2, 2, 5, 8), (2, 1, 5, 6)), ((4, 3, 8), (2, 5, 8), (2, 5, 8)),
       ((2, 6, 3, 4), (2, 3, 5, 4), (2, 2, 5, 4))]


@pytest.mark.parametrize("shapes", GQA)
@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"scale": 0.3}, {"mask": "bool"}, {"mask": "float"}])
def test_sdpa_grouped_query_attention(shapes, kw):
    q, k, v = (rng.standard_normal(s) for s in shapes)
    heads = q.shape[-3]
    mask = {"bool": rng.random((3, 5)) > 0.3, "float": rng.standard_normal((3, 5))}.get(kw.pop("mask", None))
    want = attention_numpy(q, np.repeat(k, heads // k.shape[-3], -3), np.repeat(v, heads // v.shape[-3], -3), mask,
                           kw.get("is_causal", False), kw.get("scale"))
    hmask = None if mask is None else hg.tensor(mask) if mask.dtype == bool else f64(mask)
    got = F.scaled_dot_product_attention(f64(q), f64(k), f64(v), hmask, enable_gqa=True, **kw)
    close(got.numpy(), want)
    if torch is not None:
        tmask = None if mask is None else torch.tensor(mask)
        out = TF.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)), tmask, enable_gqa=True, **kw)
        close(got.numpy(), out.numpy())


def test_sdpa_gqa_gradients():
    q, k, v = rng.standard_normal((1, 4, 3, 4)), rng.standard_normal((1, 2, 5, 4)), rng.standard_normal((1, 1, 5, 3))
    leaves = [f64(q, True), f64(k, True), f64(v, True)]

    def f(a, b, c):
        return F.scaled_dot_product_attention(a, b, c, is_causal=True, enable_gqa=True)
    hg.autograd.gradcheck(f, leaves)
    if torch is not None:
        out = f(*leaves)
        g = rng.standard_normal(tuple(out.shape))
        out.backward(f64(g))
        ts = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
        TF.scaled_dot_product_attention(*ts, is_causal=True, enable_gqa=True).backward(torch.tensor(g))
        for mine, theirs in zip(leaves, ts):
            close(mine.grad.numpy(), theirs.grad.numpy())


def test_sdpa_gqa_refusals():
    q = f64(rng.standard_normal((2, 4, 3, 8)))
    with pytest.raises(ValueError, match="must divide"):
        F.scaled_dot_product_attention(q, f64(np.ones((2, 3, 5, 8))), f64(np.ones((2, 3, 5, 8))), enable_gqa=True)
    with pytest.raises(IndexError, match="dimension -3"):
        F.scaled_dot_product_attention(f64(np.ones((3, 8))), f64(np.ones((5, 8))), f64(np.ones((5, 8))),
                                       enable_gqa=True)
    with pytest.raises(ValueError, match="dropout_p"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=1.5)
    with pytest.raises(ValueError, match="dropout_p"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=-0.1)


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"mask": "bool"}, {"mask": "float"}, {"scale": 0.4}])
def test_sdpa_composed_path_is_the_fused_op(kw):
    """The path dropout takes, at dropout 0, equals the fused op (a query with no key: zeros)."""
    from handgrad.nn._attention import _with_dropout
    q, k, v = rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 6, 8)), rng.standard_normal((2, 6, 5))
    mask = rng.random((4, 6)) > 0.5
    mask[1] = False
    mask = {"bool": hg.tensor(mask), "float": f64(np.where(mask, rng.standard_normal((4, 6)), -np.inf))}.get(
        kw.pop("mask", None))
    composed = _with_dropout(f64(q), f64(k), f64(v), mask, 0.0, kw.get("is_causal", False), kw.get("scale"))
    fused = F.scaled_dot_product_attention(f64(q), f64(k), f64(v), mask, **kw)
    close(composed.numpy(), fused.numpy(), 1e-14)


def test_sdpa_dropout_zero_is_exact_and_draws_repeat():
    q, k, v = (f64(rng.standard_normal((2, 3, 5, 4))) for _ in range(3))
    plain = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert np.array_equal(F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=True).numpy(),
                          plain.numpy())
    assert np.array_equal(F.attention(q, k, v, is_causal=True).numpy(), plain.numpy())
    hg.manual_seed(3)
    first = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=True).numpy()
    hg.manual_seed(3)
    assert np.array_equal(F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=True).numpy(), first)
    assert not np.array_equal(first, plain.numpy())
    assert not F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).numpy().any()  # every weight dropped


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sdpa_dropout_distribution(dtype):
    """With V = I the output is the weights themselves: each 0 or P / (1 − p), about a fraction p
    of them 0, and their mean over many draws P (as torch's)."""
    p, draws = 0.4, 4000
    q, k = rng.standard_normal((1, 3, 4)), rng.standard_normal((1, 5, 4))
    dt = getattr(hg, dtype)
    weights = attention_numpy(q, k, np.eye(5))
    hg.manual_seed(0)
    qs = hg.tensor(np.broadcast_to(q, (draws, 3, 4)).copy(), dtype=dt)
    out = F.scaled_dot_product_attention(qs, hg.tensor(k, dtype=dt), hg.tensor(np.eye(5), dtype=dt),
                                         dropout_p=p).numpy().astype(np.float64)
    kept = out != 0
    tol = 1e-12 if dtype == "float64" else 1e-6
    np.testing.assert_allclose(np.where(kept, out, 0), np.where(kept, weights / (1 - p), 0), rtol=tol, atol=tol)
    fraction = 1 - kept.mean()
    assert abs(fraction - p) < 4 * math.sqrt(p * (1 - p) / out.size), fraction
    sigma = weights * math.sqrt(p / (1 - p)) / math.sqrt(draws)  # the standard error of the mean of each weight
    assert (np.abs(out.mean(0) - weights[0]) < 5 * sigma[0] + 1e-12).all()
    if torch is not None:  # torch's draws have the same law: compare both means with their error
        torch.manual_seed(0)
        td = getattr(torch, dtype)
        theirs = TF.scaled_dot_product_attention(torch.tensor(qs.numpy()), torch.tensor(k, dtype=td),
                                                 torch.tensor(np.eye(5), dtype=td), dropout_p=p)
        assert (np.abs(out.mean(0) - theirs.double().numpy().mean(0)) < 7 * sigma[0] + 1e-12).all()


def test_sdpa_dropout_gradients():
    q, k, v = (rng.standard_normal(s) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3)))
    mask = hg.tensor(rng.random((3, 5)) > 0.2)

    def f(a, b, c):
        hg.manual_seed(5)  # the same draw at every evaluation
        return F.scaled_dot_product_attention(a, b, c, mask, dropout_p=0.3, scale=0.7)
    leaves = [f64(q, True), f64(k, True), f64(v, True)]
    hg.autograd.gradcheck(f, leaves)
    hg.autograd.gradgradcheck(f, leaves)


# ---------------------------------------------------------------- embedding

def embedding_grad_numpy(idx, rows, grad, padding_idx=None, scale_grad_by_freq=False):
    out = np.zeros((rows, grad.shape[-1]))
    flat, g = idx.reshape(-1), grad.reshape(-1, grad.shape[-1])
    counts = np.bincount(flat, minlength=rows)
    for i, r in enumerate(flat):
        if r != padding_idx:
            out[r] += g[i] / (counts[r] if scale_grad_by_freq else 1)
    return out


EMBEDDING_KW = [dict(padding_idx=2), dict(padding_idx=-1), dict(scale_grad_by_freq=True),
                dict(padding_idx=0, scale_grad_by_freq=True), dict(max_norm=1.0), dict(max_norm=1.0, norm_type=1.0),
                dict(max_norm=0.5, norm_type=math.inf), dict(padding_idx=0, max_norm=1.0, scale_grad_by_freq=True)]


@pytest.mark.parametrize("kw", EMBEDDING_KW)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_embedding_keywords(kw, dtype):
    w0 = rng.standard_normal((6, 4))
    idx = np.array([[0, 2, 2], [5, 1, 2]])
    weight = hg.tensor(w0, dtype=getattr(hg, dtype), requires_grad=True)
    out = F.embedding(hg.tensor(idx), weight, **kw)
    renormed = w0.copy()
    if "max_norm" in kw:
        for r in np.unique(idx):
            norm = np.linalg.norm(w0[r], kw.get("norm_type", 2.0))
            if norm > kw["max_norm"]:
                renormed[r] *= kw["max_norm"] / (norm + 1e-7)
    tol = 1e-12 if dtype == "float64" else 1e-6
    close(weight.detach().numpy(), renormed, tol)  # in place, the rows not picked untouched
    close(out.detach().numpy(), renormed[idx], tol)
    g = rng.standard_normal(tuple(out.shape))
    out.backward(hg.tensor(g, dtype=weight.dtype))
    pad = kw.get("padding_idx")
    pad = None if pad is None else pad % 6
    close(weight.grad.numpy(), embedding_grad_numpy(idx, 6, g, pad, kw.get("scale_grad_by_freq", False)), tol)
    if torch is not None:
        tw = torch.tensor(w0, dtype=getattr(torch, dtype), requires_grad=True)
        tout = TF.embedding(torch.tensor(idx), tw, **kw)
        tout.backward(torch.tensor(g, dtype=tw.dtype))
        close(weight.detach().numpy(), tw.detach().numpy(), tol)
        close(out.detach().numpy(), tout.detach().numpy(), tol)
        close(weight.grad.numpy(), tw.grad.numpy(), tol)


def test_embedding_padding_idx_gradient_elsewhere_is_the_derivative():
    idx = hg.tensor(np.array([[0, 3], [1, 4]]))

    def f(w):
        return F.embedding(idx, w, padding_idx=2)  # row 2 is not picked: the gradient is the derivative
    hg.autograd.gradcheck(f, [f64(rng.standard_normal((5, 3)), True)])
    hg.autograd.gradgradcheck(f, [f64(rng.standard_normal((5, 3)), True)])


def test_embedding_refusals():
    w = f64(rng.standard_normal((5, 3)))
    idx = hg.tensor([1, 2])
    with pytest.raises(ValueError, match="sparse"):
        F.embedding(idx, w, sparse=True)
    with pytest.raises(ValueError, match="padding_idx"):
        F.embedding(idx, w, padding_idx=5)
    with pytest.raises(ValueError, match="padding_idx"):
        F.embedding(idx, w, padding_idx=-6)
    with pytest.raises(TypeError, match="padding_idx"):
        F.embedding(idx, w, padding_idx=1.5)
    with pytest.raises(TypeError, match="max_norm"):
        F.embedding(idx, w, max_norm="1")
    # no gradient anywhere: the plain lookup, padding_idx and scale_grad_by_freq change nothing
    assert np.array_equal(F.embedding(idx, w, padding_idx=1, scale_grad_by_freq=True).numpy(), w.numpy()[[1, 2]])
