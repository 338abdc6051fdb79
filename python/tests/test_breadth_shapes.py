"""The breadth ops of python/handgrad/_scans.py, _shapes.py, _creation.py and nn/_activations.py:
values against NumPy and the formula, float64 gradcheck, gradgradcheck and fwdcheck, the
activations' gradients at their kinks (PyTorch's), edge inputs and the errors."""
import math

import numpy as np
import pytest

import handgrad as hg
import handgrad.nn.functional as F
from breadth_helpers import checks, close, f64, i64, inf, nan, strided

rng = np.random.default_rng(32)


# ---------------------------------------------------------------- cummax, cummin, logcumsumexp, diff

def running(a, larger):
    """The reference: PyTorch's loop (a tie or a NaN moves the index on)."""
    values, indices = np.empty_like(a), np.empty(a.shape, dtype=np.int64)
    best, where = a[0], 0
    for i, x in enumerate(a):
        if np.isnan(x) or (not np.isnan(best) and (x >= best if larger else x <= best)):
            best, where = x, i
        values[i], indices[i] = best, where
    return values, indices


def test_cummax_cummin():
    a = np.round(rng.normal(size=(3, 8)), 0)  # rounded: ties
    a[1, 4] = a[2, 2] = a[2, 6] = nan
    for fn, larger in ((hg.cummax, True), (hg.cummin, False)):
        values, indices = fn(f64(a), 1)
        for r in range(3):
            ev, ei = running(a[r], larger)
            close(values.numpy()[r], ev)
            assert indices.numpy()[r].tolist() == ei.tolist()
        cols = fn(f64(a), 0)
        for c in range(8):
            assert cols.indices.numpy()[:, c].tolist() == running(a[:, c], larger)[1].tolist()
        assert type(cols).__name__ == ("cummax" if larger else "cummin")
    assert f64(a).cummax(-1).indices.tolist() == hg.cummax(strided(a), -1).indices.tolist()
    assert hg.cummax(i64([1, 3, 2, 3]), 0).indices.tolist() == [0, 1, 1, 3]
    assert hg.cummax(hg.tensor([True, False, True]), 0).indices.tolist() == [0, 0, 2]
    assert f64([3.0, 1.0, 1.0]).cummin(0).indices.tolist() == [0, 1, 2]
    assert hg.cummax(f64(2.0), 0).values.item() == 2.0 and hg.cummax(f64(2.0), 0).indices.dim() == 0
    assert hg.cummin(f64(np.zeros((2, 0))), 1).indices.shape == (2, 0)
    distinct = rng.permutation(15).reshape(3, 5) / 4.0
    checks(lambda t: hg.cummax(t, 1).values, distinct)
    checks(lambda t: hg.cummin(t, 0).values, distinct)
    with pytest.raises(IndexError, match=r"cummax\(\): dim 2 is out of range"):
        hg.cummax(f64(a), 2)


def test_logcumsumexp():
    a = rng.normal(size=(3, 150)) * 30  # several blocks of 64, wide range
    close(hg.logcumsumexp(f64(a), 1), np.logaddexp.accumulate(a, 1), rtol=1e-12, atol=0)
    close(f64(a).logcumsumexp(0), np.logaddexp.accumulate(a, 0), rtol=1e-12, atol=0)
    close(hg.logcumsumexp(strided(a), -1), np.logaddexp.accumulate(a, -1), rtol=1e-12, atol=0)
    close(hg.logcumsumexp(f64([-1000.0, 0.0]), 0), [-1000.0, 0.0])  # no underflow to -inf
    close(hg.logcumsumexp(f64([1000.0, 1000.0]), 0), [1000.0, 1000.0 + math.log(2)])  # no overflow
    close(hg.logcumsumexp(f64([-inf, -inf, 1.0, -inf]), 0), [-inf, -inf, 1.0, 1.0])
    out = hg.logcumsumexp(f64([-1000.0, 0.0, inf, 1.0, nan, 2.0]), 0).numpy()
    assert out[:4].tolist() == [-1000.0, 0.0, inf, inf] and np.isnan(out[4:]).all()
    assert hg.logcumsumexp(f64([inf, -inf, inf]), 0).tolist() == [inf, inf, inf]
    assert hg.logcumsumexp(f64(2.0), 0).item() == 2.0
    assert hg.logcumsumexp(f64(np.zeros((2, 0))), 1).shape == (2, 0)
    f32 = hg.logcumsumexp(f64(a).float(), 1)
    assert f32.dtype == hg.float32
    close(f32, np.logaddexp.accumulate(a.astype(np.float32), 1), rtol=1e-5)
    checks(lambda t: hg.logcumsumexp(t, 1), rng.normal(size=(2, 70)))
    with pytest.raises(TypeError, match=r"logcumsumexp\(\): input must be hg.float32 or hg.float64, got hg.int64"):
        hg.logcumsumexp(i64([1, 2]), 0)


