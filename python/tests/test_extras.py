"""PyTorch's smaller conveniences (python/handgrad/_extras.py) and advanced indexing
(_indexing.py): values against NumPy, gradients against float64 finite differences, and PyTorch
where it imports; each public name is used here at least once."""
import math

import numpy as np
import pytest

import handgrad as hg

try:
    import torch
except ImportError:
    torch = None

rng = np.random.default_rng(9)


def f64(a, grad=False):
    return hg.tensor(np.asarray(a, dtype=np.float64), dtype=hg.float64, requires_grad=grad)


def test_products():
    a, b, c = rng.normal(size=(3, 4)), rng.normal(size=(4, 5)), rng.normal(size=(2, 3, 4))
    v = rng.normal(size=4)
    np.testing.assert_allclose(hg.mm(f64(a), f64(b)).numpy(), a @ b, rtol=1e-13)
    np.testing.assert_allclose(hg.bmm(f64(c), f64(c).transpose(1, 2)).numpy(), c @ c.transpose(0, 2, 1), rtol=1e-13)
    np.testing.assert_allclose(hg.dot(f64(v), f64(v)).item(), v @ v, rtol=1e-13)
    np.testing.assert_allclose(hg.outer(f64(v), f64(v[:2])).numpy(), np.outer(v, v[:2]), rtol=1e-13)
    np.testing.assert_allclose(hg.tensordot(f64(c), f64(b), dims=1).numpy(), np.tensordot(c, b, 1), rtol=1e-13)
    np.testing.assert_allclose(hg.tensordot(f64(c), f64(c), dims=([1, 2], [1, 2])).numpy(),
                               np.tensordot(c, c, ([1, 2], [1, 2])), rtol=1e-13)
    for eq, ops in [("ij,jk->ik", (a, b)), ("bij,bkj->bik", (c, c)), ("ij->j", (a,)), ("i,i", (v, v)),
                    ("ij,kj", (a, a)), ("bij,jk->bk", (c, b))]:
        np.testing.assert_allclose(hg.einsum(eq, *[f64(o) for o in ops]).numpy(), np.einsum(eq, *ops), rtol=1e-12,
                                   err_msg=eq)
    assert hg.autograd.gradcheck(lambda x, y: hg.einsum("bij,jk->bik", x, y), (f64(c, True), f64(b, True)))
    np.testing.assert_allclose(hg.kron(f64(a[:2, :2]), f64(b[:2, :3])).numpy(), np.kron(a[:2, :2], b[:2, :3]))
    np.testing.assert_allclose(hg.trace(f64(a)).item(), np.trace(a))
    np.testing.assert_allclose(hg.cross(f64(c[0, :, :3]), f64(c[1, :, :3]), dim=1).numpy(),
                               np.cross(c[0, :, :3], c[1, :, :3]), rtol=1e-13)
    d = hg.cdist(f64(a), f64(a[:2]))
    np.testing.assert_allclose(d.numpy(), np.sqrt(((a[:, None] - a[None, :2]) ** 2).sum(-1)), rtol=1e-13)
    with pytest.raises(hg.Error, match="mm"):
        hg.mm(f64(v), f64(b))
    np.testing.assert_array_equal(hg.einsum("ii->i", f64(a[:, :3])).numpy(), np.diag(a[:, :3]))  # a diagonal
    with pytest.raises(hg.Error, match="sizes differ"):
        hg.einsum("ii->i", f64(a))
    x = f64(a)
    assert x.t().shape == (4, 3) and x.mT.shape == (4, 3) and x.mm(f64(b)).shape == (3, 5)


