"""Tensors: creation, metadata, views, indexing, conversions and NumPy."""

import re

import numpy as np
import pytest

import handgrad as hg


def test_version_and_dtypes():
    assert re.fullmatch(r"\d+\.\d+\.\d+", hg.__version__)
    assert [d.itemsize for d in (hg.float32, hg.float64, hg.int64, hg.bool)] == [4, 8, 8, 1]
    assert hg.float64.is_floating_point and not hg.int64.is_floating_point
    assert repr(hg.float64) == "handgrad.float64"


def test_tensor_from_lists_scalars_and_numpy():
    t = hg.tensor([[1.5, 2.0], [3.0, 4.0]])
    assert t.shape == (2, 2) and t.dtype == hg.float32 and t.device == "cpu"
    assert t.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    s = hg.tensor(2.5, dtype=hg.float64)
    assert s.shape == () and s.item() == 2.5 and isinstance(s.item(), float)
    i = hg.tensor([1, 2, 3])  # PyTorch's inference: integers are int64, bools bool
    assert i.dtype == hg.int64 and i.tolist() == [1, 2, 3] and isinstance(i[1].item(), int)
    b = hg.tensor([True, False])
    assert b.dtype == hg.bool and b.tolist() == [True, False] and b[0].item() is True
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    n = hg.tensor(a)
    assert n.dtype == hg.float64 and n.shape == (2, 3)
    np.testing.assert_array_equal(n.numpy(), a)
    a[0, 0] = 100.0  # hg.tensor copies
    assert n[0, 0].item() == 0.0
    nc = hg.tensor(a.T)  # a non-contiguous array
    np.testing.assert_array_equal(nc.numpy(), a.T)
    assert hg.tensor([1, 2], dtype=hg.float64).dtype == hg.float64
    assert hg.from_numpy(np.array([1, 2], dtype=np.int64)).dtype == hg.int64


def test_factories():
    assert hg.zeros(2, 3).tolist() == [[0.0] * 3] * 2
    assert hg.ones((2,), dtype=hg.float64).tolist() == [1.0, 1.0]
    assert hg.ones(2, 3).dtype == hg.float32
    assert hg.arange(4).tolist() == [0, 1, 2, 3] and hg.arange(4).dtype == hg.int64
    assert hg.arange(4, dtype=hg.float64).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert hg.arange(1.0, 2.0, 0.25).tolist() == [1.0, 1.25, 1.5, 1.75]
    r1 = hg.randn(3, 4, seed=7, dtype=hg.float64)
    r2 = hg.randn((3, 4), generator=hg.Generator(7), dtype=hg.float64)
    assert r1.shape == (3, 4) and r1.tolist() == r2.tolist()
    assert r1.tolist() != hg.randn(3, 4, seed=8, dtype=hg.float64).tolist()
    big = hg.randn(100000, seed=1, dtype=hg.float64).numpy()
    assert abs(big.mean()) < 0.02 and abs(big.std() - 1.0) < 0.02
    g = hg.Generator(3)
    first = hg.randn(5, generator=g).tolist()
    g.manual_seed(3)
    assert hg.randn(5, generator=g).tolist() == first
    assert hg.full((2,), 7.0).tolist() == [7.0, 7.0]
    assert hg.zeros(2, 2, requires_grad=True).requires_grad
    like = hg.zeros_like(hg.ones(2, 3, dtype=hg.float64))
    assert like.shape == (2, 3) and like.dtype == hg.float64 and like.tolist() == [[0.0] * 3] * 2
    assert hg.ones_like(like).tolist() == [[1.0] * 3] * 2
    assert hg.zeros(2, 3).stride() == (3, 1) and hg.zeros(2, 3).transpose(0, 1).stride() == (1, 3)


def test_requires_grad_leaf_and_detach():
    x = hg.tensor([1.0, 2.0])
    assert not x.requires_grad and x.is_leaf and x.grad is None and x.grad_fn is None
    x.requires_grad = True
    assert x.requires_grad
    y = x * 2
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.tolist() == [2.0, 4.0]
    assert x.requires_grad_(False) is x and not x.requires_grad
    c = y.clone()
    assert c.grad_fn.name() == "clone" and c.tolist() == y.tolist()


