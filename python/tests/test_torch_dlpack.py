"""With PyTorch: DLPack both ways (hg.from_dlpack(torch_tensor) and torch.from_dlpack(hg_tensor) share
memory) and Section 3's example matching torch.
Runs where torch imports (bench/setup-peer's environment; ctest python_torch_compare)."""

import numpy as np
import pytest

import handgrad as hg

torch = pytest.importorskip("torch")


def test_handgrad_views_a_torch_tensor():
    t = torch.arange(12, dtype=torch.float64).reshape(3, 4)
    x = hg.from_dlpack(t)
    assert x.data_ptr() == t.data_ptr() and x.shape == (3, 4) and x.dtype == hg.float64
    t[1, 2] = -5.0
    assert x[1, 2].item() == -5.0  # a torch write seen by handgrad
    x.fill_(1.5)
    assert bool((t == 1.5).all())  # a handgrad write seen by torch
    s = hg.from_dlpack(t.t())  # strides travel
    assert s.stride() == (1, 4) and s.data_ptr() == t.data_ptr()


def test_torch_views_a_handgrad_tensor():
    x = hg.randn(2, 5, seed=3, dtype=hg.float32)
    t = torch.from_dlpack(x)
    assert t.data_ptr() == x.data_ptr() and t.dtype == torch.float32 and tuple(t.shape) == (2, 5)
    np.testing.assert_array_equal(t.numpy(), x.numpy())
    t.mul_(2.0)
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    del x  # torch's view keeps the memory alive
    assert torch.isfinite(t).all()
    b = torch.from_dlpack(hg.tensor([True, False]))
    assert b.dtype == torch.bool and b.tolist() == [True, False]


def test_gradients_on_shared_memory_agree():
    t = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    x = hg.from_dlpack(t.detach()).requires_grad_()
    (x.tanh() * x).sum().backward()
    (t.tanh() * t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-15)


def test_the_three_token_example_matches_torch():
    """Section 3's example, L = o[2, 1], run by both libraries: every gradient to 1e-12."""
    Q = [[1., 0.], [0., 1.], [1., 1.]]
    V = [[1., 0.], [0., 2.], [3., 3.]]
    grads = {}
    for lib in (hg, torch):
        q = lib.tensor(Q, dtype=lib.float64, requires_grad=True)
        k = q.detach().clone().requires_grad_()
        v = lib.tensor(V, dtype=lib.float64, requires_grad=True)
        o = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        o[2, 1].backward()
        grads[lib.__name__] = [np.array(t.grad.tolist()) for t in (q, k, v)]
    assert [round(x, 3) for x in grads["handgrad"][0][2]] == [0.001, 0.352]
    for mine, theirs in zip(grads["handgrad"], grads["torch"]):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-12)
