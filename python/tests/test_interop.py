"""Zero-copy with NumPy and DLPack both ways: the same address, writes seen on both sides, the
memory kept alive by whichever side lives, and what sharing means for the version counter."""

import gc

import numpy as np
import pytest

import handgrad as hg


def test_from_numpy_views_the_array():
    a = np.arange(6.0).reshape(2, 3)
    t = hg.from_numpy(a)
    assert t.dtype == hg.float64 and t.shape == (2, 3)
    assert t.data_ptr() == a.ctypes.data
    a[0, 1] = 7.0
    assert t[0, 1].item() == 7.0  # a NumPy write seen by handgrad
    t.fill_(2.0)
    assert (a == 2.0).all()  # a handgrad write seen by NumPy


def test_round_trip_keeps_the_address():
    t = hg.arange(12, dtype=hg.float32).reshape(3, 4)
    n = np.from_dlpack(t)
    assert n.ctypes.data == t.data_ptr() and n.tolist() == t.tolist()
    if n.flags.writeable:  # NumPy 2 and later
        back = hg.from_dlpack(n)
        assert back.data_ptr() == t.data_ptr() and back.tolist() == t.tolist()
    else:  # NumPy 1.x marks every from_dlpack array read-only: refused, saying why
        with pytest.raises(hg.Error, match="from_dlpack: the array .* is read-only.*a.copy"):
            hg.from_dlpack(n)
    assert hg.from_numpy(t.numpy()).data_ptr() == t.data_ptr()
    assert hg.from_dlpack(t.numpy()).data_ptr() == t.data_ptr()


def test_strides_and_dtypes_survive():
    a = np.arange(24, dtype=np.int64).reshape(4, 6)[:, 1::2]  # non-contiguous view
    t = hg.from_dlpack(a)
    assert t.shape == (4, 3) and t.stride() == (6, 2) and not t.is_contiguous()
    assert t.tolist() == a.tolist()
    b = np.array([True, False, True])
    assert hg.from_dlpack(b).tolist() == [True, False, True]
    x = hg.randn(3, 4, seed=1, dtype=hg.float64).transpose(0, 1)
    n = np.from_dlpack(x)
    assert n.shape == (4, 3) and n.strides == (8, 32)
    np.testing.assert_array_equal(n, x.numpy())


def test_dlpack_device_and_refusals():
    assert hg.zeros(2).__dlpack_device__() == (1, 0)
    with pytest.raises(hg.Error, match=r"__dlpack__: can't export .* requires grad.*detach\(\)"):
        hg.zeros(2, requires_grad=True).__dlpack__()
    with pytest.raises(hg.Error, match=r"from_dlpack: the array's dtype is int32.*float32, float64, int64 and bool"):
        hg.from_dlpack(np.zeros(3, dtype=np.int32))
    with pytest.raises(hg.Error, match=r"from_blob: stride -1 .* negative.*ascontiguousarray"):
        hg.from_dlpack(np.arange(4.0)[::-1])


def test_either_side_keeps_the_memory_alive():
    a = np.arange(1000.0)
    t = hg.from_numpy(a)
    del a
    gc.collect()
    assert t[999].item() == 999.0  # the tensor holds the array
    n = np.from_dlpack(hg.full((1000,), 3.0, dtype=hg.float64))
    gc.collect()
    assert n.sum() == 3000.0  # the array holds the tensor


def test_gradients_flow_through_a_shared_tensor():
    a = np.array([1.0, 2.0, 3.0])
    x = hg.from_numpy(a).requires_grad_()
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * a)


def test_a_write_through_numpy_is_not_seen_by_the_version_counter():
    """The documented sharp edge: a saved tensor written through NumPy is used as written."""
    a = np.array([1.0, 2.0, 3.0])
    x = hg.from_numpy(a).requires_grad_()
    w = hg.tensor([1.0, 1.0, 1.0], dtype=hg.float64, requires_grad=True)
    y = (x * w).sum()  # mul saves x for w's gradient
    version = x._version
    a[:] = [10.0, 20.0, 30.0]
    assert x._version == version
    y.backward()
    assert w.grad.tolist() == [10.0, 20.0, 30.0]  # the new values, without a word

    # after _bump_version() the backward refuses, as it does after handgrad's own in-place writes
    y = (x * w).sum()
    a[:] = [1.0, 2.0, 3.0]
    x._bump_version()
    with pytest.raises(hg.Error, match="modified by an inplace operation|in-place|version"):
        y.backward()


def test_a_view_reaching_past_addressable_memory_is_refused():
    a = np.zeros(1)
    huge = np.lib.stride_tricks.as_strided(a, shape=(2**40,), strides=(2**43,))  # never read
    with pytest.raises(hg.Error, match=r"from_blob: shape \(1099511627776,\) with strides .* past the largest offset"):
        hg.from_dlpack(huge)
