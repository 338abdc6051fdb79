"""backward, autograd.grad, grad_fn, gradcheck, no_grad and errors."""

import math
import threading

import numpy as np
import pytest

import handgrad as hg
import handgrad.nn.functional as F

rng = np.random.default_rng(1)


def f64(a, requires_grad=False):
    return hg.tensor(a, dtype=hg.float64, requires_grad=requires_grad)


def test_backward_accumulates_and_retains():
    x = f64([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()                    # dy/dx = 2x
    y.backward(retain_graph=True)
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    y.backward()                         # accumulates, as in PyTorch
    assert x.grad.tolist() == [4.0, 8.0, 12.0]
    with pytest.raises(hg.Error, match="second time"):
        y.backward()
    x.grad = None
    assert x.grad is None
    z = x * 3
    z.backward(gradient=f64([1.0, 0.0, 2.0]))
    assert x.grad.tolist() == [3.0, 0.0, 6.0]
    with pytest.raises(hg.Error, match="not a scalar"):
        (x * 3).backward()


def test_create_graph_second_derivative():
    x = f64([0.5, -1.0], requires_grad=True)
    y = (x ** 3).sum()
    (gx,) = hg.autograd.grad(y, x, create_graph=True)       # 3x²
    np.testing.assert_allclose(gx.detach().numpy(), [0.75, 3.0], rtol=1e-15)
    (hx,) = hg.autograd.grad(gx.sum(), x)                    # 6x
    np.testing.assert_allclose(hx.numpy(), [3.0, -6.0], rtol=1e-15)
    assert x.grad is None                                    # grad() touches no .grad
    # backward(create_graph=True) leaves a differentiable .grad
    w = f64([2.0], requires_grad=True)
    (w ** 2).sum().backward(create_graph=True)
    assert w.grad.requires_grad and w.grad.tolist() == [4.0]


def test_autograd_grad_options():
    a = f64([1.0, 2.0], requires_grad=True)
    b = f64([3.0, 4.0], requires_grad=True)
    unused = f64([0.0], requires_grad=True)
    h = a * b                                   # an intermediate input
    out = (h * a).sum()
    ga, gh = hg.autograd.grad([out], [a, h], retain_graph=True)
    assert ga.tolist() == [6.0, 16.0]           # d(a²b)/da = 2ab
    assert gh.tolist() == [1.0, 2.0]            # d(h a)/dh = a
    ga2, gu = hg.autograd.grad(out, (a, unused), allow_unused=True, retain_graph=True)
    assert gu is None and ga2.tolist() == [6.0, 16.0]
    with pytest.raises(hg.Error):
        hg.autograd.grad(out, [unused], retain_graph=True)
    (gb,) = hg.autograd.grad([h], [b], grad_outputs=[f64([1.0, -1.0])])
    assert gb.tolist() == [1.0, -2.0]


def test_grad_fn_and_next_functions():
    x = f64([1.0], requires_grad=True)
    c = f64([2.0])
    y = (x * c).exp()
    assert y.grad_fn.name() == "exp"
    ((mul, nr),) = y.grad_fn.next_functions
    assert mul.name() == "mul" and nr == 0
    (leaf, _), (const, _) = mul.next_functions
    assert leaf.name() == "AccumulateGrad" and leaf.variable.tolist() == [1.0] and const is None
    assert x.grad_fn is None


def test_gradcheck_softmax_and_attention():
    x = f64(rng.standard_normal((3, 5)), requires_grad=True)
    assert hg.autograd.gradcheck(lambda t: F.softmax(t, dim=-1), (x,))
    assert hg.autograd.gradcheck(lambda t: t.softmax(0), x, eps=1e-6, atol=1e-5, rtol=1e-3)
    q, k, v = (f64(rng.standard_normal((2, 4, 3)), requires_grad=True) for _ in range(3))
    assert hg.autograd.gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v))
    mask = hg.tensor(rng.random((4, 4)) > 0.3)
    assert hg.autograd.gradcheck(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                                 (q, k, v, mask))
    assert hg.autograd.gradgradcheck(lambda t: (t * t).tanh(), (x,))


def test_gradcheck_reports_the_worst_element():
    x = f64([0.5, 1.5], requires_grad=True)

    def wrong(t):  # a backward that disagrees with its forward: forward t, gradient 2t via the detour
        return t * t - (t.detach() * t.detach()) + t.detach()  # forward t, analytic 2t, numeric 1

    with pytest.raises(hg.autograd.GradcheckError, match="worst element") as err:
        hg.autograd.gradcheck(wrong, (x,))
    assert isinstance(err.value, hg.Error) and "input 0" in str(err.value)
    assert hg.autograd.gradcheck(wrong, (x,), raise_exception=False) is False


