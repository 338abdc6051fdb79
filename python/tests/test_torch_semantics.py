"""PyTorch's answers where handgrad once gave other numbers or refused: masked_fill with a tensor
value, the matrix norms, vector_norm's gradient at 0, logit with eps, softplus's threshold, the 0-d
forms, take_along_dim's broadcasting, pad's modes, dtype= on softmax, device= on the *_like
factories, flip(dims=), min and max of two tensors, linspace between 0-d tensors, matrix_rank of an
empty matrix, cdist's compute_mode and the mean over an empty dim.

Each test checks the formula or NumPy here; where torch imports, the same call is compared with it
(the rows in rows/rows_fixes.py compare every sample, gradients included)."""

import math

import numpy as np
import pytest

import handgrad as hg
import handgrad.nn.functional as F

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
rng = np.random.default_rng(7)


def f64(a, requires_grad=False):
    return hg.tensor(np.asarray(a, dtype=np.float64), dtype=hg.float64, requires_grad=requires_grad)


# ---------------------------------------------------------------- masked_fill

def test_masked_fill_tensor_value_gets_the_sum_of_the_masked_gradient():
    x = f64([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    v = f64(1.5, requires_grad=True)
    mask = hg.tensor([True, False, True, True])
    out = x.masked_fill(mask, v)
    assert out.tolist() == [1.5, 2.0, 1.5, 1.5]
    out.backward(f64([1.0, 10.0, 100.0, 1000.0]))
    assert v.grad.item() == 1101.0 and x.grad.tolist() == [0.0, 10.0, 0.0, 0.0]
    assert hg.masked_fill(x, mask, v).tolist() == out.tolist()


def test_masked_fill_broadcasts_both_and_casts_the_value():
    assert tuple(f64([1.0, 2.0, 3.0]).masked_fill(hg.tensor([[True], [False]]), 5.0).shape) == (2, 3)
    assert f64(3.0).masked_fill(hg.tensor([True, False]), 1.0).tolist() == [1.0, 3.0]
    assert hg.tensor([1, 2]).masked_fill(hg.tensor([True, False]), 2.7).tolist() == [2, 2]
    assert hg.tensor([1, 2]).masked_fill(hg.tensor([True, False]), f64(-2.7)).tolist() == [-2, 2]
    with pytest.raises(TypeError, match="bool tensor"):
        f64([1.0]).masked_fill(f64([1.0]), 0.0)
    with pytest.raises(hg.Error, match="0-d tensor"):
        f64([1.0]).masked_fill(hg.tensor([True]), f64([1.0]))


def test_masked_fill_in_place_refuses_to_drop_a_gradient():
    x, mask = f64([1.0, 2.0]), hg.tensor([True, False])
    v = f64(7.0, requires_grad=True)
    with pytest.raises(hg.Error, match="gradient would be lost"):
        x.masked_fill_(mask, v)
    with hg.no_grad():
        x.masked_fill_(mask, v)
    assert x.tolist() == [7.0, 2.0]
    assert x.masked_fill_(mask, f64(-1.0)) is x and x.tolist() == [-1.0, 2.0]


# ---------------------------------------------------------------- norms

def test_matrix_norms_against_numpy():
    a = rng.normal(size=(4, 5))
    A = f64(a)
    for ord in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        want = np.linalg.norm(a, ord)
        np.testing.assert_allclose(hg.linalg.matrix_norm(A, ord).item(), want, rtol=1e-12)
        np.testing.assert_allclose(hg.linalg.norm(A, ord).item(), want, rtol=1e-12)
    b = rng.normal(size=(2, 3, 4))
    got = hg.linalg.matrix_norm(f64(b), math.inf, dim=(2, 0), keepdim=True)
    want = np.abs(b).sum(0).max(1).reshape(1, 3, 1)  # rows of the (2, 0) matrices: sum over dim 0
    assert tuple(got.shape) == (1, 3, 1)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-13)
    np.testing.assert_allclose(hg.norm(f64(b), "nuc", dim=(1, 2)).numpy(),
                               [np.linalg.norm(m, "nuc") for m in b], rtol=1e-12)
    np.testing.assert_allclose(f64(a).norm(p="nuc").item(), np.linalg.norm(a, "nuc"), rtol=1e-12)


def test_matrix_norm_gradients_and_the_singular_value_refusal():
    A = f64(rng.normal(size=(3, 4)), requires_grad=True)
    for ord in ("fro", 1, -1, math.inf, -math.inf):
        assert hg.autograd.gradcheck(lambda a: hg.linalg.matrix_norm(a, ord), (A,))
    for ord in ("nuc", 2, -2):
        with pytest.raises(hg.Error, match="'fro', 1, -1, inf and -inf carry gradients"):
            hg.linalg.matrix_norm(A, ord)
        with hg.no_grad():
            hg.linalg.matrix_norm(A, ord)
        hg.linalg.norm(A.detach(), ord)


def test_norm_argument_rules():
    A = f64(rng.normal(size=(2, 3, 4)))
    with pytest.raises(hg.Error, match="1-d or 2-d"):
        hg.linalg.norm(A, 2)
    with pytest.raises(hg.Error, match="2-tuple"):
        hg.linalg.matrix_norm(A, dim=0)
    with pytest.raises(hg.Error, match="different"):
        hg.linalg.matrix_norm(A, dim=(1, -2))
    with pytest.raises(hg.Error, match="not a matrix norm"):
        hg.linalg.matrix_norm(A, 3)
    with pytest.raises(IndexError, match="empty"):
        hg.linalg.matrix_norm(hg.zeros(0, 3, dtype=hg.float64), -math.inf)
    assert hg.linalg.matrix_norm(hg.zeros(0, 3, dtype=hg.float64), math.inf).item() == 0.0
    np.testing.assert_allclose(hg.linalg.norm(A, 3, dim=1).numpy(), (np.abs(A.numpy()) ** 3).sum(1) ** (1 / 3),
                               rtol=1e-13)


def test_vector_norm_ord_0_and_negative_orders_at_zero():
    x = f64([0.0, 1.0, -2.0], requires_grad=True)
    y = hg.norm(x, 0)
    assert y.item() == 2.0 and y.requires_grad
    y.backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    for ord in (0.5, -1, -0.5, -math.inf):
        x.grad = None
        out = hg.linalg.vector_norm(x, ord)
        out.backward()
        assert np.all(np.isfinite(x.grad.numpy())), (ord, x.grad)
        assert x.grad[0].item() == 0.0
    # ord < 0 with a 0 entry: the norm is 0 and so is every gradient (PyTorch's norm^(1-ord) factor)
    x.grad = None
    hg.linalg.vector_norm(x, -1).backward()
    assert hg.linalg.vector_norm(x, -1).item() == 0.0 and x.grad.tolist() == [0.0, 0.0, 0.0]
    # away from 0 it is (Σ |x|^ord)^(1/ord) with the chain rule's gradient
    z = f64([0.5, -1.5, 2.0], requires_grad=True)
    np.testing.assert_allclose(hg.linalg.vector_norm(z, -1).item(), 1 / (2 + 1 / 1.5 + 0.5), rtol=1e-14)
    assert hg.autograd.gradcheck(lambda t: hg.linalg.vector_norm(t, -1.5), (z,))
    assert np.isnan(hg.linalg.vector_norm(f64([0.0, math.nan]), -1).item())
    with pytest.raises(hg.Error, match="empty"):
        hg.linalg.vector_norm(hg.zeros(0, dtype=hg.float64), -1)


def test_vector_norm_of_a_0d_tensor_over_dim_0():
    for ord in (2, 0.5, -1, math.inf, -math.inf):
        out = hg.linalg.vector_norm(f64(-3.0), ord, dim=0, keepdim=True)
        assert tuple(out.shape) == () and out.item() == pytest.approx(3.0, rel=1e-15)


# ---------------------------------------------------------------- elementwise

def test_logit_eps_follows_torch_rule():
    x = f64([0.1, 0.5, 0.9])
    want = [math.log(0.6 / 0.4), math.log(0.6 / 0.4), math.log(0.4 / 0.6)]  # below eps: eps; above 1 − eps: 1 − eps
    np.testing.assert_allclose(hg.logit(x, eps=0.6).numpy(), want, rtol=1e-15)
    np.testing.assert_allclose(x.logit(0.2).numpy(), [math.log(0.25), 0.0, math.log(4.0)], rtol=1e-15)
    assert hg.logit(hg.tensor([0, 1]), 0.25).dtype == hg.float32
    x = f64([0.1, 0.5, 0.9], requires_grad=True)
    hg.logit(x, eps=0.2).sum().backward()
    assert x.grad.tolist() == [0.0, 4.0, 0.0]


def test_clamp_with_min_above_max_gives_max():
    assert hg.clamp(f64([0.1, 0.5, 0.9]), 0.6, 0.4).tolist() == [0.4, 0.4, 0.4]


def test_softplus_threshold():
    x = f64([1.0, 3.0, 25.0], requires_grad=True)
    out = F.softplus(x, threshold=2)
    assert out.tolist()[1:] == [3.0, 25.0]
    np.testing.assert_allclose(out[0].item(), math.log1p(math.e), rtol=1e-15)
    assert F.softplus(x).tolist()[2] == 25.0  # the default threshold 20
    np.testing.assert_allclose(F.softplus(f64([0.5]), beta=2, threshold=5).item(), math.log1p(math.e) / 2, rtol=1e-15)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1 / (1 + math.exp(-1.0)), 1.0, 1.0], rtol=1e-15)


