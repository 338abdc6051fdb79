"""The elementwise functions of ops/elementwise_math.cpp from Python: PyTorch's names as functions
and methods, values against NumPy (and PyTorch where it is installed), gradients against float64
central differences (hg.autograd.gradcheck) and against the derivative written out here."""

import numpy as np
import pytest

import handgrad as hg
import handgrad.nn.functional as F

try:
    import torch
except ImportError:  # the comparison environment has it; the plain test run does not need it
    torch = None


def logistic(x):
    return 1 / (1 + np.exp(-x))


# name: (NumPy's value, its derivative, the inputs' range)
FUNCTIONS = {
    "sin": (np.sin, np.cos, (-3, 3)),
    "cos": (np.cos, lambda x: -np.sin(x), (-3, 3)),
    "tan": (np.tan, lambda x: 1 / np.cos(x) ** 2, (-1, 1)),
    "asin": (np.arcsin, lambda x: 1 / np.sqrt(1 - x * x), (-0.8, 0.8)),
    "acos": (np.arccos, lambda x: -1 / np.sqrt(1 - x * x), (-0.8, 0.8)),
    "atan": (np.arctan, lambda x: 1 / (1 + x * x), (-3, 3)),
    "sinh": (np.sinh, np.cosh, (-3, 3)),
    "cosh": (np.cosh, np.sinh, (-3, 3)),
    "asinh": (np.arcsinh, lambda x: 1 / np.sqrt(x * x + 1), (-3, 3)),
    "acosh": (np.arccosh, lambda x: 1 / np.sqrt(x * x - 1), (1.2, 4)),
    "atanh": (np.arctanh, lambda x: 1 / (1 - x * x), (-0.8, 0.8)),
    "sigmoid": (logistic, lambda x: logistic(x) * (1 - logistic(x)), (-6, 6)),
    "silu": (lambda x: x * logistic(x), lambda x: logistic(x) * (1 + x * (1 - logistic(x))), (-6, 6)),
    "log1p": (np.log1p, lambda x: 1 / (1 + x), (-0.5, 3)),
    "expm1": (np.expm1, np.exp, (-3, 3)),
    "log2": (np.log2, lambda x: 1 / (x * np.log(2)), (0.2, 4)),
    "exp2": (np.exp2, lambda x: np.exp2(x) * np.log(2), (-3, 3)),
    "reciprocal": (lambda x: 1 / x, lambda x: -1 / (x * x), (0.3, 3)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), lambda x: -0.5 * x ** -1.5, (0.3, 3)),
    "square": (np.square, lambda x: 2 * x, (-3, 3)),
    "abs": (np.abs, np.sign, (-3, 3)),
    "sign": (np.sign, np.zeros_like, (-3, 3)),
    "floor": (np.floor, np.zeros_like, (-3, 3)),
    "ceil": (np.ceil, np.zeros_like, (-3, 3)),
    "round": (np.round, np.zeros_like, (-3, 3)),  # NumPy's round is half to even too
    "trunc": (np.trunc, np.zeros_like, (-3, 3)),
}


