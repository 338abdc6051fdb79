"""Arithmetic, unary maps, reductions, matmul and softmax against NumPy float64, forward and
backward (the gradients written out by hand)."""

import numpy as np
import pytest

import handgrad as hg
from reference import softmax as np_softmax

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4))
B = rng.standard_normal((3, 4))
P = rng.uniform(0.5, 2.0, (3, 4))  # positive, for log, / and **


def f64(a, requires_grad=False):
    return hg.tensor(a, dtype=hg.float64, requires_grad=requires_grad)


@pytest.mark.parametrize("name, fn, ref", [
    ("add", lambda a, b: a + b, lambda a, b: a + b),
    ("sub", lambda a, b: a - b, lambda a, b: a - b),
    ("mul", lambda a, b: a * b, lambda a, b: a * b),
    ("div", lambda a, b: a / b, lambda a, b: a / b),
    ("scalars right", lambda a, b: (a + 2) * 3 - 1 / 4 + b / 2 - b ** 2, lambda a, b: (a + 2) * 3 - 1 / 4 + b / 2 - b ** 2),
    ("scalars left", lambda a, b: 2 + 3 * a - (1 - b) + 2 / b + 2 ** a, lambda a, b: 2 + 3 * a - (1 - b) + 2 / b + 2 ** a),
    ("neg", lambda a, b: -a, lambda a, b: -a),
    ("broadcast", lambda a, b: a * b[0], lambda a, b: a * b[0]),
])
def test_binary_operators(name, fn, ref):
    np.testing.assert_allclose(fn(f64(A), f64(P)).numpy(), ref(A, P), rtol=1e-14, atol=1e-14)


def test_unary_maps_and_their_gradients():
    x = f64(P, requires_grad=True)
    for method, value, derivative in [
        ("exp", np.exp(P), np.exp(P)),
        ("log", np.log(P), 1 / P),
        ("tanh", np.tanh(P), 1 - np.tanh(P) ** 2),
        ("relu", np.maximum(P - 1, 0), (P > 1).astype(float)),
    ]:
        x.grad = None
        y = (x - 1).relu() if method == "relu" else getattr(x, method)()
        np.testing.assert_allclose(y.detach().numpy(), value, rtol=1e-14, err_msg=method)
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), derivative, rtol=1e-13, err_msg=method)
    np.testing.assert_allclose(hg.exp(f64(A)).numpy(), np.exp(A), rtol=1e-14)
    np.testing.assert_allclose(hg.log(f64(P)).numpy(), np.log(P), rtol=1e-14)
    np.testing.assert_allclose(hg.tanh(f64(A)).numpy(), np.tanh(A), rtol=1e-14)
    np.testing.assert_allclose(hg.relu(f64(A)).numpy(), np.maximum(A, 0))


def test_pow_gradient():
    x = f64(P, requires_grad=True)
    (x ** 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * P ** 2, rtol=1e-13)


def test_reductions():
    t = f64(A)
    assert abs(t.sum().item() - A.sum()) < 1e-13
    np.testing.assert_allclose(t.sum(dim=1).numpy(), A.sum(axis=1), rtol=1e-13)
    np.testing.assert_allclose(t.sum(0, keepdim=True).numpy(), A.sum(axis=0, keepdims=True), rtol=1e-13)
    np.testing.assert_allclose(t.sum(dim=(0, 1)).numpy(), A.sum(), rtol=1e-13)
    assert abs(t.mean().item() - A.mean()) < 1e-14
    np.testing.assert_allclose(t.mean(dim=-1).numpy(), A.mean(axis=-1), rtol=1e-13)
    np.testing.assert_allclose(hg.sum(t, 1).numpy(), A.sum(axis=1), rtol=1e-13)
    np.testing.assert_allclose(hg.mean(t, 0).numpy(), A.mean(axis=0), rtol=1e-13)
    assert t.max().item() == A.max() and t.max().shape == ()
    values, indices = t.max(dim=1)
    np.testing.assert_array_equal(values.numpy(), A.max(axis=1))
    np.testing.assert_array_equal(indices.numpy(), A.argmax(axis=1))
    assert t.max(1, keepdim=True).values.shape == (3, 1)
    assert hg.max(t).item() == A.max()
    # the max's gradient goes to the first position holding it
    x = f64([[1., 3., 3.], [2., 0., 1.]], requires_grad=True)
    x.max(dim=1).values.sum().backward()
    assert x.grad.tolist() == [[0., 1., 0.], [1., 0., 0.]]
    # mean's gradient is 1/n everywhere
    y = f64(A, requires_grad=True)
    y.mean().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.full(A.shape, 1 / 12), rtol=1e-15)


