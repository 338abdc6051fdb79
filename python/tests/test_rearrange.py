"""var, std and the rearranging ops from Python: values against NumPy, gradients against float64
finite differences (hg.autograd.gradcheck), and both against PyTorch where it imports; PyTorch's
argument forms (a dim or a tuple, unbiased or correction, varargs) and its edge cases."""
import numpy as np
import pytest

import handgrad as hg

try:
    import torch
except ImportError:
    torch = None

rng = np.random.default_rng(5)


def arr(*shape):
    return rng.standard_normal(shape)


def leaf(a):
    return hg.tensor(a, dtype=hg.float64, requires_grad=True)


# (name, handgrad call, NumPy reference, PyTorch call, input shape)
CASES = [
    ("var all", lambda x: x.var(), lambda a: np.var(a, ddof=1), lambda t: t.var(), (3, 4)),
    ("var dim 1 unbiased=False keepdim", lambda x: x.var(1, unbiased=False, keepdim=True),
     lambda a: np.var(a, axis=1, keepdims=True), lambda t: t.var(1, unbiased=False, keepdim=True), (3, 4)),
    ("var dims (0, 2) correction 0", lambda x: hg.var(x, (0, 2), correction=0),
     lambda a: np.var(a, axis=(0, 2)), lambda t: torch.var(t, (0, 2), correction=0), (2, 3, 4)),
    ("var(False)", lambda x: x.var(False), lambda a: np.var(a), lambda t: t.var(False), (5,)),
    ("var(1, True)", lambda x: x.var(1, True), lambda a: np.var(a, axis=1, ddof=1), lambda t: t.var(1, True), (3, 4)),
    ("std all", lambda x: x.std(), lambda a: np.std(a, ddof=1), lambda t: t.std(), (3, 4)),
    ("std dim -1 correction 0", lambda x: hg.std(x, dim=-1, correction=0), lambda a: np.std(a, axis=-1),
     lambda t: torch.std(t, dim=-1, correction=0), (2, 5)),
    ("index_select", lambda x: x.index_select(1, hg.tensor([2, 0, 2], dtype=hg.int64)),
     lambda a: np.take(a, [2, 0, 2], axis=1), lambda t: t.index_select(1, torch.tensor([2, 0, 2])), (2, 3)),
    ("flip varargs", lambda x: x.flip(0, 1), lambda a: np.flip(a, (0, 1)), lambda t: t.flip(0, 1), (2, 3)),
    ("flip tuple", lambda x: hg.flip(x, (2,)), lambda a: np.flip(a, 2), lambda t: torch.flip(t, (2,)), (2, 3, 4)),
    ("roll flattened", lambda x: x.roll(2), lambda a: np.roll(a, 2), lambda t: t.roll(2), (3, 4)),
    ("roll dims", lambda x: hg.roll(x, (1, -2), (0, 1)), lambda a: np.roll(a, (1, -2), (0, 1)),
     lambda t: torch.roll(t, (1, -2), (0, 1)), (3, 4)),
    ("roll dim kw", lambda x: x.roll(shifts=-1, dims=1), lambda a: np.roll(a, -1, 1), lambda t: t.roll(shifts=-1, dims=1), (3, 4)),
    ("diagonal", lambda x: x.diagonal(), lambda a: np.diagonal(a), lambda t: t.diagonal(), (4, 3)),
    ("diagonal offset dims", lambda x: x.diagonal(1, 0, 2), lambda a: np.diagonal(a, 1, 0, 2),
     lambda t: t.diagonal(1, 0, 2), (3, 2, 4)),
    ("diagonal offset -2", lambda x: hg.diagonal(x, offset=-2), lambda a: np.diagonal(a, -2),
     lambda t: torch.diagonal(t, offset=-2), (4, 5)),
    ("diag 1-d", lambda x: hg.diag(x, 1), lambda a: np.diag(a, 1), lambda t: torch.diag(t, 1), (3,)),
    ("diag 2-d", lambda x: x.diag(-1), lambda a: np.diag(a, -1), lambda t: t.diag(-1), (3, 4)),
    ("tril", lambda x: x.tril(), lambda a: np.tril(a), lambda t: t.tril(), (3, 4)),
    ("tril batched offset", lambda x: hg.tril(x, 1), lambda a: np.tril(a, 1), lambda t: torch.tril(t, 1), (2, 3, 4)),
    ("triu offset -1", lambda x: x.triu(-1), lambda a: np.triu(a, -1), lambda t: t.triu(-1), (4, 3)),
    ("flatten", lambda x: x.flatten(), lambda a: a.reshape(-1), lambda t: t.flatten(), (2, 3, 4)),
    ("flatten 1..2", lambda x: hg.flatten(x, 1, 2), lambda a: a.reshape(2, 12, 5), lambda t: torch.flatten(t, 1, 2), (2, 3, 4, 5)),
    ("unflatten", lambda x: x.unflatten(1, (2, -1)), lambda a: a.reshape(3, 2, 3), lambda t: t.unflatten(1, (2, -1)), (3, 6)),
    ("movedim", lambda x: x.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1), lambda t: t.movedim(0, -1), (2, 3, 4)),
    ("movedim tuples", lambda x: hg.movedim(x, (0, 1), (2, 0)), lambda a: np.moveaxis(a, (0, 1), (2, 0)),
     lambda t: torch.movedim(t, (0, 1), (2, 0)), (2, 3, 4)),
    ("narrow", lambda x: x.narrow(1, -3, 2), lambda a: a[:, 2:4], lambda t: t.narrow(1, -3, 2), (2, 5)),
]