def test_numpy_is_zero_copy():
    t = hg.zeros(2, 3, dtype=hg.float64)
    a = t.numpy()
    assert a.dtype == np.float64 and a.shape == (2, 3)
    assert a.__array_interface__["data"][0] == t.data_ptr()
    a[1, 2] = 5.0  # a write through NumPy is the tensor's
    assert t[1, 2].item() == 5.0
    t.fill_(1.5)
    assert a[0, 0] == 1.5
    # a strided view shares too, with its strides
    tt = t.transpose(0, 1)
    at = tt.numpy()
    assert at.shape == (3, 2) and at.strides == (8, 24)
    assert at.__array_interface__["data"][0] == t.data_ptr()
    # np.asarray goes through __array__, and the array outlives the tensor's Python object
    b = np.asarray(hg.arange(3, dtype=hg.float32))
    assert b.dtype == np.float32 and b.tolist() == [0.0, 1.0, 2.0]
    assert hg.tensor([True]).numpy().dtype == np.bool_
    with pytest.raises(hg.Error, match="detach"):
        hg.ones(2, requires_grad=True).numpy()


def test_to_dtype():
    t = hg.tensor([1.7, -1.7, 0.0], dtype=hg.float64)
    assert t.to(hg.float32).dtype == hg.float32
    assert t.to(hg.int64).tolist() == [1, -1, 0]  # truncation toward zero
    assert t.to(hg.bool).tolist() == [True, True, False]
    assert t.to("cpu", hg.float32).dtype == hg.float32


def test_views_and_reshape():
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    t = hg.tensor(a)
    np.testing.assert_array_equal(t.view(6, 4).numpy(), a.reshape(6, 4))
    np.testing.assert_array_equal(t.view((4, -1)).numpy(), a.reshape(4, 6))
    np.testing.assert_array_equal(t.transpose(0, 2).numpy(), a.transpose(2, 1, 0))
    np.testing.assert_array_equal(t.permute(1, 2, 0).numpy(), a.transpose(1, 2, 0))
    np.testing.assert_array_equal(t.unsqueeze(1).numpy(), a[:, None])
    assert t.unsqueeze(0).squeeze(0).shape == (2, 3, 4)
    assert hg.zeros(1, 3, 1).squeeze().shape == (3,)
    tr = t.transpose(1, 2)
    assert not tr.is_contiguous() and tr.contiguous().is_contiguous()
    with pytest.raises(hg.Error, match="view"):
        tr.view(24)  # view refuses to merge non-contiguous dimensions ...
    np.testing.assert_array_equal(tr.reshape(24).numpy(), a.transpose(0, 2, 1).reshape(24))  # ... reshape copies
    assert t.T.shape == (4, 3, 2) and len(t) == 2 and t.dim() == 3 and t.numel() == 24


def test_indexing_matches_numpy():
    a = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    t = hg.tensor(a)
    for index in [1, -1, (2, 1), (0, 1, 2), slice(1, None), (slice(None), slice(1, 3)),
                  (Ellipsis, 2), (slice(None, None, 2), None, 3), (1, Ellipsis, slice(0, 5, 2)),
                  (slice(-2, None), -1), (slice(5, 1),)]:
        np.testing.assert_array_equal(t[index].numpy(), a[index], err_msg=repr(index))
    x = hg.tensor([[1., 2., 3.], [4., 5., 6.]])
    assert x[:, 1:].tolist() == [[2., 3.], [5., 6.]]
    with pytest.raises(IndexError):
        x[2]
    assert [row.tolist() for row in x] == [[1., 2., 3.], [4., 5., 6.]]
    x[0, 1:] = 0.0
    x[1] = hg.tensor([7., 8., 9.])
    assert x.tolist() == [[1., 0., 0.], [7., 8., 9.]]


def test_indexing_is_differentiable():
    x = hg.tensor([[1., 2.], [3., 4.]], dtype=hg.float64, requires_grad=True)
    (x[1, 0] * 3 + x[:, 1].sum()).backward()
    assert x.grad.tolist() == [[0.0, 1.0], [3.0, 1.0]]


def test_repr():
    assert repr(hg.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    x = hg.tensor([1.0], dtype=hg.float64, requires_grad=True)
    assert repr(x) == "tensor([1.], dtype=handgrad.float64, requires_grad=True)"
    assert repr(x * 2).endswith("grad_fn=<mul_scalar>)")
    assert repr(hg.arange(3)) == "tensor([0, 1, 2])"


def test_as_tensor_keeps_a_tensor_and_converts_the_rest():
    t = hg.tensor([1.0, 2.0])
    assert hg.as_tensor(t) is t
    assert hg.as_tensor(t, dtype=hg.float32) is t
    d = hg.as_tensor(t, dtype=hg.float64)
    assert d is not t and d.dtype == hg.float64 and d.tolist() == [1.0, 2.0]
    assert hg.as_tensor([[1, 2]]).dtype == hg.int64
