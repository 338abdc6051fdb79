"""Arithmetic a learner types on integer and bool tensors, PyTorch's promotion, // and %, ** with a
tensor exponent, gather/scatter/scatter_add and cross_entropy's reductions: values against NumPy
and Python's own integer rules (and PyTorch where it imports), gradients against float64 finite
differences, and the errors."""
import numpy as np
import pytest

import handgrad as hg
import handgrad.nn.functional as F

try:
    import torch
except ImportError:
    torch = None

rng = np.random.default_rng(5)


def test_integer_operators_follow_python():
    a = [7, -7, 7, -7, 0, 13, -1, 2**60 + 1]  # past 2**53: exact
    b = [2, 2, -2, -2, 3, -5, 4, 3]
    x, y = hg.tensor(a), hg.tensor(b)
    assert x.dtype == hg.int64
    assert (x + y).tolist() == [p + q for p, q in zip(a, b)]
    assert (x - y).tolist() == [p - q for p, q in zip(a, b)]
    assert (x // y).tolist() == [p // q for p, q in zip(a, b)]
    assert (x % y).tolist() == [p % q for p, q in zip(a, b)]
    assert (x * 3).tolist() == [p * 3 for p in a]
    assert (x + 1).dtype == hg.int64 and (1 - x).tolist() == [1 - p for p in a]
    assert (-x).tolist() == [-p for p in a]
    assert (hg.tensor([3, -2]) ** 3).tolist() == [27, -8] and (2 ** hg.tensor([0, 5])).tolist() == [1, 32]
    assert (x // 3).tolist() == [p // 3 for p in a] and (x % 3).tolist() == [p % 3 for p in a]
    assert (100 // hg.tensor([7, -7])).tolist() == [14, -15] and (100 % hg.tensor([7, -7])).tolist() == [2, -5]
    # true division and float numbers make float32
    assert (hg.tensor([7]) / 2).dtype == hg.float32 and (hg.tensor([7]) / 2).item() == 3.5
    assert (hg.tensor([7]) / hg.tensor([2])).item() == 3.5
    assert (hg.tensor([1]) + 0.5).dtype == hg.float32
    assert (hg.tensor([1]) * 1.0).dtype == hg.float32  # a float number, even a whole one
    if torch is not None:
        for expr in ["x // y", "x % y", "x * 3", "1 - x", "x // 3", "x % 3"]:
            tx, ty = torch.tensor(a), torch.tensor(b)
            assert eval(expr, {"x": x, "y": y}).tolist() == eval(expr, {"x": tx, "y": ty}).tolist(), expr


def test_broadcast_and_the_texts_index_lines():
    L = hg.tensor([5, 8])
    pos = hg.arange(16)
    idx = pos[None, :] % L[:, None]
    assert idx.shape == (2, 16) and idx.tolist() == [[p % l for p in range(16)] for l in (5, 8)]
    tgt = hg.arange(10)[None, :] + 1 - L[:, None]
    assert tgt.tolist() == [[i + 1 - l for i in range(10)] for l in (5, 8)]
    valid = tgt >= 0
    assert valid.sum().dtype == hg.int64 and valid.sum().item() == sum(i + 1 - l >= 0 for l in (5, 8) for i in range(10))
    mass = hg.ones(2, 10)
    share = (mass * valid).sum(1) / valid.sum()
    assert share.dtype == hg.float32
    np.testing.assert_allclose(share.numpy(), np.array([6, 3]) / 9, rtol=1e-6)
    assert tgt.clamp(min=0).tolist() == [[max(i + 1 - l, 0) for i in range(10)] for l in (5, 8)]


def test_bools_and_promotion():
    t, u = hg.tensor([True, True, False, False]), hg.tensor([True, False, True, False])
    assert (t + u).dtype == hg.bool and (t + u).tolist() == [True, True, True, False]
    assert (t * u).tolist() == [True, False, False, False]
    assert (t + 1).tolist() == [2, 2, 1, 1]
    assert t.sum().item() == 2 and hg.where(u, 1, 0).tolist() == [1, 0, 1, 0]
    x = hg.tensor([1.5, -2.0, 0.5, 4.0], dtype=hg.float64, requires_grad=True)
    y = (x * u).sum() / u.sum()
    assert y.dtype == hg.float64
    y.backward()
    assert x.grad.tolist() == [0.5, 0.0, 0.5, 0.0]
    with pytest.raises(hg.Error, match="dtype mismatch"):
        x + hg.zeros(4)  # float64 with float32 stays the library's error (docs/python.md)


def test_integer_errors_in_words():
    with pytest.raises(hg.Error, match="floor_divide: integer division by zero"):
        hg.tensor([1, 2]) // hg.tensor([1, 0])
    with pytest.raises(hg.Error, match="remainder: integer division by zero"):
        hg.tensor([1]) % 0
    with pytest.raises(hg.Error, match="negative integer powers"):
        hg.tensor([2]) ** hg.tensor([-1])
    with pytest.raises(hg.Error, match="bool"):
        -hg.tensor([True])
    with pytest.raises(hg.Error, match="sub"):
        hg.tensor([True]) - hg.tensor([False])
    with pytest.raises(TypeError, match="add"):
        hg.add(hg.tensor([1]), "a")
    with pytest.raises(ValueError, match="rounding_mode"):
        hg.div(hg.tensor([1.0]), 2, rounding_mode="up")


def test_function_forms():
    a = hg.tensor([[7.5, -7.5], [3.0, -1.25]], dtype=hg.float64)
    b = hg.tensor([2.0, -2.0], dtype=hg.float64)
    na, nb = a.numpy(), b.numpy()
    np.testing.assert_array_equal(hg.add(a, b, alpha=2).numpy(), na + 2 * nb)
    np.testing.assert_array_equal(hg.sub(a, 1).numpy(), na - 1)
    np.testing.assert_array_equal(hg.mul(2, a).numpy(), 2 * na)
    np.testing.assert_array_equal(hg.div(a, b, rounding_mode="floor").numpy(), np.floor_divide(na, nb))
    np.testing.assert_array_equal(hg.div(a, b, rounding_mode="trunc").numpy(), np.trunc(na / nb))
    np.testing.assert_array_equal(hg.div(hg.tensor([7, -7]), 2, rounding_mode="trunc").numpy(), [3, -3])
    np.testing.assert_array_equal(hg.remainder(a, b).numpy(), np.remainder(na, nb))
    np.testing.assert_array_equal(hg.floor_divide(a, b).numpy(), np.floor_divide(na, nb))
    np.testing.assert_allclose(a.abs().pow(b).numpy(), np.abs(na) ** nb, rtol=1e-15)
    np.testing.assert_array_equal(a.neg().numpy(), -na)


def test_pow_tensor_exponent_gradients():
    a = hg.tensor(rng.uniform(0.5, 2.0, (3, 4)), dtype=hg.float64, requires_grad=True)
    b = hg.tensor(rng.normal(size=(4,)), dtype=hg.float64, requires_grad=True)
    assert hg.autograd.gradcheck(lambda a, b: a ** b, (a, b))
    assert hg.autograd.gradgradcheck(lambda a, b: hg.pow(a, b), (a, b))
    out = (a ** b).sum()
    out.backward()
    na, nb = a.detach().numpy(), b.detach().numpy()
    np.testing.assert_allclose(a.grad.numpy(), nb * na ** (nb - 1), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), (na ** nb * np.log(na)).sum(0), rtol=1e-12)
    # at a = 0 with b ≥ 0 the exponent's gradient is 0, as PyTorch's
    z = hg.tensor([0.0, 0.0], dtype=hg.float64, requires_grad=True)
    e = hg.tensor([0.0, 2.0], dtype=hg.float64, requires_grad=True)
    (z ** e).sum().backward()
    assert e.grad.tolist() == [0.0, 0.0]
    if torch is not None:
        tz, te = torch.tensor([0.0, 0.0], dtype=torch.float64, requires_grad=True), torch.tensor([0.0, 2.0], dtype=torch.float64, requires_grad=True)
        (tz ** te).sum().backward()
        assert te.grad.tolist() == e.grad.tolist() and tz.grad.tolist() == z.grad.tolist()


def test_gather_scatter_against_numpy():
    x = rng.normal(size=(3, 4, 5))
    idx = rng.integers(0, 4, size=(3, 2, 5))
    hx, hi = hg.tensor(x, dtype=hg.float64, requires_grad=True), hg.tensor(idx)
    np.testing.assert_array_equal(hg.gather(hx, 1, hi).detach().numpy(), np.take_along_axis(x, idx, 1))
    np.testing.assert_array_equal(hx.gather(-2, hi).detach().numpy(), np.take_along_axis(x, idx, 1))
    src = rng.normal(size=(3, 2, 5))
    want = x.copy()
    for i in range(3):
        for j in range(2):
            for k in range(5):
                want[i, idx[i, j, k], k] += src[i, j, k]
    got = hg.scatter_add(hx, 1, hi, hg.tensor(src, dtype=hg.float64)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-14)
    assert hg.autograd.gradcheck(lambda x, s: hg.scatter_add(x, 1, hi, s),
                                 (hx, hg.tensor(src, dtype=hg.float64, requires_grad=True)))
    assert hg.autograd.gradcheck(lambda x: x.gather(1, hi), (hx,))
    # scatter without repeats against put_along_axis; with a value
    perm = np.argsort(rng.normal(size=(3, 4, 5)), axis=1)[:, :2]
    want = x.copy()
    np.put_along_axis(want, perm, src, 1)
    np.testing.assert_array_equal(hx.scatter(1, hg.tensor(perm), hg.tensor(src, dtype=hg.float64)).detach().numpy(), want)
    np.put_along_axis(want, perm, 0.25, 1)
    np.testing.assert_array_equal(hx.scatter(1, hg.tensor(perm), value=0.25).detach().numpy()[np.arange(3)[:, None, None], perm, np.arange(5)], 0.25)
    # the text's tiling of int tokens
    s = hg.randint(0, 10, (2, 16))
    L = hg.tensor([5, 7])
    tiled = hg.gather(s, 1, hg.arange(16)[None, :] % L[:, None])
    assert tiled.dtype == hg.int64
    assert tiled.tolist() == [[s.tolist()[b][p % l] for p in range(16)] for b, l in enumerate((5, 7))]
    if torch is not None:
        tx = torch.tensor(x, requires_grad=True)
        torch.gather(tx, 1, torch.tensor(idx)).pow(2).sum().backward()
        hg.gather(hx, 1, hi).pow(2).sum().backward()
        np.testing.assert_allclose(hx.grad.numpy(), tx.grad.numpy(), rtol=1e-14)
    with pytest.raises(IndexError, match="gather: index 4"):
        hg.gather(hx, 1, hg.tensor(np.full((1, 1, 1), 4)))
    with pytest.raises(TypeError, match="gather"):
        hg.gather(hx, 1, [0])


def test_cross_entropy_reductions():
    logits = hg.tensor(rng.normal(size=(6, 4)), dtype=hg.float64, requires_grad=True)
    target = hg.tensor([0, 3, -100, 1, 2, 2])
    lp = logits.detach().numpy() - np.log(np.exp(logits.detach().numpy()).sum(1, keepdims=True))
    want = np.array([-lp[i, t] if t != -100 else 0.0 for i, t in enumerate(target.tolist())])
    none = F.cross_entropy(logits, target, reduction="none")
    np.testing.assert_allclose(none.detach().numpy(), want, rtol=1e-14)
    np.testing.assert_allclose(F.cross_entropy(logits, target, reduction="sum").item(), want.sum(), rtol=1e-14)
    np.testing.assert_allclose(F.cross_entropy(logits, target).item(), want.sum() / 5, rtol=1e-14)
    assert hg.autograd.gradcheck(lambda z: F.cross_entropy(z, target, reduction="none"), (logits,))
    # classes at dim 1 with extra dims, as in PyTorch
    z3 = hg.randn(2, 4, 3, dtype=hg.float64)
    t3 = hg.randint(0, 4, (2, 3))
    np.testing.assert_allclose(F.cross_entropy(z3, t3, reduction="none").mean().item(), F.cross_entropy(z3, t3).item(), rtol=1e-14)
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(logits, target, reduction="max")
    if torch is not None:
        tl = torch.tensor(logits.detach().numpy())
        np.testing.assert_allclose(torch.nn.functional.cross_entropy(tl, torch.tensor(target.tolist()), reduction="none").numpy(),
                                   want, rtol=1e-14)


def test_creation_and_randomness_a_learner_types():
    hg.manual_seed(4)
    p = hg.randperm(50)
    assert p.dtype == hg.int64 and sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    hg.manual_seed(4)
    assert hg.randperm(50).tolist() == p.tolist()  # the seed decides
    w = hg.tensor([1.0, 2.0, 3.0, 4.0])
    draws = hg.multinomial(w, 8000, replacement=True).numpy()
    freq = np.bincount(draws, minlength=4) / 8000
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4], atol=0.02)  # ~4 standard errors
    rows = hg.multinomial(hg.tensor([[0.0, 5.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]]), 2)
    assert rows.shape == (2, 2) and set(rows.tolist()[0]) == {1, 2} and len(set(rows.tolist()[1])) == 2
    with pytest.raises(hg.Error, match="without replacement"):
        hg.multinomial(w, 5)
    with pytest.raises(hg.Error, match="≥ 0"):
        hg.multinomial(hg.tensor([1.0, -1.0]), 1)
    assert hg.empty(2, 3).shape == (2, 3) and hg.empty_like(p).dtype == hg.int64
    assert hg.arange(3, device="cpu").tolist() == [0, 1, 2] and hg.randn(2, device="cpu").shape == (2,)
    assert f"{hg.tensor(0.123456):.2f}" == "0.12" and f"{hg.tensor([1, 2]).float().mean():.1f}" == "1.5"
    assert hg.tensor([1.7, -2.2]).int().tolist() == [1, -2] and hg.tensor([1.7]).int().dtype == hg.int64
    with pytest.raises(hg.Error, match="float16"):
        hg.tensor([1.0]).half()