@pytest.mark.parametrize("name,fn,ref,theirs,shape", CASES, ids=[c[0] for c in CASES])
def test_values_gradients_and_pytorch(name, fn, ref, theirs, shape):
    a = arr(*shape)
    x = leaf(a)
    y = fn(x)
    assert np.allclose(y.detach().numpy(), ref(a), rtol=1e-12, atol=1e-12), name
    assert hg.autograd.gradcheck(fn, (leaf(a),)), name
    if torch is not None:
        t = torch.tensor(a, requires_grad=True)
        ty = theirs(t)
        assert tuple(ty.shape) == tuple(y.shape)
        w = rng.standard_normal(tuple(ty.shape))
        (ty * torch.tensor(w)).sum().backward()
        x2 = leaf(a)
        (fn(x2) * hg.tensor(w, dtype=hg.float64)).sum().backward()
        assert np.allclose(x2.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12), name


def test_var_edge_cases_as_pytorch():
    one = leaf(np.array([2.0]))
    v = one.var()  # N − 1 = 0: NaN, as PyTorch (a warning there)
    assert np.isnan(v.item())
    v.backward()
    assert np.isnan(one.grad.numpy()).all()
    assert one.var(unbiased=False).item() == 0.0
    assert leaf(np.array([[1.0, 3.0]])).var(0, unbiased=False).tolist() == [0.0, 0.0]
    assert np.isnan(hg.zeros(0, 3, dtype=hg.float64).var(0).numpy()).all()  # over an empty dim: NaN, as PyTorch's
    with pytest.raises(TypeError):
        leaf(arr(3)).var(unbiased=True, correction=0)
    with pytest.raises(TypeError):
        leaf(arr(3)).var(0.5)
    with pytest.raises(hg.IndexError):
        leaf(arr(3)).var(2)
    with pytest.raises(hg.Error):
        hg.tensor([1, 2], dtype=hg.int64).var()


def test_errors_name_the_op():
    x = leaf(arr(2, 3))
    with pytest.raises(hg.IndexError, match="index_select: index 3 is out of range"):
        x.index_select(1, hg.tensor([3], dtype=hg.int64))
    with pytest.raises(hg.IndexError):
        x.index_select(1, hg.tensor([-1], dtype=hg.int64))
    with pytest.raises(hg.Error, match="int64"):
        x.index_select(1, hg.tensor([0.0]))
    with pytest.raises(hg.Error, match="2 shifts for 1 dims"):
        x.roll((1, 2), 0)
    with pytest.raises(hg.Error, match="both dim 0"):
        x.diagonal(0, 0, 0)
    with pytest.raises(hg.Error, match="fewer than 2 dims"):
        leaf(arr(3)).tril()
    with pytest.raises(hg.Error, match="do not split"):
        x.unflatten(1, (2, 2))
    with pytest.raises(hg.Error, match="run past"):
        x.narrow(1, 1, 5)
    with pytest.raises(hg.IndexError):
        x.flip(2)
    with pytest.raises(TypeError):
        x.flip(0.5)
    with pytest.raises(TypeError):
        hg.flip([1, 2], 0)
    with pytest.raises(hg.Error, match="comes after"):
        x.flatten(1, 0)


def test_tril_zeroes_infinities_as_pytorch():
    x = hg.tensor([[1.0, float("inf")], [float("nan"), 2.0]], dtype=hg.float64)
    assert x.tril().tolist()[0] == [1.0, 0.0]
    assert x.triu().tolist()[1] == [0.0, 2.0]


def test_empty_and_zero_d():
    e = hg.zeros(0, 3, dtype=hg.float64)
    assert tuple(e.flip(0).shape) == (0, 3) and tuple(e.roll(1, 0).shape) == (0, 3)
    assert tuple(e.index_select(0, hg.tensor([], dtype=hg.int64)).shape) == (0, 3)
    s = hg.tensor(3.0, dtype=hg.float64)
    assert s.flatten().tolist() == [3.0] and s.flip(0).item() == 3.0