def test_diff():
    a = rng.normal(size=(3, 6))
    for n in (0, 1, 2, 7):
        close(hg.diff(f64(a), n), np.diff(a, n))
        close(f64(a).diff(n, dim=0), np.diff(a, n, axis=0))
    pre, post = rng.normal(size=(3, 2)), rng.normal(size=(3, 1))
    close(hg.diff(f64(a), 2, -1, f64(pre), f64(post)), np.diff(a, 2, -1, prepend=pre, append=post))
    close(hg.diff(strided(a)), np.diff(a))
    assert hg.diff(hg.tensor([True, False, False])).tolist() == [True, False]
    assert hg.diff(i64([1, 5, 2])).tolist() == [4, -3]
    mixed = hg.diff(i64([1, 5, 2]), prepend=f64([0.5]))
    assert mixed.dtype == hg.float64 and mixed.tolist() == [0.5, 4.0, -3.0]
    assert hg.diff(f64([]), 2).shape == (0,)
    # n=0: a copy of input, as PyTorch: prepend and append are checked but not joined (nor promote),
    # and without them dim is not range-checked (nothing is taken along it)
    x = f64(a, True)
    same = hg.diff(x, 0, 0, f64(np.ones((2, 6))), f64(np.ones((1, 6))))
    close(same, a)
    assert same.dtype == hg.float64 and same.requires_grad and same.data_ptr() != x.data_ptr()
    assert hg.diff(i64([1, 5]), 0, -1, prepend=f64([0.5])).dtype == hg.int64
    close(hg.diff(f64(a), 0, dim=5), a)
    checks(lambda t, p: hg.diff(t, 0, 1, prepend=p), a, pre)
    with pytest.raises(hg.Error, match=r"diff\(\): prepend \(2, 2\) must have input's rank and sizes \(3, 6\)"):
        hg.diff(f64(a), 0, prepend=f64(np.zeros((2, 2))))
    checks(lambda t: hg.diff(t, 2, 1), a)
    checks(lambda t, p: hg.diff(t, 1, 1, prepend=p), a, pre)
    with pytest.raises(hg.Error, match=r"diff\(\): input must have at least one dim"):
        hg.diff(f64(1.0))
    with pytest.raises(ValueError, match=r"diff\(\): n \(the order\) must be 0 or more, got -1"):
        hg.diff(f64(a), -1)
    with pytest.raises(hg.Error, match=r"diff\(\): prepend \(3,\) must have input's rank"):
        hg.diff(f64(a), prepend=f64(np.zeros(3)))
    with pytest.raises(hg.Error, match=r"diff\(\): append \(2, 1\) must have input's rank and sizes \(3, 6\)"):
        hg.diff(f64(a), append=f64(np.zeros((2, 1))))


# ---------------------------------------------------------------- shapes, splits, take, rot90

