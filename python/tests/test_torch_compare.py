"""The same lambdas on handgrad and PyTorch, where PyTorch is installed (skipped otherwise):
one piece of code, two libraries, the same numbers and gradients."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import handgrad as hg  # noqa: E402

rng = np.random.default_rng(3)

CASES = [
    ("arithmetic", lambda m, a, b: ((a + 1) * b - 2 / (b * b + 1) + 3 * a ** 2 - (-a)).sum()),
    ("matmul tanh", lambda m, a, b: (a @ b.transpose(0, 1)).tanh().mean()),
    ("softmax", lambda m, a, b: (m.nn.functional.softmax(a, dim=-1) * b).sum()),
    ("log_softmax", lambda m, a, b: (m.nn.functional.log_softmax(a, dim=0) * b).sum()),
    ("exp log relu", lambda m, a, b: ((a.exp() + 1).log() * b.relu()).sum(dim=1).max()),
    ("views", lambda m, a, b: (a.view(4, 3).permute(1, 0)[1:, ::2] * b.reshape(3, 4)[:, 1:3]).sum()),
    ("attention", lambda m, a, b: m.nn.functional.scaled_dot_product_attention(
        a.unsqueeze(0), b.unsqueeze(0), b.unsqueeze(0), is_causal=True).pow(2).sum()),
    ("cross_entropy", lambda m, a, b: m.nn.functional.cross_entropy(a, m.tensor([0, 3, -100]))),
]


@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_same_lambda_same_numbers(name, fn):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    results = []
    for m in (hg, torch):
        ta = m.tensor(a, dtype=m.float64, requires_grad=True)
        tb = m.tensor(b, dtype=m.float64, requires_grad=True)
        out = fn(m, ta, tb)
        out.backward()
        results.append([out.item()] + [np.zeros(t.shape) if t.grad is None else t.grad.numpy() for t in (ta, tb)])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=name)