def test_sorting():
    a = rng.normal(size=(3, 5))
    a[0, 1] = a[0, 3]  # a tie: stable order
    x = f64(a, True)
    s = hg.sort(x, 1)
    np.testing.assert_array_equal(s.values.detach().numpy(), np.sort(a, 1))
    np.testing.assert_array_equal(s.indices.numpy(), np.argsort(a, 1, kind="stable"))
    np.testing.assert_array_equal(x.sort(0, descending=True).values.detach().numpy(), -np.sort(-a, 0))
    np.testing.assert_array_equal(hg.argsort(x, 1).numpy(), np.argsort(a, 1, kind="stable"))
    np.testing.assert_array_equal(hg.msort(x).detach().numpy(), np.sort(a, 0))
    t = x.topk(2)
    np.testing.assert_array_equal(t.values.detach().numpy(), -np.sort(-a, 1)[:, :2])
    assert hg.topk(x, 1, dim=0).indices.shape == (1, 5)
    untied = f64(rng.normal(size=(3, 5)), True)  # away from ties, where the order (and the gradient) jumps
    assert hg.autograd.gradcheck(lambda x: x.topk(3, dim=1).values, (untied,))
    if torch is not None:
        tt = torch.tensor(a)
        assert torch.topk(tt, 2).indices.tolist() == t.indices.tolist()
    with pytest.raises(hg.Error, match="topk"):
        x.topk(9)


def test_joins_shapes_and_grids():
    a, v = rng.normal(size=(2, 3)), rng.normal(size=3)
    for name in ("hstack", "vstack", "dstack", "column_stack"):
        np.testing.assert_array_equal(getattr(hg, name)([f64(a), f64(a)]).numpy(), getattr(np, name)([a, a]), err_msg=name)
    assert hg.atleast_1d(f64(1.0)).shape == (1,) and hg.atleast_2d(f64(v)).shape == (1, 3)
    assert hg.atleast_3d(f64(a)).shape == (2, 3, 1)
    assert hg.broadcast_to(f64(v), (2, 3)).shape == (2, 3)
    assert [u.tolist() for u in hg.unbind(f64(a), 1)] == [list(col) for col in a.T]
    idx = hg.tensor([[2, 0], [1, 1]])
    np.testing.assert_array_equal(hg.take_along_dim(f64(a), idx, 1).numpy(), np.take_along_axis(a, idx.numpy(), 1))
    for ind in ("ij", "xy"):
        for g, w in zip(hg.meshgrid(f64(v), f64(v[:2]), indexing=ind), np.meshgrid(v, v[:2], indexing=ind)):
            np.testing.assert_array_equal(g.numpy(), w)
    assert hg.cartesian_prod(f64(v[:2]), f64(v)).shape == (6, 2)
    x = f64(a)
    assert x.view_as(f64(a.T)).shape == (3, 2) and x.reshape_as(f64(a.T)).shape == (3, 2)
    assert f64(v).expand_as(x).shape == (2, 3) and x.nelement() == 6 and x.swapaxes(0, 1).shape == (3, 2)
    assert x.new_zeros(2, 2).dtype == hg.float64 and x.new_ones((3,)).tolist() == [1, 1, 1]
    assert x.new_full((2,), 3.0).tolist() == [3.0, 3.0] and x.new_tensor([1, 2]).dtype == hg.float64
    assert x.type_as(hg.ones(1)).dtype == hg.float32 and x.new_empty(2).shape == (2,)
    assert hg.transpose(x, 0, 1).shape == (3, 2) and hg.permute(x, (1, 0)).shape == (3, 2)
    assert hg.reshape(x, (3, 2)).shape == (3, 2) and hg.squeeze(hg.unsqueeze(x, 0)).shape == (2, 3)
    assert hg.t(x).shape == (3, 2) and hg.numel(x) == 6 and hg.clone(x).tolist() == x.tolist()
    assert hg.chunk(x, 3, 1)[2].shape == (2, 1) and hg.split(x, [1, 2], 1)[1].shape == (2, 2)


