"""Comparisons, logic, isnan/isinf/isfinite, any/all, clamp and where with numbers: values against
NumPy (and PyTorch where it imports), the operators a learner types, clamp's gradient against
finite differences and PyTorch's, and the errors."""
import numpy as np
import pytest

import handgrad as hg

try:
    import torch
except ImportError:
    torch = None

rng = np.random.default_rng(11)
A = np.array([[1.0, -2.0, np.nan, 0.5], [np.inf, 0.5, -np.inf, 0.0], [3.0, 0.5, 2.0, -1.0]])
B = np.array([0.5, -2.0, np.nan, 0.0])


def t(a, dtype=hg.float64):
    return hg.tensor(a, dtype=dtype)


@pytest.mark.parametrize("op,ref", [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                                    ("gt", np.greater), ("ge", np.greater_equal)])
def test_comparisons_broadcast_and_numbers(op, ref):
    with np.errstate(invalid="ignore"):
        want = ref(A, B)
        assert getattr(hg, op)(t(A), t(B)).tolist() == want.tolist()
        assert getattr(t(A), op)(t(B)).dtype == hg.bool
        assert getattr(t(A), op)(0.5).tolist() == ref(A, 0.5).tolist()
    if torch is not None:
        assert getattr(torch, op)(torch.tensor(A), torch.tensor(B)).tolist() == want.tolist()


def test_operators_as_pytorch():
    x, y = t(A), t(B)
    with np.errstate(invalid="ignore"):
        assert (x > 0).tolist() == (A > 0).tolist()
        assert (0 < x).tolist() == (A > 0).tolist()  # reflected
        assert (x == y).tolist() == (A == B).tolist()
        assert (x != x).tolist() == np.isnan(A).tolist()  # NaN is unequal to itself
        assert ((x > 0) & (x < 2)).tolist() == ((A > 0) & (A < 2)).tolist()
        assert ((x > 0) | (x < -1)).tolist() == ((A > 0) | (A < -1)).tolist()
        assert ((x > 0) ^ (x > 1)).tolist() == ((A > 0) ^ (A > 1)).tolist()
        assert (~(x > 0)).tolist() == (~(A > 0)).tolist()
    assert (x == None) is False and (x != "a") is True  # noqa: E711 (Python's answer for other types)
    assert hg.tensor([0.1]) == 0.1  # read as float32, as PyTorch
    assert (hg.tensor([1, 2]) == 1).tolist() == [True, False]
    assert (hg.tensor([1, 2]) < 1.5).tolist() == [True, False]
    assert {x: 1}[x] == 1  # still hashable, by identity
    with pytest.raises(TypeError):
        x & y  # float tensors: use logical_and
    with pytest.raises(TypeError):
        ~x


def test_logic_nan_inf_any_all():
    x = t(A)
    assert hg.logical_and(x, t(B)).tolist() == np.logical_and(A, B).tolist()
    assert x.logical_or(t(B)).tolist() == np.logical_or(A, B).tolist()
    assert hg.logical_xor(x, t(B)).tolist() == np.logical_xor(A, B).tolist()
    assert x.logical_not().tolist() == np.logical_not(A).tolist()
    assert x.isnan().tolist() == np.isnan(A).tolist()
    assert hg.isinf(x).tolist() == np.isinf(A).tolist()
    assert x.isfinite().tolist() == np.isfinite(A).tolist()
    assert hg.isnan(hg.tensor([1, 2])).tolist() == [False, False]
    assert x.any().item() is True and x.all().item() is False
    assert x.any(1).tolist() == np.any(A, 1).tolist()
    assert hg.all(x, dim=0, keepdim=True).tolist() == np.all(A, 0, keepdims=True).tolist()
    assert (t(B) > 10).any().item() is False and hg.zeros(0).all().item() is True


def test_clamp_values_and_gradient():
    a = np.array([[-2.0, -0.5, 0.1], [0.6, 1.5, np.nan]])
    x = hg.tensor(a, dtype=hg.float64, requires_grad=True)
    y = x.clamp(-0.5, 0.6)
    assert np.allclose(y.detach().numpy(), np.clip(a, -0.5, 0.6), equal_nan=True)
    w = rng.standard_normal(a.shape)
    (y * hg.tensor(w, dtype=hg.float64)).sum().backward()
    inside = (a > -0.5) & (a < 0.6)  # strictly inside, as PyTorch for number bounds
    assert np.array_equal(x.grad.numpy()[~np.isnan(a)], np.where(inside, w, 0.0)[~np.isnan(a)])
    assert hg.clip(t([1.0, 5.0]), max=2).tolist() == [1.0, 2.0]
    assert hg.clamp(t([1.0, 5.0]), min=3, max=2).tolist() == [2.0, 2.0]  # min above max: max wins, as PyTorch
    lo = hg.tensor([0.0, 2.0, 1.0], dtype=hg.float64, requires_grad=True)
    v = hg.tensor([1.0, 1.0, 1.0], dtype=hg.float64, requires_grad=True)
    z = hg.clamp(v, min=lo)
    z.sum().backward()
    assert z.tolist() == [1.0, 2.0, 1.0] and lo.grad.tolist() == [0.0, 1.0, 0.5]  # a tie shared, as PyTorch
    assert v.grad.tolist() == [1.0, 0.0, 0.5]
    assert hg.autograd.gradcheck(lambda v: v.clamp(-0.5, 0.6),
                                 (hg.tensor([[-2.0, -0.3, 0.1], [0.4, 1.5, 3.0]], dtype=hg.float64, requires_grad=True),))
    if torch is not None:
        tx = torch.tensor(np.nan_to_num(a), requires_grad=True)
        tx.clamp(-0.5, 0.6).mul(torch.tensor(w)).sum().backward()
        hx = hg.tensor(np.nan_to_num(a), dtype=hg.float64, requires_grad=True)
        (hx.clamp(-0.5, 0.6) * hg.tensor(w, dtype=hg.float64)).sum().backward()
        assert np.array_equal(hx.grad.numpy(), tx.grad.numpy())


def test_where_with_numbers():
    x = hg.tensor([1.0, -2.0, 3.0], dtype=hg.float64, requires_grad=True)
    y = hg.where(x > 0, x, 0.0)
    assert y.tolist() == [1.0, 0.0, 3.0] and y.dtype == hg.float64
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]
    assert hg.where(x > 0, 1.0, x).tolist() == [1.0, -2.0, 1.0]
    assert hg.where(hg.tensor([True, False]), 1.0, 2.0).tolist() == [1.0, 2.0]


def test_errors_name_the_op():
    x = t(A)
    with pytest.raises(TypeError, match="gt"):
        hg.gt(x, "a")
    with pytest.raises(TypeError):
        hg.gt([1], 0)
    with pytest.raises(hg.Error, match="broadcast|shape"):
        hg.eq(x, t([1.0, 2.0]))
    with pytest.raises(TypeError):
        hg.clamp(x)
    with pytest.raises(TypeError):
        x.clamp(min="a")
    with pytest.raises(hg.Error, match="bool"):
        hg.tensor([True, False]).clamp(0, 1)
    with pytest.raises(TypeError):
        x.any(dim=0.5)
    with pytest.raises(TypeError):
        hg.where(x > 0, x, "a")