def test_broadcast_shapes_and_tensors():
    assert hg.broadcast_shapes((2, 1), (3,), 1, (1, 1, 1)) == np.broadcast_shapes((2, 1), (3,), 1, (1, 1, 1))
    assert hg.broadcast_shapes() == () and hg.broadcast_shapes((0,), (1,)) == (0,)
    a, b = hg.broadcast_tensors(f64(np.zeros((2, 1))), f64(np.arange(3.0)))
    assert a.shape == (2, 3) and b.tolist() == [[0.0, 1.0, 2.0]] * 2
    x = f64(np.zeros(3))
    assert hg.broadcast_tensors(x)[0].shape == (3,) and hg.broadcast_tensors() == ()
    checks(lambda p, q: hg.cat([t.reshape(-1) for t in hg.broadcast_tensors(p, q)], 0), rng.normal(size=(2, 1)),
           rng.normal(size=3))
    with pytest.raises(hg.Error, match=r"broadcast_shapes\(\): shape 1, \(3,\), does not broadcast"):
        hg.broadcast_shapes((2,), (3,))
    with pytest.raises(ValueError, match=r"broadcast_shapes\(\): sizes must be 0 or more"):
        hg.broadcast_shapes((-1,), (3,))
    with pytest.raises(hg.Error, match=r"broadcast_tensors\(\): shapes \[\(2, 1\), \(3, 3\)\] do not broadcast"):
        hg.broadcast_tensors(f64(np.zeros((2, 1))), f64(np.zeros((3, 3))))