def test_reductions_and_elementwise():
    a = rng.normal(size=(3, 4))
    x = f64(a, True)
    np.testing.assert_allclose(hg.cumprod(x, 1).detach().numpy(), np.cumprod(a, 1), rtol=1e-13)
    assert hg.autograd.gradcheck(lambda x: x.cumprod(0), (x,))
    s, m = hg.std_mean(x, 1)
    np.testing.assert_allclose(s.detach().numpy(), a.std(1, ddof=1), rtol=1e-13)
    np.testing.assert_allclose(m.detach().numpy(), a.mean(1), rtol=1e-13)
    np.testing.assert_allclose(hg.var_mean(x)[0].item(), a.var(ddof=1), rtol=1e-13)
    mm = hg.aminmax(x, dim=0)
    np.testing.assert_array_equal(mm.min.detach().numpy(), a.min(0))
    assert hg.count_nonzero(x > 0).item() == (a > 0).sum()
    assert hg.nonzero(x > 0).tolist() == np.argwhere(a > 0).tolist()
    assert [t.tolist() for t in hg.where(x > 0)] == [list(r) for r in np.nonzero(a > 0)]
    assert hg.allclose(x, x + 1e-9) and not hg.equal(x, x + 1) and hg.isclose(x, x).all()
    z = f64([math.nan, math.inf, -math.inf, 1.0])
    assert hg.nan_to_num(z, posinf=5.0).tolist()[:2] == [0.0, 5.0]
    y = f64(rng.normal(size=(3, 4)), True)
    np.testing.assert_allclose(hg.atan2(x, y).detach().numpy(), np.arctan2(a, y.detach().numpy()), rtol=1e-13)
    assert hg.autograd.gradcheck(hg.atan2, (x, y))
    np.testing.assert_allclose(hg.hypot(x, y).detach().numpy(), np.hypot(a, y.detach().numpy()), rtol=1e-13)
    p = f64([0.2, 0.7])
    np.testing.assert_allclose(hg.logit(p).numpy(), np.log(p.numpy() / (1 - p.numpy())), rtol=1e-13)
    assert hg.xlogy(f64([0.0, 2.0]), f64([0.0, 3.0])).tolist() == [0.0, 2 * math.log(3.0)]
    np.testing.assert_allclose(hg.sinc(f64([0.0, 0.5])).numpy(), np.sinc([0.0, 0.5]), rtol=1e-13)
    np.testing.assert_array_equal(hg.fmod(f64([-7.5, 7.5]), 2.0).numpy(), np.fmod([-7.5, 7.5], 2.0))
    assert hg.fmod(hg.tensor([-7, 7]), 3).tolist() == [-1, 1]
    assert hg.round(f64([1.2345, 2.5]), decimals=2).tolist() == [1.23, 2.5] and f64([2.5]).round().item() == 2.0
    hg.manual_seed(0)
    draws = hg.bernoulli(hg.full((4000,), 0.3))
    assert abs(draws.mean().item() - 0.3) < 0.03
    assert hg.argmax(x).item() == a.argmax() and hg.sqrt(f64([4.0])).item() == 2.0
    assert hg.max(x, y).shape == (3, 4) and x.sum(axis=0).shape == (4,) and hg.mean(x, axis=1).shape == (3,)
    filled = x.index_fill(1, hg.tensor([0, 2]), -1.0)
    assert filled[:, 0].tolist() == [-1.0] * 3 and filled[:, 1].tolist() == a[:, 1].tolist()
    added = hg.index_add(x, 0, hg.tensor([0, 0]), f64(np.ones((2, 4))))
    np.testing.assert_allclose(added.detach().numpy()[0], a[0] + 2)
    if torch is not None:
        tx = torch.tensor(a)
        assert torch.index_add(tx, 0, torch.tensor([0, 0]), torch.ones(2, 4, dtype=torch.float64)).tolist() == added.tolist()