EXTREMA = [
    ("amax dims", lambda x: x.amax((0, 2)), lambda a: a.max((0, 2)), lambda t: t.amax((0, 2)), (2, 3, 4)),
    ("amax all keepdim", lambda x: hg.amax(x, keepdim=True), lambda a: a.max(keepdims=True),
     lambda t: torch.amax(t, (0, 1), keepdim=True), (3, 4)),
    ("amin dim", lambda x: x.amin(-1), lambda a: a.min(-1), lambda t: t.amin(-1), (3, 4)),
    ("min dim values", lambda x: x.min(0).values, lambda a: a.min(0), lambda t: t.min(0).values, (4, 3)),
    ("min all", lambda x: hg.min(x), lambda a: a.min(), lambda t: torch.min(t), (3, 4)),
    ("logsumexp", lambda x: x.logsumexp(1), lambda a: np.log(np.exp(a).sum(1)), lambda t: t.logsumexp(1), (3, 5)),
    ("logsumexp dims keepdim", lambda x: hg.logsumexp(x, (0, 2), keepdim=True),
     lambda a: np.log(np.exp(a).sum((0, 2), keepdims=True)), lambda t: torch.logsumexp(t, (0, 2), keepdim=True), (2, 3, 2)),
    ("cumsum", lambda x: x.cumsum(1), lambda a: np.cumsum(a, 1), lambda t: t.cumsum(1), (3, 4)),
    ("cumsum dim 0", lambda x: hg.cumsum(x, 0), lambda a: np.cumsum(a, 0), lambda t: torch.cumsum(t, 0), (4, 2, 3)),
    ("masked_select", lambda x: x[x.detach() > 0], lambda a: a[a > 0], lambda t: t[t.detach() > 0], (3, 4)),
    ("int64 ids", lambda x: x[hg.tensor([2, 0], dtype=hg.int64)], lambda a: a[[2, 0]],
     lambda t: t[torch.tensor([2, 0])], (3, 4)),
]


@pytest.mark.parametrize("name,fn,ref,theirs,shape", EXTREMA, ids=[c[0] for c in EXTREMA])
def test_extrema_values_gradients_and_pytorch(name, fn, ref, theirs, shape):
    test_values_gradients_and_pytorch(name, fn, ref, theirs, shape)


def test_ties_share_the_gradient_as_pytorch():
    a = np.array([[1.0, 3.0, 3.0], [0.5, 3.0, -2.0]])
    x = hg.tensor(a, dtype=hg.float64, requires_grad=True)
    x.amax().backward()
    assert np.allclose(x.grad.numpy(), (a == 3.0) / 3.0)
    y = hg.tensor(a, dtype=hg.float64, requires_grad=True)
    y.min(1).values.sum().backward()  # min over one dim: the first minimum takes it all
    assert y.grad.tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    assert y.min(1).indices.tolist() == [0, 2] and hg.argmin(y).item() == 5 and y.argmin(1, keepdim=True).tolist() == [[0], [2]]
    if torch is not None:
        t = torch.tensor(a, requires_grad=True)
        t.amax().backward()
        assert np.allclose(x.grad.numpy(), t.grad.numpy())


def test_logsumexp_of_infinities_and_mask_reading():
    x = hg.tensor([[-np.inf, -np.inf], [0.0, -np.inf], [np.inf, 1.0]], dtype=hg.float64)
    assert x.logsumexp(1).tolist() == [-np.inf, 0.0, np.inf]
    m = hg.tensor([[True, False], [False, True]])
    ids = hg.tensor([[1, 2], [3, 4]], dtype=hg.int64)
    assert ids[m].tolist() == [1, 4] and ids[m].dtype == hg.int64  # ids and masks read too, without a gradient
    assert (ids == 1)[m].tolist() == [True, False]
    with pytest.raises(hg.IndexError):
        hg.zeros(0, 2).amax(0)
    # a mask over the leading dims selects along them, as in PyTorch; one that fits no dims is refused
    assert hg.arange(6).reshape(2, 3)[hg.tensor([False, True])].tolist() == [[3, 4, 5]]
    with pytest.raises(IndexError, match="boolean index"):
        hg.zeros(2, 3)[hg.tensor([True, False, True])]