def test_matmul_forward_and_backward():
    a, b = f64(A, requires_grad=True), f64(B.T, requires_grad=True)
    g = rng.standard_normal((3, 3))
    out = a @ b
    np.testing.assert_allclose(out.detach().numpy(), A @ B.T, rtol=1e-13)
    out.backward(f64(g))
    np.testing.assert_allclose(a.grad.numpy(), g @ B, rtol=1e-13)       # dA = G Bᵀ (B here is bᵀ)
    np.testing.assert_allclose(b.grad.numpy(), A.T @ g, rtol=1e-13)     # dB = Aᵀ G
    np.testing.assert_allclose(hg.matmul(f64(A), f64(B.T)).numpy(), A @ B.T, rtol=1e-13)
    np.testing.assert_allclose(f64(A).matmul(f64(B[0])).numpy(), A @ B[0], rtol=1e-13)  # 1-D as in NumPy
    batch = rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose((f64(batch) @ f64(B.T)).numpy(), batch @ B.T, rtol=1e-13)


def test_softmax_method_and_function():
    for dim in (0, 1, -1):
        np.testing.assert_allclose(f64(A).softmax(dim).numpy(), np_softmax(A, axis=dim), rtol=1e-14)
    np.testing.assert_allclose(hg.softmax(f64(A), 1).numpy(), np_softmax(A, axis=1), rtol=1e-14)
    np.testing.assert_allclose(hg.log_softmax(f64(A), 1).numpy(), np.log(np_softmax(A, axis=1)), rtol=1e-13)
    # the Jacobian's product: dS = P ∘ (g − rowsum(P ∘ g))
    x = f64(A, requires_grad=True)
    g = rng.standard_normal(A.shape)
    x.softmax(-1).backward(f64(g))
    p = np_softmax(A)
    np.testing.assert_allclose(x.grad.numpy(), p * (g - (p * g).sum(-1, keepdims=True)), rtol=1e-12, atol=1e-15)


def test_float32_stays_float32():
    x = hg.tensor(A, dtype=hg.float32)
    y = (x * 2 + 1).exp()
    assert y.dtype == hg.float32
    np.testing.assert_allclose(y.numpy(), np.exp(A.astype(np.float32) * 2 + 1), rtol=1e-6)


def test_where_masked_fill_cat_chunk_split_expand():
    a = np.arange(6.0).reshape(2, 3)
    b = -a
    cond = a > 2
    x = hg.tensor(a, dtype=hg.float64, requires_grad=True)
    y = hg.tensor(b, dtype=hg.float64, requires_grad=True)
    w = hg.where(hg.tensor(cond), x, y)
    np.testing.assert_array_equal(w.detach().numpy(), np.where(cond, a, b))
    w.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), cond * 1.0)
    np.testing.assert_array_equal(y.grad.numpy(), ~cond * 1.0)
    np.testing.assert_array_equal(hg.tensor(a).masked_fill(hg.tensor(cond), 9.0).numpy(), np.where(cond, 9.0, a))
    np.testing.assert_array_equal(hg.cat([hg.tensor(a), hg.tensor(b)], dim=1).numpy(), np.concatenate([a, b], 1))
    parts = hg.tensor(np.arange(7.0)).split(3)
    assert [p.tolist() for p in parts] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0]]
    assert [p.shape for p in hg.tensor(a).split([1, 2], dim=1)] == [(2, 1), (2, 2)]
    assert [p.shape for p in hg.tensor(a).chunk(3, dim=1)] == [(2, 1)] * 3
    e = hg.tensor([[1.0], [2.0]]).expand(2, -1, 4)
    assert e.shape == (2, 2, 4) and e.stride() == (0, 1, 0)
    with pytest.raises(hg.Error, match="expand: -1 for new leading dimension 0"):
        hg.tensor([1.0]).expand(-1, 1)
    with pytest.raises(hg.Error, match="split: split_size must be positive"):
        hg.tensor(a).split(0)