def test_advanced_indexing_reads_and_writes():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = f64(a, True)
    for idx in [(slice(None), [0, 2]), ([0, 1], [1, 2]), ([[0], [1]], [2, 0]), (hg.tensor([True, False]),),
                (Ellipsis, [3, 0]), (1, [0, 0, 2], slice(1, 3)), (hg.tensor([[0, 1], [1, 1]]),)]:
        np_idx = tuple(i.numpy() if isinstance(i, hg.Tensor) else i for i in idx)
        got = x[idx if len(idx) > 1 else idx[0]]
        np.testing.assert_array_equal(got.detach().numpy(), a[np_idx if len(np_idx) > 1 else np_idx[0]], err_msg=str(idx))
    x[:, [0, 0, 2]].sum().backward()
    want = np.zeros_like(a)
    np.add.at(want, (slice(None), [0, 0, 2]), 1.0)
    np.testing.assert_array_equal(x.grad.numpy(), want)  # a row read twice gets two gradients
    z = hg.zeros(3, 4)
    z[[0, 2], [1, 3]] = 5.0
    z[hg.tensor([False, True, False])] = hg.tensor([1.0, 2.0, 3.0, 4.0])
    z[z > 4] = -1.0
    z[[0, 0], [0, 0]] = hg.tensor([7.0, 8.0])  # a place written twice: the last write, as PyTorch's on the CPU
    assert z.tolist() == [[8.0, -1.0, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, -1.0]]
    if torch is not None:
        t = torch.zeros(3, 4)
        t[[0, 2], [1, 3]] = 5.0
        t[torch.tensor([False, True, False])] = torch.tensor([1.0, 2.0, 3.0, 4.0])
        t[t > 4] = -1.0
        assert t[1:].tolist() == z[1:].tolist()
    with pytest.raises(IndexError, match="out of bounds"):
        x[:, [5]]
    with pytest.raises(IndexError, match="int64 or bool"):
        x[hg.tensor([0.0])]


def test_in_place_forms_write_into_the_tensor_and_refuse_a_graph_leaf():
    x = hg.tensor([[1.0, -2.0], [3.0, -4.0]])
    same = x.add_(1).mul_(2).clamp_(min=0.0)
    assert same is x and x.tolist() == [[4.0, 0.0], [8.0, 0.0]]
    x.masked_fill_(x > 5, -1.0).neg_()
    assert x.tolist() == [[-4.0, -0.0], [1.0, -0.0]]
    x.scatter_(1, hg.tensor([[1], [0]]), 9.0).tril_()
    assert x.tolist() == [[-4.0, 0.0], [9.0, -0.0]]
    leaf = hg.ones(2, requires_grad=True)
    with pytest.raises(hg.Error):
        leaf.add_(1)
    with hg.no_grad():
        leaf.mul_(3)
    assert leaf.tolist() == [3.0, 3.0]


def test_init_draws_with_the_right_spread():
    hg.manual_seed(0)
    w = hg.empty(300, 200)
    hg.nn.init.xavier_uniform_(w)
    bound = math.sqrt(6 / 500)
    assert abs(w).max().item() <= bound and abs(w.std().item() - bound / math.sqrt(3)) < 0.01 * bound
    hg.nn.init.kaiming_normal_(w, nonlinearity="relu")
    assert abs(w.std().item() - math.sqrt(2 / 200)) < 0.02 * math.sqrt(2 / 200)
    hg.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    hg.nn.init.xavier_normal_(w, gain=hg.nn.init.calculate_gain("tanh"))
    hg.nn.init.normal_(w, 1.0, 0.5)
    assert abs(w.mean().item() - 1.0) < 0.01
    hg.nn.init.uniform_(w, -0.1, 0.1)
    assert abs(w).max().item() <= 0.1
    hg.nn.init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert abs(w).max().item() <= 0.5
    assert hg.nn.init.zeros_(w).sum().item() == 0 and hg.nn.init.ones_(hg.empty(3)).tolist() == [1.0] * 3
    assert hg.nn.init.constant_(hg.empty(2), 0.25).tolist() == [0.25, 0.25]
    assert hg.nn.init.eye_(hg.empty(2, 3)).tolist() == [[1, 0, 0], [0, 1, 0]]
    lin = hg.nn.Linear(4, 3)
    hg.nn.init.zeros_(lin.weight)  # a parameter that requires grad: written under no_grad, as PyTorch's
    assert lin.weight.sum().item() == 0 and lin.weight.requires_grad
    with pytest.raises(ValueError, match="fan"):
        hg.nn.init.xavier_uniform_(hg.empty(3))
    with pytest.raises(TypeError):
        hg.nn.init.normal_([1.0])