OTHER = np.random.default_rng(2).standard_normal((3, 4))
MORE = [
    ("stack", lambda x: hg.stack([x, x * 2], 1), lambda a: np.stack([a, a * 2], 1), lambda t: torch.stack([t, t * 2], 1), (2, 3)),
    ("repeat", lambda x: x.repeat(2, 1, 2), lambda a: np.tile(a, (2, 1, 2)), lambda t: t.repeat(2, 1, 2), (2, 3)),
    ("tile", lambda x: hg.tile(x, (2,)), lambda a: np.tile(a, (2,)), lambda t: torch.tile(t, (2,)), (2, 3)),
    ("repeat_interleave", lambda x: x.repeat_interleave(2, dim=0), lambda a: np.repeat(a, 2, 0),
     lambda t: t.repeat_interleave(2, dim=0), (3, 2)),
    ("repeat_interleave flat", lambda x: hg.repeat_interleave(x, 3), lambda a: np.repeat(a, 3),
     lambda t: torch.repeat_interleave(t, 3), (2, 2)),
    ("maximum", lambda x: hg.maximum(x, x.detach() * 0 + 0.1), lambda a: np.maximum(a, 0.1),
     lambda t: torch.maximum(t, t.detach() * 0 + 0.1), (3, 4)),
    ("minimum", lambda x: x.minimum(hg.tensor(OTHER, dtype=hg.float64)), lambda a: np.minimum(a, OTHER),
     lambda t: t.minimum(torch.tensor(OTHER)), (3, 4)),
    ("lerp", lambda x: hg.lerp(x, hg.tensor(OTHER[0], dtype=hg.float64), 0.25), lambda a: a + 0.25 * (OTHER[0] - a),
     lambda t: torch.lerp(t, torch.tensor(OTHER[0]), 0.25), (4,)),
]


@pytest.mark.parametrize("name,fn,ref,theirs,shape", MORE, ids=[c[0] for c in MORE])
def test_more_values_gradients_and_pytorch(name, fn, ref, theirs, shape):
    test_values_gradients_and_pytorch(name, fn, ref, theirs, shape)


def test_maximum_ties_and_nan_as_pytorch():
    a = hg.tensor([1.0, 2.0, float("nan")], dtype=hg.float64, requires_grad=True)
    b = hg.tensor([1.0, 3.0, 0.0], dtype=hg.float64, requires_grad=True)
    y = hg.maximum(a, b)
    assert y.tolist()[:2] == [1.0, 3.0] and np.isnan(y.tolist()[2])
    y[:2].sum().backward()
    assert a.grad.tolist() == [0.5, 0.0, 0.0] and b.grad.tolist() == [0.5, 1.0, 0.0]


def test_creation():
    hg.manual_seed(3)
    r = hg.rand(2, 3, dtype=hg.float64)
    assert tuple(r.shape) == (2, 3) and 0 <= r.amin().item() and r.amax().item() < 1
    i = hg.randint(5, 10, (1000,))
    assert i.dtype == hg.int64
    v = np.array(i.tolist())
    assert v.min() >= 5 and v.max() <= 9 and len(set(v.tolist())) == 5
    assert hg.randint(3, size=(2, 2)).tolist() != [] and np.array(hg.randint(3, (50,)).tolist()).max() <= 2
    assert hg.eye(2, 3).tolist() == [[1, 0, 0], [0, 1, 0]] and hg.eye(2).dtype == hg.float32
    assert np.allclose(hg.linspace(0, 1, 5).tolist(), [0, 0.25, 0.5, 0.75, 1])
    assert hg.full_like(r, 7).tolist() == [[7.0] * 3] * 2 and hg.full_like(r, 7).dtype == hg.float64
    with pytest.raises(ValueError):
        hg.randint(3, 3, (2,))
    with pytest.raises(TypeError):
        hg.randint(0.5, (2,))
    with pytest.raises(TypeError):
        hg.eye(-1)
    with pytest.raises(hg.Error, match="shape"):
        hg.stack([hg.zeros(2), hg.zeros(3)])
    with pytest.raises(hg.Error, match="repeats"):
        hg.zeros(2, 3).repeat(2)


def test_the_texts_mask_and_int_rearranging():
    T = 4
    future = hg.triu(hg.ones(T, T, dtype=hg.bool), diagonal=1)  # Module 6's line, with hg for torch
    assert future.dtype == hg.bool and future.tolist() == np.triu(np.ones((T, T), bool), 1).tolist()
    ids = hg.tensor([[1, 2, 3], [4, 5, 6]])
    assert ids.flip(1).tolist() == [[3, 2, 1], [6, 5, 4]] and ids.roll(1).tolist() == [[6, 1, 2], [3, 4, 5]]
    assert ids.tril().tolist() == [[1, 0, 0], [4, 5, 0]] and ids.diagonal().tolist() == [1, 5]
    assert ids.repeat_interleave(2, dim=0).tolist() == [[1, 2, 3], [1, 2, 3], [4, 5, 6], [4, 5, 6]]