def test_prod_unfold_diag_embed():
    a = rng.normal(size=(3, 4))
    a[1, 2] = 0.0
    x = hg.tensor(a, dtype=hg.float64, requires_grad=True)
    np.testing.assert_allclose(x.prod(1).detach().numpy(), a.prod(1), rtol=1e-14)
    np.testing.assert_allclose(hg.prod(x).item(), a.prod(), rtol=1e-14)
    assert hg.prod(x, 0, keepdim=True).shape == (1, 4)
    x.prod(1).sum().backward()
    want = np.array([[np.prod(np.delete(a[i], j)) for j in range(4)] for i in range(3)])  # Π of the others
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-13)
    assert hg.prod(hg.tensor([2, 3, 4])).item() == 24 and hg.prod(hg.tensor([True, False])).dtype == hg.int64
    assert hg.prod(hg.zeros(0)).item() == 1.0
    u = hg.arange(10.0).unfold(0, 4, 3)
    np.testing.assert_array_equal(u.numpy(), np.lib.stride_tricks.sliding_window_view(np.arange(10.0), 4)[::3])
    m = rng.normal(size=(2, 5, 3))
    np.testing.assert_array_equal(hg.tensor(m).unfold(1, 2, 1).numpy(),
                                  np.lib.stride_tricks.sliding_window_view(m, 2, axis=1))
    d = rng.normal(size=(2, 3))
    e = hg.diag_embed(hg.tensor(d, dtype=hg.float64), offset=1)
    assert e.shape == (2, 4, 4)
    for b in range(2):
        np.testing.assert_array_equal(e[b].numpy(), np.diag(d[b], 1))
    with pytest.raises(hg.Error, match="unfold: size 5"):
        hg.arange(4.0).unfold(0, 5, 1)
    with pytest.raises(hg.Error, match="diag_embed"):
        hg.diag_embed(hg.ones(2), dim1=0, dim2=0)
    if torch is not None:
        t = torch.tensor(d)
        assert torch.diag_embed(t, -1, 0, 2).tolist() == hg.diag_embed(hg.tensor(d, dtype=hg.float64), -1, 0, 2).tolist()
        assert torch.arange(10.0).unfold(0, 3, 2).tolist() == hg.arange(10.0).unfold(0, 3, 2).tolist()


def test_aliases_are_the_same_ops():
    a, b = hg.tensor([7.0, -3.0]), hg.tensor([2.0, 4.0])
    assert hg.subtract(a, b).tolist() == (a - b).tolist() and hg.multiply(a, b).tolist() == (a * b).tolist()
    assert hg.divide(a, b).tolist() == (a / b).tolist() == hg.true_divide(a, b).tolist()
    assert hg.negative(a).tolist() == [-7.0, 3.0]