def sample(lo, hi, shape=(4, 5), seed=0):
    x = np.random.default_rng(seed).uniform(lo, hi, shape)
    # away from the jumps of the piecewise constant ones (and from 0 for abs)
    frac = x - np.floor(x)
    return np.where(np.abs(frac - 0.5) < 0.05, x + 0.1, np.where(frac < 0.05, x + 0.1, x))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_value_and_gradient(name):
    value, derivative, (lo, hi) = FUNCTIONS[name]
    a = sample(lo, hi)
    x = hg.tensor(a, dtype=hg.float64, requires_grad=True)
    fn = getattr(hg, name)
    out = fn(x)
    np.testing.assert_allclose(out.detach().numpy(), value(a), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(getattr(x, name)().detach().numpy(), value(a), rtol=1e-13, atol=1e-15)  # the method
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), derivative(a), rtol=1e-12, atol=1e-15)
    assert hg.autograd.gradcheck(fn, (hg.tensor(a, dtype=hg.float64, requires_grad=True),))
    # float32: the same function, rounded
    np.testing.assert_allclose(fn(hg.tensor(a, dtype=hg.float32)).numpy(), value(a.astype(np.float32)), rtol=2e-6,
                               atol=1e-6)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed here (the comparison environment has it)")
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_against_pytorch(name):
    _, _, (lo, hi) = FUNCTIONS[name]
    a = sample(lo, hi, seed=1)
    x = hg.tensor(a, dtype=hg.float64, requires_grad=True)
    t = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    peer = getattr(torch, name, None) or getattr(torch.nn.functional, name)  # silu is only functional there
    getattr(hg, name)(x).sum().backward()
    peer(t).sum().backward()
    np.testing.assert_allclose(getattr(hg, name)(x).detach().numpy(), peer(t).detach().numpy(),
                               rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_edges_as_pytorch():
    """round is half to even; sign keeps ±0 and gives 0 at NaN (PyTorch's); abs's gradient at 0 is 0; sigmoid and silu
    do not overflow at ±1000; the functional names and abs() reach the same ops."""
    np.testing.assert_array_equal(hg.round(hg.tensor([0.5, 1.5, 2.5, -0.5, -1.5])).numpy(), [0.0, 2.0, 2.0, -0.0, -2.0])
    s = hg.sign(hg.tensor([-2.0, -0.0, 0.0, 3.0, float("nan")])).numpy()
    assert list(s) == [-1.0, 0.0, 0.0, 1.0, 0.0]  # sign(nan) is 0, as PyTorch's
    x = hg.tensor([0.0, -1.5, 2.0], dtype=hg.float64, requires_grad=True)
    abs(x).sum().backward()  # Python's abs() is hg.abs
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, -1.0, 1.0])
    big = hg.tensor([-1000.0, 1000.0], dtype=hg.float64)
    np.testing.assert_array_equal(hg.sigmoid(big).numpy(), [0.0, 1.0])
    np.testing.assert_array_equal(F.sigmoid(big).numpy(), [0.0, 1.0])
    np.testing.assert_array_equal(F.silu(big).numpy(), [-0.0, 1000.0])
    np.testing.assert_array_equal(hg.silu(big).numpy(), F.silu(big).numpy())


def test_second_order_through_sin():
    """d²/dx² sin x = −sin x, through create_graph."""
    x = hg.tensor([0.3, 1.1, -2.0], dtype=hg.float64, requires_grad=True)
    (g,) = hg.autograd.grad(hg.sin(x).sum(), x, create_graph=True)
    (h,) = hg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), -np.sin(x.detach().numpy()), rtol=1e-13)


def test_errors_name_the_function():
    with pytest.raises(TypeError):
        hg.sin([1.0, 2.0])
    # an integer tensor meets a float function as float32, PyTorch's promotion; rounding keeps it
    assert hg.sin(hg.tensor([1, 2])).dtype == hg.float32
    assert hg.floor(hg.tensor([1, 2])).dtype == hg.int64 and hg.abs(hg.tensor([-3])).tolist() == [3]


def test_arange_refuses_bad_steps_as_pytorch():
    """A zero step, a step pointing away from end, a non-finite or non-numeric bound: a clear error."""
    with pytest.raises(ValueError, match="nonzero"):
        hg.arange(4, 2, 0)
    with pytest.raises(ValueError, match="points away"):
        hg.arange(1, 5, -1)
    with pytest.raises(ValueError, match="finite"):
        hg.arange(float("inf"))
    with pytest.raises(TypeError, match="number"):
        hg.arange("4")
    assert hg.arange(True).tolist() == [0]  # a bool is the number 0 or 1, as in PyTorch
    np.testing.assert_array_equal(hg.arange(5, 1, -1).numpy(), [5, 4, 3, 2])
    np.testing.assert_allclose(hg.arange(1, 2, 0.25).numpy(), [1.0, 1.25, 1.5, 1.75])