def test_tensor_split_take_rot90():
    x = hg.arange(7)
    split = lambda *args, **kw: [p.tolist() for p in hg.tensor_split(x, *args, **kw)]  # noqa: E731
    assert split(3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert split([1, 9, -2, 3]) == [[0], [1, 2, 3, 4, 5, 6], [], [], [3, 4, 5, 6]]
    assert split(i64([1, 5])) == [[0], [1, 2, 3, 4], [5, 6]] and split(i64(3)) == split(3)
    assert split(10) == [[k] for k in range(7)] + [[]] * 3 and split([]) == [list(range(7))]
    a = rng.normal(size=(4, 7))
    for spec in (3, [2, 5], [-3]):
        ours = [p.numpy() for p in f64(a).tensor_split(spec, dim=1)]
        for o, e in zip(ours, np.array_split(a, spec, axis=1)):
            close(o, e)
    checks(lambda t: hg.tensor_split(t, [1, 5], dim=1)[1] * 2, a)
    with pytest.raises(ValueError, match=r"tensor_split\(\): the number of sections must be 1 or more, got 0"):
        hg.tensor_split(x, 0)
    with pytest.raises(hg.Error, match=r"tensor_split\(\): input must have at least one dim"):
        hg.tensor_split(f64(1.0), 2)
    with pytest.raises(TypeError, match=r"tensor_split\(\): a tensor of indices or sections must be int64"):
        hg.tensor_split(x, f64([1.0]))
    # take
    idx = np.array([[0, -1], [5, 2]])
    close(hg.take(f64(a), i64(idx)), np.take(a, idx))
    close(f64(a).take(i64([27, -28])), np.take(a, [27, -28]))
    close(hg.take(strided(a), i64(idx)), np.take(a, idx))
    assert hg.take(f64(5.0), i64([0, 0])).tolist() == [5.0, 5.0] and hg.take(f64([]), i64([])).shape == (0,)
    assert hg.take(i64([[1, 2], [3, 4]]), i64(-1)).item() == 4
    checks(lambda t: hg.take(t, i64([[0, 3, 3], [27, -1, 5]])), a)
    with pytest.raises(IndexError, match=r"take\(\): index 28 is out of range for a tensor of 28 entries"):
        hg.take(f64(a), i64([28]))
    with pytest.raises(IndexError, match=r"take\(\): index 0 is out of range for a tensor of 0 entries"):
        hg.take(f64([]), i64([0]))
    with pytest.raises(TypeError, match=r"take\(\): index must be an int64 tensor, got hg.float64"):
        hg.take(f64(a), f64([0.0]))
    # rot90
    b = rng.normal(size=(2, 3, 4))
    for k in (-5, -1, 0, 1, 2, 3, 6):
        for dims in ((0, 1), (1, 0), (2, 0), (-1, -2)):
            close(hg.rot90(f64(b), k, dims), np.rot90(b, k, dims), err_msg=f"{k} {dims}")
    close(f64(b).rot90(), np.rot90(b))
    checks(lambda t: hg.rot90(t, 1, (0, 2)), b)
    with pytest.raises(hg.Error, match=r"rot90\(\): the two dims must differ"):
        hg.rot90(f64(b), 1, (0, 0))
    with pytest.raises(hg.Error, match=r"rot90\(\): input must have at least two dims"):
        hg.rot90(f64([1.0]))
    with pytest.raises(hg.Error, match=r"rot90\(\): dims must be two dims"):
        hg.rot90(f64(b), 1, (0,))
    with pytest.raises(IndexError, match=r"rot90\(\): dim 3 is out of range"):
        hg.rot90(f64(b), 1, (0, 3))


# ---------------------------------------------------------------- creation

def test_triangle_indices():
    for r, c, k in ((3, 4, 1), (3, 4, -1), (4, 3, 0), (0, 4, 0), (3, 3, 10), (3, 3, -10), (1, 1, 0)):
        lower, upper = hg.tril_indices(r, c, k), hg.triu_indices(r, c, k)
        assert lower.dtype == hg.int64 and lower.shape[0] == 2
        assert lower.tolist() == [list(v) for v in np.tril_indices(r, k, c)] or lower.numel() == 0
        assert upper.tolist() == [list(v) for v in np.triu_indices(r, k, c)] or upper.numel() == 0
        assert lower.shape[1] == len(np.tril_indices(r, k, c)[0])
    assert hg.tril_indices(3, 3, dtype=hg.int64).shape == (2, 6)
    with pytest.raises(ValueError, match=r"tril_indices\(\): row must be 0 or more, got -1"):
        hg.tril_indices(-1, 4)
    with pytest.raises(TypeError, match=r"triu_indices\(\): dtype must be hg.int64"):
        hg.triu_indices(3, 3, dtype=hg.float32)


def test_random_like():
    x = f64(np.zeros((3, 4)))
    hg.manual_seed(5)
    a = hg.rand_like(x)
    hg.manual_seed(5)
    assert a.dtype == hg.float64 and a.tolist() == hg.rand(3, 4, dtype=hg.float64).tolist()
    hg.manual_seed(6)
    b = hg.randn_like(x.float())
    hg.manual_seed(6)
    assert b.dtype == hg.float32 and b.tolist() == hg.randn(3, 4).tolist()
    g = hg.Generator(3)
    c = hg.randint_like(x, 2, 9, generator=g)
    assert c.dtype == hg.float64 and c.shape == (3, 4) and (c.numpy() >= 2).all() and (c.numpy() < 9).all()
    assert (c.numpy() == np.round(c.numpy())).all()
    assert hg.randint_like(i64([1, 2]), 5).dtype == hg.int64
    assert hg.rand_like(x, dtype=hg.float32).dtype == hg.float32 and hg.randn_like(f64(1.0)).shape == ()
    assert hg.rand_like(x, requires_grad=True).requires_grad
    with pytest.raises(TypeError, match=r"rand_like\(\): draws are hg.float32 or hg.float64, got hg.int64"):
        hg.rand_like(i64([1]))
    with pytest.raises(ValueError, match=r"randint"):
        hg.randint_like(x, 5, 5)


# ---------------------------------------------------------------- activations

def test_activations_values_and_kinks():
    a = rng.normal(size=(3, 4)) * 4
    close(F.softmin(f64(a), 1), np.exp(-a) / np.exp(-a).sum(1, keepdims=True))
    close(F.softmin(f64(a).float(), 0, dtype=hg.float64), np.exp(-a) / np.exp(-a).sum(0, keepdims=True), rtol=1e-6)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        close(F.softmin(f64(a)), np.exp(-a) / np.exp(-a).sum(1, keepdims=True))
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    close(F.glu(f64(a)), a[:, :2] * sig(a[:, 2:]))
    close(F.glu(f64(a[:2]), 0), a[:1] * sig(a[1:2]))
    assert F.glu(f64(np.zeros((2, 0)))).shape == (2, 0)
    edges = np.array([-4.0, -3.0, -1.0, 0.0, 3.0, 4.0, nan, inf, -inf])
    swish = F.hardswish(f64(edges)).numpy()
    assert str(swish.tolist()) == "[-0.0, -0.0, -0.3333333333333333, 0.0, 3.0, 4.0, nan, inf, nan]"
    close(F.hardsigmoid(f64(edges)), [0, 0, 1 / 3, 0.5, 1, 1, nan, 1, 0])
    close(F.threshold(f64(edges), 0.0, -5.0), [-5, -5, -5, -5, 3, 4, nan, inf, -5])
    close(F.threshold(f64(edges), 3.0, 7.0), [7, 7, 7, 7, 7, 4, nan, inf, 7])
    assert F.threshold(i64([1, 2]), 1.5, 0).tolist() == [0, 2] and F.threshold(i64([1, 2]), 1, 0.5).tolist() == [0, 2]
    x = f64(a, True)
    close(F.hardswish(x), a * np.clip(a + 3, 0, 6) / 6)
    close(F.hardsigmoid(strided(a)), np.clip(a + 3, 0, 6) / 6)
    # gradients at the kinks and at NaN and inf: PyTorch 2.15's
    for fn, expected, expected2 in (
            (F.hardswish, [0, 0, 1 / 6, 0.5, 1, 1, 1, 1, 0], [0, 0, 1 / 3, 1 / 3, 0, 0, 0, 0, 0]),
            (F.hardsigmoid, [0, 0, 1 / 6, 1 / 6, 0, 0, 0, 0, 0], None),
            (lambda t: F.threshold(t, 0.0, -5.0), [0, 0, 0, 0, 1, 1, 1, 1, 0], None),
            (lambda t: F.threshold(t, 3.0, 7.0), [0, 0, 0, 0, 0, 1, 1, 1, 0], None)):
        e = f64(edges, True)
        (g,) = hg.autograd.grad(fn(e).sum(), e, create_graph=True)
        close(g, expected)
        if expected2 is not None:
            (gg,) = hg.autograd.grad(g.sum(), e)
            close(gg, expected2)
    away = np.array([[-5.0, -2.5, -0.7, 0.4], [1.9, 2.8, 3.6, 7.0]])  # off the kinks at ±3
    for fn in (F.hardswish, F.hardsigmoid, lambda t: F.threshold(t, 0.1, 2.0), lambda t: F.softmin(t, 1), F.glu,
               lambda t: F.glu(t, 0)):
        checks(fn, away)
    with pytest.raises(hg.Error, match=r"glu: dim 1 of input \(3, 3\) must have an even size"):
        F.glu(f64(np.zeros((3, 3))), 1)
    with pytest.raises(hg.Error, match=r"glu: a 0-d tensor cannot be halved"):
        F.glu(f64(1.0))
    with pytest.raises(IndexError, match=r"glu\(\): dim 2 is out of range"):
        F.glu(f64(np.zeros((2, 4))), 2)
    with pytest.raises(TypeError, match=r"hardswish: input must be hg.float32 or hg.float64, got hg.int64"):
        F.hardswish(i64([1]))
    with pytest.raises(ValueError, match=r"hardsigmoid: inplace=True is not implemented"):
        F.hardsigmoid(f64([1.0]), inplace=True)
    with pytest.raises(TypeError, match=r"softmin: input must be hg.float32 or hg.float64"):
        F.softmin(i64([1, 2]), 0)
    with pytest.raises(TypeError, match=r"threshold: value must be a number"):
        F.threshold(f64([1.0]), 0.0, None)
