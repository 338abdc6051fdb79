"""A small program that uses handgrad as README.md does, with type annotations: test_typing.py runs
mypy on it, so the shipped _C.pyi, py.typed and the package's annotations must let it check."""

import handgrad as hg
import handgrad.nn.functional as F


def attention_gradient() -> hg.Tensor:
    """README's example: the gradient of one attention output with respect to the queries."""
    q = hg.tensor([[1., 0.], [0., 1.], [1., 1.]], dtype=hg.float64, requires_grad=True)
    k = q.detach().clone().requires_grad_()
    v = hg.tensor([[1., 0.], [0., 2.], [3., 3.]], dtype=hg.float64, requires_grad=True)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    o[2, 1].backward()
    grad = q.grad
    assert grad is not None
    return grad[2]


def train(steps: int = 3) -> float:
    """A two-layer model fitted for a few steps with AdamW: the loss it ends with."""
    hg.manual_seed(0)
    model = hg.nn.Sequential(hg.nn.Linear(4, 8), hg.nn.ReLU(), hg.nn.Linear(8, 3))
    optimizer = hg.optim.AdamW(model.parameters(), lr=1e-2)
    x = hg.randn(16, 4)
    target = hg.randint(0, 3, (16,))
    loss = F.cross_entropy(model(x), target)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), target)
        loss.backward()
        optimizer.step()
    return loss.item()


def ops() -> list[float]:
    """Tensors, operators, reductions and a gradient by hg.autograd.grad."""
    a = hg.ones(2, 3, requires_grad=True)
    b = hg.arange(6, dtype=hg.float32).reshape(2, 3)
    c = (a * b + 1.0).exp().sum(dim=1).mean()
    (ga,) = hg.autograd.grad(c, [a])
    with hg.no_grad():
        d = hg.matmul(a, b.t()) - hg.zeros(2, 2)
    shape: tuple[int, ...] = tuple(d.shape)
    return [float(c), float(ga.sum()), float(len(shape))]


if __name__ == "__main__":
    print(attention_gradient(), train(), ops())
