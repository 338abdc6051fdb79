"""Forward mode from Python: dual tensors (hg.autograd.forward_ad), hg.func.jvp, fwdcheck, and
the mixed orders against reverse over reverse — PyTorch's names, the C++ engine underneath."""

import numpy as np
import pytest

import handgrad as hg

fwAD = hg.autograd.forward_ad


def t64(a, requires_grad=False):
    return hg.tensor(np.asarray(a, dtype=np.float64), dtype=hg.float64, requires_grad=requires_grad)


def test_dual_level_make_dual_unpack_dual():
    x, u = t64([1.0, 2.0, 3.0]), t64([0.5, -1.0, 2.0])
    with fwAD.dual_level():
        xd = fwAD.make_dual(x, u)
        y = hg.exp(xd) * xd
        primal, tangent = fwAD.unpack_dual(y)
        assert isinstance(fwAD.unpack_dual(y), fwAD.UnpackedDualTensor)
        expect = (np.exp([1.0, 2.0, 3.0]) * (1 + np.array([1.0, 2.0, 3.0]))) * np.array([0.5, -1.0, 2.0])
        np.testing.assert_allclose(tangent.numpy(), expect, rtol=1e-14)
        np.testing.assert_allclose(primal.numpy(), np.exp([1.0, 2.0, 3.0]) * [1.0, 2.0, 3.0], rtol=1e-15)
        assert fwAD.unpack_dual(x).tangent is None
    assert fwAD.unpack_dual(y).tangent is None  # the level closed


def test_refusals_are_errors_with_the_reason():
    x = t64([1.0, 2.0])
    with pytest.raises(hg.Error, match="no dual level is open"):
        fwAD.make_dual(x, t64([1.0, 1.0]))
    with fwAD.dual_level():
        with pytest.raises(hg.Error, match="already open"):
            with fwAD.dual_level():
                pass
        with pytest.raises(hg.Error, match="must match the primal"):
            fwAD.make_dual(x, t64([1.0, 1.0, 1.0]))


def test_func_jvp_against_the_formula_and_finite_differences():
    rng = np.random.default_rng(0)
    W = t64(rng.standard_normal((4, 5)))
    x0, u = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    f = lambda x: hg.softmax(hg.tanh(x @ W), dim=-1)  # noqa: E731
    out, dot = hg.func.jvp(f, (t64(x0),), (t64(u),))
    eps = 1e-6
    numeric = (f(t64(x0 + eps * u)).numpy() - f(t64(x0 - eps * u)).numpy()) / (2 * eps)
    np.testing.assert_allclose(dot.numpy(), numeric, atol=1e-8)
    np.testing.assert_allclose(out.numpy(), f(t64(x0)).numpy(), rtol=1e-15)
    # several outputs, one of which does not move: zeros
    outs, dots = hg.func.jvp(lambda a, b: (a * b, b * 2.0), (t64(x0), t64(u)), (t64(u), None))
    np.testing.assert_allclose(dots[0].numpy(), u * u, rtol=1e-15)
    assert not dots[1].numpy().any()
    with pytest.raises(hg.Error, match="tangents for"):
        hg.func.jvp(f, (t64(x0),), ())


def test_fwdcheck_passes_a_right_rule_and_reports_its_fields():
    rng = np.random.default_rng(1)
    x = t64(rng.standard_normal((3, 4)), requires_grad=True)
    assert hg.autograd.fwdcheck(lambda a: hg.log_softmax(a * a, dim=-1), [x])
    report = hg._C._fwdcheck(lambda a: hg.softmax(a, dim=0), [x], 1e-6, 1e-5, 1e-3, True)
    assert report.passed and report.transpose_passed and report.transpose_rel_err < 1e-10


def test_forward_over_reverse_is_the_hessian_vector_product():
    rng = np.random.default_rng(2)
    W = t64(rng.standard_normal((4, 5)))
    x0, v = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    loss = lambda x: hg.sum(hg.tanh(x @ W) ** 2)  # noqa: E731
    x = t64(x0, requires_grad=True)
    (g,) = hg.autograd.grad(loss(x), x, create_graph=True)
    (hv_rr,) = hg.autograd.grad(hg.sum(g * t64(v)), x)
    _, hv_fr = hg.func.jvp(lambda a: hg.autograd.grad(loss(a), a)[0], (x,), (t64(v),))
    np.testing.assert_allclose(hv_fr.numpy(), hv_rr.numpy(), atol=1e-12)
