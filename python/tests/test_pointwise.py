"""The pointwise ops of ops/pointwise.cpp and the error function, from Python: values against the C
library as Python's math module exposes it (math.fmod, math.atan2, Python's // and %, ...) on
random and edge inputs, gradients at the points a composed formula gets wrong, and the refusals.
The comparison with torch is the op table's (python/tests/rows/rows_pointwise.py)."""
import math

import numpy as np
import pytest

import handgrad as hg

rng = np.random.default_rng(56)
EDGES = [0.0, -0.0, 1.0, -1.0, 0.001, -0.001, 0.25, -0.25, 7.5, 1e-300, -1e300, math.inf, -math.inf, math.nan, 3.0]


def f64(v, grad=False):
    return hg.tensor(np.asarray(v, dtype=np.float64), dtype=hg.float64, requires_grad=grad)


def same(x, y):
    """Equal as floats, NaN equal to NaN, and a zero's sign compared."""
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y and math.copysign(1, x) == math.copysign(1, y)


def pairs():
    a = [x for x in EDGES for _ in EDGES] + list(rng.normal(size=50) * 10)
    b = [y for _ in EDGES for y in EDGES] + list(rng.normal(size=50))
    return a, b


def py_floordiv(a, b):
    """Python's //, and PyTorch's a / b (IEEE's ±inf or NaN) where Python raises."""
    if b == 0:
        return float(np.float64(a) / np.float64(b))
    return a // b


def py_mod(a, b):
    """Python's %, except that a zero remainder keeps fmod's sign (PyTorch's rule)."""
    if b == 0 or math.isinf(a) or math.isnan(a) or math.isnan(b):
        return math.nan
    m = math.fmod(a, b)
    return m + b if m != 0 and ((b < 0) != (m < 0)) else m


@pytest.mark.parametrize("name, reference", [
    ("fmod", lambda a, b: math.nan if b == 0 or math.isinf(a) else math.fmod(a, b)),
    ("remainder", py_mod),
    ("floor_divide", py_floordiv),
    ("atan2", math.atan2),
    ("copysign", math.copysign),
    ("hypot", math.hypot),
    ("fmax", lambda a, b: float(np.fmax(a, b))),
    ("fmin", lambda a, b: float(np.fmin(a, b))),
])
def test_values_are_the_c_librarys(name, reference):
    a, b = pairs()
    got = getattr(hg, name)(f64(a), f64(b)).tolist()
    for x, y, g in zip(a, b, got):
        with np.errstate(all="ignore"):
            want = reference(x, y)
        if name in ("fmax", "fmin") and g == want == 0:
            continue  # C leaves the sign of fmax(0, −0) open; PyTorch's differs by argument order
        assert same(g, want), f"hg.{name}({x!r}, {y!r}) = {g!r}, want {want!r}"


