"""hg.optim's SGD and AdamW against NumPy float64 formulas (PyTorch's update rules), parameters
without a gradient, closures and the optimizers' errors."""

import numpy as np
import pytest

import handgrad as hg


def np_of(t):
    return np.array(t.detach().numpy(), dtype=np.float64)


def test_sgd_with_momentum_matches_numpy():
    p = hg.tensor([1.0, -2.0, 0.5], dtype=hg.float64, requires_grad=True)
    opt = hg.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01)
    assert hg.nn.SGD is hg.optim.SGD and "lr=0.1" in repr(opt)
    ref, buf = np.array([1.0, -2.0, 0.5]), None
    for _ in range(3):
        opt.zero_grad()
        (p * p * p).sum().backward()  # g = 3 p²
        opt.step()
        g = 3 * ref**2 + 0.01 * ref
        buf = g if buf is None else 0.9 * buf + g
        ref = ref - 0.1 * buf
    np.testing.assert_allclose(np_of(p), ref, rtol=0, atol=1e-14)


def test_adamw_matches_torch_formula_in_numpy():
    p = hg.tensor([[0.3, -1.2], [2.0, 0.0]], dtype=hg.float64, requires_grad=True)
    opt = hg.optim.AdamW([p], lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)
    assert hg.nn.AdamW is hg.optim.AdamW
    ref = np_of(p)
    m = np.zeros_like(ref)
    v = np.zeros_like(ref)
    for t in range(1, 4):
        opt.zero_grad()
        (p.exp() * 0.5).sum().backward()
        opt.step()
        g = 0.5 * np.exp(ref)
        ref = ref * (1 - 0.01 * 0.1)
        m = 0.8 * m + 0.2 * g
        v = 0.99 * v + 0.01 * g * g
        ref = ref - 0.01 / (1 - 0.8**t) * m / (np.sqrt(v) / np.sqrt(1 - 0.99**t) + 1e-6)
    np.testing.assert_allclose(np_of(p), ref, rtol=0, atol=1e-14)
    assert opt.steps == 3
    np.testing.assert_allclose(np_of(opt.state_of(0)["exp_avg"]), m, atol=1e-14)


def test_optimizer_skips_parameters_without_gradient_and_closure():
    a = hg.tensor([1.0], requires_grad=True)
    b = hg.tensor([1.0], requires_grad=True)
    opt = hg.optim.AdamW([a, b], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (a * 2.0).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 2.0
    assert a.item() < 1.0 and b.item() == 1.0


def test_optimizer_errors():
    with pytest.raises(hg.Error, match="AdamW.*lr"):
        hg.optim.AdamW([hg.zeros(2, requires_grad=True)], lr=-1.0)
    with pytest.raises(NotImplementedError, match="nesterov"):
        hg.optim.SGD([hg.zeros(2, requires_grad=True)], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="empty"):
        hg.optim.SGD([], lr=0.1)
    p = hg.zeros(2, 2, requires_grad=True)
    with pytest.raises(hg.Error, match="listed twice"):
        hg.optim.SGD([p, p], lr=0.1)