def test_gradcheck_passes_python_errors_through():
    x = f64([1.0], requires_grad=True)

    def broken(t):
        raise ValueError("from the user's function")

    with pytest.raises(ValueError, match="user's function"):
        hg.autograd.gradcheck(broken, (x,))
    with pytest.raises(hg.Error, match="one Tensor"):
        hg.autograd.gradcheck(lambda t: 3.0, (x,))


def test_no_grad():
    x = f64([1.0, 2.0], requires_grad=True)
    assert hg.is_grad_enabled()
    with hg.no_grad():
        assert not hg.is_grad_enabled()
        y = x * 2
        with hg.enable_grad():
            assert (x * 2).requires_grad
        assert not hg.is_grad_enabled()
    assert hg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and y.tolist() == [2.0, 4.0]

    @hg.no_grad()
    def doubled(t):
        return t * 2

    assert not doubled(x).requires_grad and hg.is_grad_enabled()
    with hg.set_grad_enabled(False):
        assert not (x + 1).requires_grad
    # an error inside still restores grad mode
    with pytest.raises(ZeroDivisionError):
        with hg.no_grad():
            1 / 0
    assert hg.is_grad_enabled()
    # in-place writes to a leaf that requires grad are allowed only under no_grad
    with pytest.raises(hg.Error):
        x.fill_(0.0)
    with hg.no_grad():
        x.fill_(0.0)
    assert x.detach().tolist() == [0.0, 0.0]


def test_errors_are_hg_error_with_the_op_name():
    with pytest.raises(hg.Error, match="matmul") as err:
        hg.ones(2, 3) @ hg.ones(2, 3)
    assert isinstance(err.value, RuntimeError)
    with pytest.raises(hg.Error, match="add"):
        hg.ones(2, 3) + hg.ones(4)
    with pytest.raises(RuntimeError, match="permute"):
        hg.ones(2, 3).permute(0, 0)
    with pytest.raises(hg.Error, match="requires_grad"):
        (hg.ones(2) * 2).sum().backward()
    with pytest.raises(TypeError):
        hg.ones(2) + "text"


def test_backward_releases_the_gil():
    # two threads run independent graphs' forward and backward at once (the GIL is released in
    # matmul, attention and backward); each gets its own right answer
    results = {}

    def work(seed):
        a = hg.randn(64, 64, seed=seed, dtype=hg.float64, requires_grad=True)
        for _ in range(20):
            (a @ a).sum().backward()
        results[seed] = a.grad.numpy().copy()

    threads = [threading.Thread(target=work, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for seed in (1, 2):
        a = hg.randn(64, 64, seed=seed, dtype=hg.float64).numpy()
        ones = np.ones((64, 64))
        np.testing.assert_allclose(results[seed], 20 * (ones @ a.T + a.T @ ones), rtol=1e-12)


def test_detect_anomaly_names_the_op_that_made_a_nan():
    x = hg.tensor([-1.0, 4.0], dtype=hg.float64, requires_grad=True)
    assert not hg.autograd.is_anomaly_enabled()
    with hg.autograd.detect_anomaly():
        assert hg.autograd.is_anomaly_enabled()
        with pytest.raises(hg.Error, match=r"sqrt.*NaN"):
            x.sqrt()
    assert not hg.autograd.is_anomaly_enabled()
    assert math.isnan(x.sqrt()[0].item())  # off again: NaN flows as arithmetic makes it

    @hg.autograd.detect_anomaly()
    def f():
        return hg.autograd.is_anomaly_enabled()
    assert f() and not hg.autograd.is_anomaly_enabled()


def test_a_failed_gradcheck_carries_its_report():
    x = hg.tensor([0.5, 1.5], dtype=hg.float64, requires_grad=True)
    bad = hg.autograd.GradcheckError
    with pytest.raises(bad) as info:
        # a "gradient" the finite difference disagrees with: a hook doubles it
        def f(t):
            y = t * t
            if y.requires_grad:  # not in the finite differences, which run without grad
                y.register_hook(lambda g: g * 2.0)
            return y
        hg.autograd.gradcheck(f, [x])
    assert info.value.report.passed is False and "input 0" in info.value.report.worst


def test_set_detect_anomaly_switches_it_both_ways():
    with hg.autograd.set_detect_anomaly(True):
        assert hg.autograd.is_anomaly_enabled()
        with hg.autograd.set_detect_anomaly(False):
            assert not hg.autograd.is_anomaly_enabled()
        assert hg.autograd.is_anomaly_enabled()
    assert not hg.autograd.is_anomaly_enabled()