# ---------------------------------------------------------------- 0-d forms, broadcasting

def test_zero_dim_forms():
    x = f64(3.0)
    assert tuple(hg.index_select(x, 0, hg.tensor([0])).shape) == ()
    assert tuple(hg.index_select(f64(np.eye(3)), 0, hg.tensor(1)).shape) == (1, 3)
    with pytest.raises(hg.Error, match="one value"):
        hg.index_select(x, 0, hg.tensor([0, 0]))
    assert tuple(x.unfold(0, 1, 1).shape) == (1,) and tuple(x.unfold(-1, 0, 1).shape) == (0,)
    for fn in (hg.amax, hg.amin, hg.logsumexp):
        assert fn(x, 0).item() == 3.0 and fn(x, -1, True).item() == 3.0 and fn(x, (0,)).item() == 3.0
        with pytest.raises(IndexError):
            fn(x, 1)


def test_take_along_dim_broadcasts():
    a = f64([[1.0, 2.0], [3.0, 4.0]])
    assert hg.take_along_dim(a, hg.tensor([[1]]), 1).tolist() == [[2.0], [4.0]]
    assert hg.take_along_dim(f64([[1.0, 2.0]]), hg.tensor([[1], [0], [1]]), 1).tolist() == [[2.0], [1.0], [2.0]]
    assert hg.take_along_dim(a, hg.tensor([3, 0])).tolist() == [4.0, 1.0]
    assert a.take_along_dim(hg.tensor([[0], [1]]), -1).tolist() == [[1.0], [4.0]]
    with pytest.raises(IndexError, match="same number of dims"):
        hg.take_along_dim(a, hg.tensor([1]), 1)


