"""hg.linalg and hg.norm: norms against NumPy with their gradient against finite differences (0
where the norm is 0, as PyTorch's), singular values and ranks against NumPy's LAPACK, and the
refusals."""
import math

import numpy as np
import pytest

import handgrad as hg

try:
    import torch
except ImportError:
    torch = None

rng = np.random.default_rng(2)


@pytest.mark.parametrize("ord", [1, 2, 3, 0.5, math.inf, -math.inf, 0])
def test_vector_norm_against_numpy(ord):
    a = rng.normal(size=(3, 4))
    x = hg.tensor(a, dtype=hg.float64, requires_grad=True)
    np.testing.assert_allclose(hg.linalg.vector_norm(x, ord, dim=1).detach().numpy(), np.linalg.norm(a, ord, axis=1),
                               rtol=1e-13)
    np.testing.assert_allclose(hg.linalg.vector_norm(x, ord).item(), np.linalg.norm(a.ravel(), ord), rtol=1e-13)
    if ord != 0:
        assert hg.autograd.gradcheck(lambda x: hg.linalg.vector_norm(x, ord, dim=(0,), keepdim=True), (x,))


def test_norm_forms_and_zero():
    a = rng.normal(size=(2, 3, 4))
    x = hg.tensor(a, dtype=hg.float64)
    np.testing.assert_allclose(hg.norm(x).item(), np.sqrt((a ** 2).sum()), rtol=1e-14)
    np.testing.assert_allclose(x.norm(dim=-1).numpy(), np.linalg.norm(a, axis=-1), rtol=1e-14)
    np.testing.assert_allclose(x.norm(p=1, dim=(0, 2)).numpy(), np.abs(a).sum((0, 2)), rtol=1e-14)
    np.testing.assert_allclose(hg.linalg.norm(x[0], "fro").item(), np.linalg.norm(a[0], "fro"), rtol=1e-14)
    z = hg.zeros(2, 3, dtype=hg.float64, requires_grad=True)
    z.norm().backward()
    assert z.grad.tolist() == [[0.0] * 3] * 2  # PyTorch's 0, not NaN
    np.testing.assert_allclose(hg.linalg.norm(x[0].detach(), "nuc").item(), np.linalg.norm(a[0], "nuc"), rtol=1e-13)
    with pytest.raises(hg.Error, match="nuc"):  # singular values carry no gradient here
        hg.linalg.norm(x[0].detach().requires_grad_(), "nuc")
    with pytest.raises(TypeError):
        hg.linalg.vector_norm(x, "two")
    if torch is not None:
        t = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
        t.norm().backward()
        assert t.grad.tolist() == z.grad.tolist()


def test_svdvals_and_rank_against_numpy():
    a = rng.normal(size=(2, 10, 3)) @ rng.normal(size=(3, 7))  # rank 3
    s = hg.linalg.svdvals(hg.tensor(a, dtype=hg.float64))
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-12, atol=1e-12 * 50)
    assert hg.linalg.matrix_rank(hg.tensor(a, dtype=hg.float64)).tolist() == [3, 3]
    assert hg.linalg.matrix_rank(hg.tensor(a)).tolist() == list(np.linalg.matrix_rank(a.astype(np.float32)))
    assert hg.linalg.matrix_rank(hg.tensor(a), atol=1e9).tolist() == [0, 0]
    with pytest.raises(hg.Error, match="svdvals"):
        hg.linalg.svdvals(hg.tensor(a, dtype=hg.float64, requires_grad=True))
    with pytest.raises(hg.Error, match="not a matrix"):
        hg.linalg.matrix_rank(hg.ones(3))