def test_the_reported_quotient_that_rounds():
    # −0.25 / −0.001 rounds to 250.0; the exact quotient is 249.99…
    assert hg.fmod(f64(-0.25), -0.001).item() == math.fmod(-0.25, -0.001)
    assert hg.remainder(f64(-0.25), -0.001).item() == -0.25 % -0.001
    assert hg.floor_divide(f64(-0.25), -0.001).item() == -0.25 // -0.001 == 249.0
    assert (f64(-0.25) // -0.001).item() == 249.0 and (f64(-0.25) % -0.001).item() == -0.25 % -0.001


def test_atan2_at_the_origin_and_the_infinities():
    ys = [0.0, 0.0, -0.0, math.inf, -math.inf]
    xs = [0.0, -0.0, -0.0, math.inf, -math.inf]
    for y, x, g in zip(ys, xs, hg.atan2(f64(ys), f64(xs)).tolist()):
        assert same(g, math.atan2(y, x)), (y, x)


def test_xlogy_and_its_gradient_at_zero():
    x, y = f64([0.0, 0.0, 1.5], grad=True), f64([2.0, -1.0, 3.0], grad=True)
    out = hg.xlogy(x, y)
    assert out.tolist() == [0.0, 0.0, 1.5 * math.log(3.0)]
    out.sum().backward()
    assert x.grad.tolist() == [math.log(2.0), 0.0, math.log(3.0)]  # ln y at x = 0 (0 where y ≤ 0)
    assert y.grad.tolist() == [0.0, -0.0, 0.5]
    assert hg.xlogy(0.0, f64([math.nan, 1.0])).tolist()[1] == 0.0
    assert math.isnan(hg.xlogy(f64([0.0]), math.nan).item())


def test_gradients_and_tangents_against_finite_differences():
    a, b = f64(rng.uniform(-2, 2, (3, 4)), True), f64(rng.uniform(-2, 2, (4,)), True)
    for fn in (hg.atan2, hg.logaddexp, hg.logaddexp2, hg.hypot, hg.fmax, hg.fmin):
        assert hg.autograd.gradcheck(fn, (a, b)), fn.__name__
        assert hg.autograd.gradgradcheck(fn, (a, b)), fn.__name__
        assert hg.autograd.fwdcheck(fn, (a, b)), fn.__name__
    q = rng.integers(-3, 4, (3, 4)) + rng.uniform(0.2, 0.8, (3, 4))
    d = rng.uniform(0.6, 1.5, (3, 4)) * rng.choice([-1, 1], (3, 4))
    for fn in (hg.fmod, hg.remainder):
        assert hg.autograd.gradcheck(fn, (f64(q * d, True), f64(d, True))), fn.__name__
    for fn, lo, hi in ((hg.erf, -2, 2), (hg.erfc, -2, 2), (hg.erfinv, -0.9, 0.9), (hg.log10, 0.5, 3)):
        x = f64(rng.uniform(lo, hi, (3, 4)), True)
        assert hg.autograd.gradcheck(fn, (x,)) and hg.autograd.gradgradcheck(fn, (x,)), fn.__name__


def test_error_function_against_math():
    xs = [-3.0, -0.5, 0.0, -0.0, 1e-300, 0.5, 2.0, 6.0, math.inf, -math.inf]
    for x, e, c in zip(xs, hg.erf(f64(xs)).tolist(), hg.erfc(f64(xs)).tolist()):
        assert same(e, math.erf(x)) and same(c, math.erfc(x)), x
    ys = [-0.999999, -0.5, 1e-300, 0.3, 0.99, 0.9999999999]
    for y, v in zip(ys, hg.erfinv(f64(ys)).tolist()):
        assert math.erf(v) == pytest.approx(y, rel=4e-16, abs=0), y
    assert hg.erfinv(f64([1.0, -1.0])).tolist() == [math.inf, -math.inf]
    assert math.isnan(hg.erfinv(f64([1.5])).item())
    assert hg.log10(f64([1000.0])).item() == math.log10(1000.0)
    assert hg.erf(hg.tensor([1.0])).dtype == hg.float32 and f64([0.5]).erf().item() == math.erf(0.5)


def test_promotion_numbers_and_refusals():
    i = hg.tensor([7, -7])
    assert hg.fmod(i, 3).dtype == hg.int64 and hg.fmod(i, 3).tolist() == [1, -1]
    assert hg.fmod(i, 2.5).dtype == hg.float32
    assert hg.atan2(i, f64([1.0, 1.0])).dtype == hg.float64
    assert f64([1.0, -2.0]).copysign(-1.0).tolist() == [-1.0, -2.0]
    with pytest.raises(TypeError, match="atan2"):
        hg.atan2(f64([1.0]), 2.0)  # PyTorch's atan2 takes tensors only
    with pytest.raises(TypeError, match="one of input and other"):
        hg.xlogy(1.0, 2.0)
    with pytest.raises(hg.Error):
        hg.hypot(f64([1.0, 2.0]), f64([1.0, 2.0, 3.0]))  # shapes that do not broadcast