# ---------------------------------------------------------------- pad

@pytest.mark.parametrize("mode, np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
def test_pad_modes_against_numpy(mode, np_mode):
    a = rng.normal(size=(2, 3, 4, 5))
    got = F.pad(f64(a), (2, 1, 3, 0), mode=mode)
    np.testing.assert_array_equal(got.numpy(), np.pad(a, ((0, 0), (0, 0), (3, 0), (2, 1)), mode=np_mode))
    x = f64(a, requires_grad=True)
    assert hg.autograd.gradcheck(lambda t: F.pad(t, (2, 1, 3, 0), mode=mode), (x,))


def test_pad_negative_amounts_and_limits():
    x = f64(np.arange(4.0).reshape(1, 1, 4))
    assert F.pad(x, (-1, 2), mode="reflect").tolist() == [[[1.0, 2.0, 3.0, 2.0, 1.0]]]
    assert F.pad(x, (-1, 2), mode="circular").tolist() == [[[1.0, 2.0, 3.0, 1.0, 2.0]]]  # cropped, then wrapped
    assert F.pad(x, (-2, -1), mode="replicate").tolist() == [[[2.0]]]
    with pytest.raises(ValueError, match="below the size"):
        F.pad(x, (4, 0), mode="reflect")
    with pytest.raises(ValueError, match="more than once"):
        F.pad(x, (5, 0), mode="circular")
    with pytest.raises(ValueError, match="at least one"):
        F.pad(x, (-2, -2), mode="replicate")
    with pytest.raises(NotImplementedError, match="last 1, 2 or 3 dims"):
        F.pad(f64(np.zeros(4)), (1, 1), mode="reflect")
    with pytest.raises(ValueError, match="takes no fill value"):
        F.pad(x, (1, 1), mode="reflect", value=2.0)
    with pytest.raises(TypeError, match="tuple or list of ints"):
        F.pad(x, (1.5, 1))


# ---------------------------------------------------------------- argument forms

def test_softmax_dtype():
    x = hg.tensor([[1.0, 2.0, 3.0]])
    for fn in (hg.softmax, F.softmax, hg.log_softmax, F.log_softmax):
        out = fn(x, 1, dtype=hg.float64)
        assert out.dtype == hg.float64
    assert x.softmax(1, dtype=hg.float64).dtype == hg.float64 and x.log_softmax(-1, hg.float64).dtype == hg.float64
    np.testing.assert_allclose(hg.softmax(hg.tensor([[1, 2]]), 1, dtype=hg.float64).numpy(),
                               [[1 / (1 + math.e), math.e / (1 + math.e)]], rtol=1e-15)


def test_like_factories_take_device():
    x = f64([[1.0, 2.0]])
    for fn in (hg.zeros_like, hg.ones_like, hg.empty_like):
        out = fn(x, device="cpu")
        assert out.device == "cpu" and out.dtype == hg.float64 and tuple(out.shape) == (1, 2)
    assert hg.full_like(x, 2.5, device=x.device).tolist() == [[2.5, 2.5]]
    assert hg.zeros_like(x, dtype=hg.int64, device="cpu").dtype == hg.int64
    if hg.cuda_is_available():
        assert hg.ones_like(x, device="cuda").device.type == "cuda"


def test_flip_dims_keyword_and_binary_min_max():
    x = f64([[1.0, 2.0], [3.0, 4.0]])
    assert hg.flip(x, dims=(0,)).tolist() == x.flip(dims=[0]).tolist() == x.flip(0).tolist() == [[3.0, 4.0], [1.0, 2.0]]
    a, b = f64([1.0, 5.0]), f64([2.0, 3.0])
    assert hg.min(a, b).tolist() == a.min(b).tolist() == [1.0, 3.0]
    assert hg.max(a, b).tolist() == a.max(b).tolist() == [2.0, 5.0]
    assert hg.max(a, hg.tensor([2.0, 3.0])).dtype == hg.float64  # float32 with float64: float64
    assert a.max().item() == 5.0 and a.max(0).indices.item() == 1


def test_linspace_and_matrix_rank_and_mean_edges():
    assert hg.linspace(f64(0.0), f64(1.0), 3).tolist() == [0.0, 0.5, 1.0]
    assert hg.linspace(f64(0.0), 1, 3).dtype == hg.float32
    assert hg.linspace(0.5, 7.9, 4, dtype=hg.int64).tolist() == [0, 2, 4, 7]  # ends truncated to 0 and 7 first
    assert hg.linspace(0, 1, 1).tolist() == [0.0]
    with pytest.raises(hg.Error, match="0-d tensor"):
        hg.linspace(f64([0.0]), 1, 3)
    assert hg.linalg.matrix_rank(hg.zeros(0, 3)).item() == 0
    assert hg.linalg.matrix_rank(hg.zeros(2, 3, 0)).tolist() == [0, 0]
    assert math.isnan(hg.zeros(0).mean().item())
    assert np.isnan(hg.mean(hg.zeros(2, 0), 1).numpy()).all() and tuple(hg.zeros(2, 0).mean(0).shape) == (0,)
    x = hg.zeros(2, 0, dtype=hg.float64, requires_grad=True)
    x.mean(1).sum().backward()
    assert tuple(x.grad.shape) == (2, 0)


def test_cdist_compute_mode():
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
    want = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
    for mode in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        np.testing.assert_allclose(hg.cdist(f64(a), f64(b), compute_mode=mode).numpy(), want, rtol=1e-14)
    assert hg.cdist(f64(a), f64(a)).numpy().diagonal().tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="compute_mode"):
        hg.cdist(f64(a), f64(b), compute_mode="fast")


# ---------------------------------------------------------------- against torch

@needs_torch
def test_gradients_at_zero_match_torch():
    values = [0.0, 1.0, -2.0]
    for ord in (0, 0.5, -0.5, -1, 1.5, math.inf, -math.inf):
        x = f64(values, requires_grad=True)
        hg.linalg.vector_norm(x, ord).backward()
        t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
        torch.linalg.vector_norm(t, ord).backward()
        want = np.zeros(3) if t.grad is None else t.grad.numpy()
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-14, atol=0, err_msg=f"ord {ord}")


@needs_torch
def test_matrix_norm_gradients_match_torch():
    a = rng.normal(size=(3, 4))
    for ord in ("fro", 1, -1, math.inf, -math.inf):
        x = f64(a, requires_grad=True)
        hg.linalg.norm(x, ord).backward()
        t = torch.tensor(a, requires_grad=True)
        torch.linalg.norm(t, ord).backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-13, atol=1e-15)


@needs_torch
def test_masked_fill_and_logit_match_torch():
    a, m = rng.normal(size=(3, 4)), rng.random((3, 4)) > 0.5
    x, v = f64(a, requires_grad=True), f64(0.25, requires_grad=True)
    tx, tv = torch.tensor(a, requires_grad=True), torch.tensor(0.25, dtype=torch.float64, requires_grad=True)
    g = rng.normal(size=(3, 4))
    x.masked_fill(hg.tensor(m), v).backward(f64(g))
    tx.masked_fill(torch.tensor(m), tv).backward(torch.tensor(g))
    assert v.grad.item() == pytest.approx(tv.grad.item(), rel=1e-14)
    p = np.array([0.0, 0.05, 0.3, 0.5, 0.7, 0.95, 1.0, np.nan])
    for eps in (None, 0.1, 0.6, 1.5):
        np.testing.assert_allclose(hg.logit(f64(p), eps).numpy(), torch.logit(torch.tensor(p), eps).numpy(),
                                   rtol=1e-15, equal_nan=True)
