"""The breadth ops of python/handgrad/_products.py, _order_stats.py and _search.py: values against
NumPy and the formula, float64 gradcheck, gradgradcheck and fwdcheck for the differentiable ones,
edge inputs (0-d, empty, broadcasting, non-contiguous, NaN and inf, int64) and the errors. The
comparison with PyTorch is test_breadth_torch.py; _scans, _shapes, _creation and the activations
are test_breadth_shapes.py."""
import math
import warnings

import numpy as np
import pytest

import handgrad as hg
from breadth_helpers import MODES, checks, close, f64, i64, inf, nan, strided

rng = np.random.default_rng(31)


# ---------------------------------------------------------------- products

def test_products_values_and_gradients():
    m, a, b = rng.normal(size=(3, 4)), rng.normal(size=(3, 5)), rng.normal(size=(5, 4))
    v, w = rng.normal(size=5), rng.normal(size=3)
    close(hg.addmm(f64(m), f64(a), f64(b), beta=0.5, alpha=2.0), 0.5 * m + 2 * a @ b)
    close(hg.addmm(f64(m[0]), f64(a), f64(b)), m[0] + a @ b)  # input broadcast to (n, p)
    close(hg.addmv(f64(w), f64(a), f64(v), beta=-1, alpha=3), -w + 3 * a @ v)
    B1, B2, C = rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 5, 4)), rng.normal(size=(3, 4))
    close(hg.baddbmm(f64(C), f64(B1), f64(B2), beta=2, alpha=0.25), 2 * C + 0.25 * B1 @ B2)
    t1, t2 = rng.normal(size=(3, 1)), rng.normal(size=4) + 3
    close(hg.addcmul(f64(m), f64(t1), f64(t2), value=-0.5), m + -0.5 * t1 * t2)
    close(hg.addcdiv(f64(m), f64(t1), f64(t2), value=2), m + 2 * t1 / t2)
    close(hg.mv(f64(a), f64(v)), a @ v)
    close(hg.vdot(f64(v), f64(v)), v @ v)
    close(hg.inner(f64(B1), f64(a)), np.inner(B1, a))
    close(hg.inner(f64(2.0), f64(a)), 2 * a)
    close(f64(m).addmm(f64(a), f64(b)), m + a @ b)
    close(f64(w).addmv(f64(a), f64(v)), w + a @ v)
    close(f64(C).baddbmm(f64(B1), f64(B2)), C + B1 @ B2)
    close(f64(m).addcmul(f64(t1), f64(t2)), m + t1 * t2)
    close(f64(m).addcdiv(f64(t1), f64(t2)), m + t1 / t2)
    close(f64(a).mv(f64(v)), a @ v)
    close(f64(v).vdot(f64(v)), v @ v)
    close(f64(a).inner(f64(a)), np.inner(a, a))
    close(hg.addmm(strided(m), strided(a), strided(b)), m + a @ b)
    checks(lambda i, x, y: hg.addmm(i, x, y, beta=0.5, alpha=-2), m, a, b)
    checks(lambda i, x, y: hg.addmv(i, x, y, alpha=1.5), w, a, v)
    checks(lambda i, x, y: hg.baddbmm(i, x, y, beta=3), C, B1, B2)
    checks(lambda i, x, y: hg.addcmul(i, x, y, value=0.5), m, t1, t2)
    checks(lambda i, x, y: hg.addcdiv(i, x, y, value=-2), m, t1, t2)
    checks(hg.mv, a, v)
    checks(hg.vdot, v, v[::-1].copy())
    checks(hg.inner, B1, a)


def test_products_edges():
    m = f64([[nan, inf], [1.0, 2.0]])
    a, b = f64(np.eye(2)), f64([[1.0, 2.0], [3.0, 4.0]])
    close(hg.addmm(m, a, b, beta=0), [[1, 2], [3, 4]])  # β = 0: input's NaN and inf ignored
    close(hg.addmm(f64(np.zeros((2, 2))), f64([[nan, 1.0], [1.0, 1.0]]), b, alpha=0), np.zeros((2, 2)))
    close(hg.addmv(f64([nan, nan]), a, f64([1.0, 2.0]), beta=0), [1, 2])
    out = hg.baddbmm(f64(np.zeros((1, 2, 2))), f64([[[nan, 1.0], [1.0, 1.0]]]), f64(np.ones((1, 2, 2))), alpha=0)
    assert np.isnan(out.numpy()[0, 0]).all() and (out.numpy()[0, 1] == 0).all()  # PyTorch: baddbmm keeps 0·NaN
    x = f64(np.ones((2, 2)), True)  # β = 0 still passes zeros back to input
    hg.addmm(x, a, b, beta=0).sum().backward()
    close(x.grad, np.zeros((2, 2)))
    assert hg.addcmul(f64([1.0]), f64([inf]), f64([1.0]), value=0).isnan().all()  # 0·inf is NaN here
    ints = i64([[1, 2], [3, 4]])
    assert hg.addmm(ints, ints, ints, beta=2, alpha=3).tolist() == (2 * np.array([[1, 2], [3, 4]])
                                                                   + 3 * np.array([[7, 10], [15, 22]])).tolist()
    assert hg.addmm(ints, ints, ints, beta=0.5, alpha=1.5).tolist() == [[7, 10], [15, 22]]  # truncated, as torch
    assert hg.addcmul(i64([1, 2]), i64([3, 4]), i64([5, 6]), value=2).tolist() == [31, 50]
    assert hg.addcmul(i64([1, 2]), i64([3, 4]), i64([5, 6]), value=0.5).tolist() == [1, 2]
    assert hg.addmm(f64(np.zeros((2, 3))), f64(np.zeros((2, 0))), f64(np.zeros((0, 3)))).shape == (2, 3)
    assert hg.addmm(f64(np.zeros(3)), f64(np.zeros((0, 2))), f64(np.zeros((2, 3)))).shape == (0, 3)
    assert hg.inner(f64(np.zeros((2, 0))), f64(np.zeros((3, 0)))).tolist() == [[0.0] * 3] * 2
    assert hg.vdot(f64([]), f64([])).item() == 0.0
    with pytest.raises(hg.Error, match=r"addmm\(\): mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x2\)"):
        hg.addmm(f64(np.zeros((2, 2))), f64(np.zeros((2, 3))), f64(np.zeros((2, 2))))
    with pytest.raises(hg.Error, match=r"addmm\(\): input \(3,\) does not broadcast"):
        hg.addmm(f64(np.zeros(3)), f64(np.zeros((2, 3))), f64(np.zeros((3, 2))))
    with pytest.raises(hg.Error, match=r"addmm\(\): mat1 must be 2-d"):
        hg.addmm(f64(np.zeros((2, 2))), f64(np.zeros((2, 2, 1))), f64(np.zeros((2, 2))))
    with pytest.raises(TypeError, match=r"addmm\(\): expected one dtype"):
        hg.addmm(f64(np.zeros((2, 2))), a.float(), a.float())
    with pytest.raises(hg.Error, match=r"baddbmm\(\): batch1 \(2, 4, 3\) and batch2 \(3, 3, 3\)"):
        hg.baddbmm(f64(np.zeros(3)), f64(np.zeros((2, 4, 3))), f64(np.zeros((3, 3, 3))))
    with pytest.raises(hg.Error, match=r"mv\(\): size mismatch"):
        hg.mv(f64(np.zeros((2, 3))), f64(np.zeros(2)))
    with pytest.raises(hg.Error, match=r"vdot\(\): input must be 1-d, got input \(2, 1\), other \(2, 1\)"):
        hg.vdot(f64(np.zeros((2, 1))), f64(np.zeros((2, 1))))
    with pytest.raises(hg.Error, match=r"inner\(\): the last dimension"):
        hg.inner(f64(np.zeros((2, 3))), f64(np.zeros((4, 2))))
    with pytest.raises(TypeError, match=r"addcdiv\(\): tensor1 \(hg.int64\) and tensor2 \(hg.int64\)"):
        hg.addcdiv(f64([0.0]), i64([1]), i64([2]))
    with pytest.raises(hg.Error, match=r"addcmul\(\): input \(1,\), tensor1 \(2,\) and tensor2 \(3, 3\)"):
        hg.addcmul(f64([0.0]), f64([1.0, 2.0]), f64(np.zeros((3, 3))))
    with pytest.raises(TypeError, match=r"addmm\(\): beta must be a number"):
        hg.addmm(a, a, a, beta="2")
    with pytest.raises(TypeError, match=r"addmm\(\): mat2 must be a handgrad Tensor"):
        hg.addmm(a, a, [[1.0]])


# ---------------------------------------------------------------- nansum, nanmean, median

def test_nansum_nanmean():
    a = rng.normal(size=(3, 4))
    a[0, 1] = a[2, 3] = nan
    a[1] = nan
    close(hg.nansum(f64(a)), np.nansum(a))
    close(hg.nansum(f64(a), 1), np.nansum(a, 1))
    close(hg.nansum(f64(a), (0, 1), keepdim=True), np.nansum(a, (0, 1), keepdims=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns on the all-NaN row
        close(hg.nanmean(f64(a), 1), np.nanmean(a, 1))
        close(f64(a).nanmean(0, keepdim=True), np.nanmean(a, 0, keepdims=True))
    close(f64(a).nansum(), np.nansum(a))
    assert hg.nansum(i64([1, 2, 3])).item() == 6 and hg.nansum(i64([1, 2, 3])).dtype == hg.int64
    assert hg.nansum(f64([])).item() == 0.0 and math.isnan(hg.nanmean(f64([])).item())
    assert hg.nansum(f64(nan)).item() == 0.0
    close(hg.nanmean(f64([1.0, 2.0]).float(), dtype=hg.float64), 1.5)
    x = f64(a, True)
    hg.nansum(x).backward()
    close(x.grad, np.where(np.isnan(a), 0.0, 1.0))
    clean = rng.normal(size=(3, 4))
    checks(lambda t: hg.nansum(t, 0), clean)
    checks(lambda t: hg.nanmean(t, 1), clean)
    with pytest.raises(TypeError, match=r"nanmean\(\): input must be hg.float32 or hg.float64"):
        hg.nanmean(i64([1, 2]), dtype=hg.float64)
    with pytest.raises(IndexError, match=r"nansum\(\): dim 2 is out of range for a tensor of shape \(3, 4\)"):
        hg.nansum(f64(a), 2)


def lower_median(a):
    s = np.sort(a.reshape(-1))
    return s[(s.size - 1) // 2]


def test_median_values_indices_and_gradients():
    a = rng.normal(size=(4, 5))
    close(hg.median(f64(a)), lower_median(a))
    close(f64(a).median(), lower_median(a))
    values, indices = hg.median(f64(a), 1)
    close(values, [lower_median(r) for r in a])
    close(np.take_along_axis(a, indices.numpy()[:, None], 1)[:, 0], values.numpy())
    m = f64(a).median(0, keepdim=True)
    assert m.values.shape == (1, 5) and m.indices.shape == (1, 5) and type(m).__name__ == "median"
    assert hg.median(i64([3, 1, 2, 5])).item() == 2  # the lower of the middle two
    assert hg.median(f64(3.0), 0).values.item() == 3.0 and hg.median(f64(3.0), -1).indices.item() == 0
    assert math.isnan(hg.median(f64([])).item())
    empty_rows = hg.median(f64(np.zeros((0, 3))), 1)
    assert empty_rows.values.shape == (0,) and empty_rows.indices.dtype == hg.int64
    # NaN: median is NaN at the first NaN; nanmedian skips NaN (NaN, index 0 for a row of NaN)
    first_nan = hg.median(f64([[1.0, nan, nan, 2.0]]), 1)
    assert np.isnan(first_nan.values.numpy()).all() and first_nan.indices.tolist() == [1]
    assert math.isnan(hg.median(f64([1.0, nan, 3.0])).item())
    assert hg.nanmedian(f64([1.0, nan, 3.0, 2.0])).item() == 2.0
    nm = hg.nanmedian(f64([[nan, nan], [1.0, 2.0], [nan, 5.0]]), 1)
    assert np.isnan(nm.values.numpy()[0]) and nm.values.tolist()[1:] == [1.0, 5.0]
    assert nm.indices.tolist() == [0, 0, 1] and type(nm).__name__ == "nanmedian"
    assert f64([[nan, 4.0, 1.0]]).nanmedian(1).indices.tolist() == [2]
    close(hg.median(strided(a), 1).values, [lower_median(r) for r in a])
    # gradients: to the entry chosen; a whole-tensor median shares it among equal entries
    x = f64([3.0, 1.0, 3.0, 0.0, 5.0], True)
    hg.median(x).backward()
    close(x.grad, [0.5, 0, 0.5, 0, 0])
    untied = rng.permutation(20).reshape(4, 5) / 7.0
    checks(hg.median, untied)
    checks(lambda t: hg.median(t, 1).values, untied)
    checks(lambda t: hg.nanmedian(t, 0, keepdim=True).values, untied)
    checks(hg.nanmedian, untied)
    with pytest.raises(IndexError, match=r"median\(\): dim 0 of the tensor of shape \(0, 3\) is empty"):
        hg.median(f64(np.zeros((0, 3))), 0)
    with pytest.raises(TypeError, match=r"median\(\): bool tensors"):
        hg.median(hg.tensor([True, False]))
    with pytest.raises(TypeError, match=r"median\(\): keepdim goes with a dim"):
        hg.median(f64(a), keepdim=True)


# ---------------------------------------------------------------- quantile


def test_quantile_against_numpy():
    a = rng.normal(size=(5, 7))
    qs = np.array([0.0, 0.1, 0.25, 0.5, 0.9, 1.0])
    for mode in MODES:
        close(hg.quantile(f64(a), 0.3, interpolation=mode), np.quantile(a, 0.3, method=mode), err_msg=mode)
        close(hg.quantile(f64(a), f64(qs), dim=1, interpolation=mode), np.quantile(a, qs, axis=1, method=mode),
              err_msg=mode)
        close(f64(a).quantile(f64(qs), dim=0, keepdim=True, interpolation=mode),
              np.quantile(a, qs, axis=0, method=mode, keepdims=True), err_msg=mode)
    assert hg.quantile(f64(a), f64(qs), keepdim=True).shape == (6, 1, 1)
    assert hg.quantile(f64(a), f64(0.5), dim=-1).shape == (5,)
    assert hg.quantile(f64(3.0), 0.3).item() == 3.0 and hg.quantile(f64(3.0), 0.3, dim=0, keepdim=True).shape == ()
    assert hg.quantile(f64([1.0, 2.0]), f64([])).shape == (0,)
    close(hg.quantile(f64([0.0, 1.0, 2.0, 3.0]), f64([0.5, 1 / 6, 0.25]), interpolation="nearest"), [2, 0, 1])
    # float32: the ranks in float64 as PyTorch's (float32(1/6) · 3 is just above 0.5, so it rounds up)
    close(hg.quantile(hg.tensor([0.0, 1.0, 2.0, 3.0]), hg.tensor([1 / 6]), interpolation="nearest"), [1])
    close(hg.quantile(strided(a), 0.75, dim=1), np.quantile(a, 0.75, axis=1))
    f32 = hg.quantile(f64(a).float(), 0.3, dim=1)
    assert f32.dtype == hg.float32
    close(f32, np.quantile(a.astype(np.float32), 0.3, axis=1), rtol=1e-6)
    # NaN: quantile gives NaN for a slice with one; nanquantile skips them
    b = a.copy()
    b[1, 2] = b[3, :] = nan
    q = hg.quantile(f64(b), 0.4, dim=1).numpy()
    assert np.isnan(q[1]) and np.isnan(q[3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for mode in MODES:
            close(hg.nanquantile(f64(b), f64(qs), dim=1, interpolation=mode),
                  np.nanquantile(b, qs, axis=1, method=mode), err_msg=mode)
            close(f64(b).nanquantile(0.5, interpolation=mode), np.nanquantile(b, 0.5, method=mode), err_msg=mode)
    assert math.isnan(hg.quantile(f64([-inf, inf]), 0.0).item())  # PyTorch's lerp: −inf + 0·(inf − −inf)
    assert hg.quantile(f64([1.0, inf]), 0.0).item() == 1.0


def test_quantile_gradients_and_errors():
    a = rng.permutation(24).reshape(4, 6) / 5.0  # distinct: the order (and the gradient) is fixed
    for mode in MODES:
        checks(lambda t: hg.quantile(t, f64([0.1, 0.5, 0.77]), dim=1, interpolation=mode), a)
        checks(lambda t: hg.nanquantile(t, 0.35, interpolation=mode), a)
    x = f64([4.0, 1.0, 2.0, 3.0], True)  # 0.5 of four sorted entries: halfway between the 2nd and 3rd
    hg.quantile(x, 0.5).backward()
    close(x.grad, [0, 0, 0.5, 0.5])
    with pytest.raises(hg.Error, match=r"quantile\(\): q must be in \[0, 1\], got 1.5"):
        hg.quantile(f64(a), 1.5)
    with pytest.raises(hg.Error, match=r"quantile\(\): input must be non-empty"):
        hg.quantile(f64([]), 0.5)
    with pytest.raises(TypeError, match=r"quantile\(\): input must be hg.float32 or hg.float64, got hg.int64"):
        hg.quantile(i64([1, 2]), 0.5)
    with pytest.raises(TypeError, match=r"quantile\(\): q \(hg.float32\) must have the input's dtype \(hg.float64\)"):
        hg.quantile(f64(a), f64([0.5]).float())
    with pytest.raises(hg.Error, match=r"quantile\(\): q must be a number, a 0-d or a 1-d tensor"):
        hg.quantile(f64(a), f64([[0.5]]))
    with pytest.raises(ValueError, match=r"nanquantile\(\): interpolation must be one of"):
        hg.nanquantile(f64(a), 0.5, interpolation="foo")


# ---------------------------------------------------------------- searchsorted, bucketize, unique

def test_searchsorted_and_bucketize():
    seq = np.sort(rng.normal(size=9))
    seq[3] = seq[4]  # a tie
    vals = np.concatenate([rng.normal(size=(2, 5)), [[seq[4], seq[0], seq[-1], -inf, inf]]])
    for right in (False, True):
        side = "right" if right else "left"
        assert hg.searchsorted(f64(seq), f64(vals), right=right).tolist() == np.searchsorted(seq, vals, side).tolist()
        assert hg.searchsorted(f64(seq), f64(vals), side=side).tolist() == np.searchsorted(seq, vals, side).tolist()
        assert hg.bucketize(f64(vals), f64(seq), right=right).tolist() == np.searchsorted(seq, vals, side).tolist()
    rows = np.sort(rng.normal(size=(3, 6)), 1)
    queries = rng.normal(size=(3, 4))
    expected = [np.searchsorted(r, q).tolist() for r, q in zip(rows, queries)]
    assert hg.searchsorted(f64(rows), f64(queries)).tolist() == expected
    assert hg.searchsorted(strided(rows), strided(queries)).tolist() == expected
    unsorted = rng.permutation(seq)
    sorter = i64(np.argsort(unsorted, kind="stable"))
    assert hg.searchsorted(f64(unsorted), f64(vals), sorter=sorter).tolist() == np.searchsorted(seq, vals).tolist()
    out = hg.searchsorted(f64([1.0, 2.0, 3.0]), 2.5)
    assert out.dim() == 0 and out.item() == 2 and out.dtype == hg.int64
    assert hg.searchsorted(i64([1, 2, 3]), f64([2.5])).tolist() == [2]
    assert hg.searchsorted(hg.tensor([0.1]), 0.1, right=True).item() == 1  # compared in float32, as torch
    assert hg.searchsorted(f64([]), f64([2.5])).tolist() == [0]
    for seq_shape, values_shape in (((0, 0), (0, 0)), ((0, 4), (0, 2)), ((2, 0), (2, 3)), ((3,), (0,)), ((3,), (2, 0)),
                                    ((2, 3, 4), (2, 3, 0))):  # empty shapes: zeros of input's shape
        out = hg.searchsorted(f64(np.zeros(seq_shape)), f64(np.ones(values_shape)), right=True)
        assert out.shape == values_shape and out.dtype == hg.int64 and not out.numpy().any()
    assert hg.searchsorted(f64(np.zeros((0, 0))), f64(np.zeros((0, 0))), sorter=i64(np.zeros((0, 0)))).shape == (0, 0)
    assert hg.bucketize(f64(np.zeros((2, 0))), f64([1.0, 2.0])).shape == (2, 0)
    assert hg.searchsorted(f64([1.0]), f64(2.5), out_int32=True).item() == 1
    assert hg.bucketize(3, f64([1.0, 3.0, 5.0])).item() == 1
    # PyTorch's binary search with NaN (checked against torch 2.15)
    with_nan = f64([1.0, 2.0, 2.0, 3.0, nan])
    assert hg.searchsorted(with_nan, f64([nan, 2.0, -inf, inf, 0.5])).tolist() == [5, 1, 0, 5, 0]
    assert hg.searchsorted(with_nan, f64([nan, 2.0, -inf, inf, 0.5]), right=True).tolist() == [5, 5, 0, 5, 0]
    assert hg.searchsorted(f64([1.0, nan, 3.0]), f64([2.0, 3.0, 4.0])).tolist() == [2, 2, 3]
    x = f64(vals, True)
    assert not hg.searchsorted(f64(seq), x).requires_grad
    with pytest.raises(hg.Error, match=r"searchsorted\(\): sorted_sequence \(2, 2\) must be 1-d or share"):
        hg.searchsorted(f64(np.zeros((2, 2))), f64([2.5, 3.5]))
    with pytest.raises(hg.Error, match=r"searchsorted\(\): sorted_sequence must have at least one dim"):
        hg.searchsorted(f64(3.0), f64([1.0]))
    with pytest.raises(ValueError, match=r"searchsorted\(\): side='left' and right=True"):
        hg.searchsorted(f64(seq), f64([1.0]), side="left", right=True)
    with pytest.raises(ValueError, match=r"searchsorted\(\): side must be 'left' or 'right'"):
        hg.searchsorted(f64(seq), f64([1.0]), side="middle")
    with pytest.raises(hg.Error, match=r"searchsorted\(\): sorter holds positions outside \[0, 3\)"):
        hg.searchsorted(f64([3.0, 1.0, 2.0]), f64([2.5]), sorter=i64([1, 2, 3]))
    with pytest.raises(hg.Error, match=r"searchsorted\(\): sorter must be int64 of sorted_sequence's shape"):
        hg.searchsorted(f64([3.0, 1.0, 2.0]), f64([2.5]), sorter=i64([1, 2]))
    with pytest.raises(hg.Error, match=r"bucketize\(\): boundaries must be 1-d"):
        hg.bucketize(f64([1.0]), f64([[1.0, 3.0]]))
    with pytest.raises(TypeError, match=r"searchsorted\(\): sorted_sequence is a bool tensor"):
        hg.searchsorted(hg.tensor([False, True]), hg.tensor([True]))


def test_unique():
    a = rng.integers(0, 5, size=(3, 4))
    values, inverse, counts = hg.unique(i64(a), return_inverse=True, return_counts=True)
    v, inv, c = np.unique(a, return_inverse=True, return_counts=True)
    assert values.tolist() == v.tolist() and counts.tolist() == c.tolist()
    assert inverse.shape == (3, 4) and inverse.numpy().reshape(-1).tolist() == inv.reshape(-1).tolist()
    assert i64(a).unique(sorted=False).tolist() == v.tolist()  # ascending, as PyTorch's CPU
    vals, inv2 = hg.unique(f64([3.0, 1.0, nan, 1.0, nan, -0.0, 0.0]), return_inverse=True)
    assert str(vals.tolist()) == "[-0.0, 1.0, 3.0, nan, nan]"  # each NaN its own; −0.0 met first
    assert inv2.tolist() == [2, 1, 3, 1, 4, 0, 0]
    v0, i0, c0 = hg.unique(f64(3.0), return_inverse=True, return_counts=True)
    assert v0.tolist() == [3.0] and i0.dim() == 0 and c0.tolist() == [1]
    assert hg.unique(hg.tensor([True, False, True]), return_counts=True)[1].tolist() == [1, 2]
    assert hg.unique(f64([])).shape == (0,)
    assert not hg.unique(f64([2.0, 1.0], True)).requires_grad  # not differentiable


def _distinct_rows(rows, consecutive):
    """The distinct rows of a 2-d array, inverse and counts, by hand: sorted lexicographically
    (Python's tuple order) unless consecutive, a new one wherever a row differs from the last."""
    order = list(range(len(rows))) if consecutive else sorted(range(len(rows)), key=lambda k: tuple(rows[k]))
    kept, inverse, counts = [], [0] * len(rows), []
    for k in order:
        if not kept or tuple(rows[k]) != tuple(kept[-1]):
            kept.append(rows[k])
            counts.append(0)
        inverse[k], counts[-1] = len(kept) - 1, counts[-1] + 1
    return kept, inverse, counts


@pytest.mark.parametrize("name", ["unique", "unique_consecutive"])
def test_unique_along_a_dim(name):
    fn = getattr(hg, name, getattr(hg._search, name))  # hg._search's until hg exports unique_consecutive
    a = rng.integers(0, 2, size=(4, 3, 5))
    for dim in (0, 1, 2, -1):
        values, inverse, counts = fn(i64(a), dim=dim, return_inverse=True, return_counts=True)
        rows = [tuple(s.reshape(-1)) for s in np.moveaxis(a, dim, 0)]
        kept, inv, cnt = _distinct_rows(rows, name == "unique_consecutive")
        others = tuple(np.delete(a.shape, dim % 3))
        want = np.moveaxis(np.array(kept).reshape((len(kept),) + others), 0, dim)
        np.testing.assert_array_equal(values.numpy(), want)
        assert inverse.tolist() == inv and counts.tolist() == cnt
        assert fn(f64(a), dim=dim).dtype == hg.float64 and fn(hg.tensor(a > 0), dim=dim).dtype == hg.bool
    if name == "unique":
        assert i64(a).unique(dim=1).tolist() == np.unique(a, axis=1).tolist()
        assert i64(a).unique(sorted=False, dim=0).tolist() == np.unique(a, axis=0).tolist()  # sorted, as PyTorch's CPU
    # a slice holding a NaN differs from every other; -0.0 equals 0.0 (the first met kept)
    x = f64([[1.0, nan], [1.0, nan], [0.0, 2.0], [-0.0, 2.0]])
    values, inverse, counts = fn(x, dim=0, return_inverse=True, return_counts=True)
    if name == "unique":
        assert str(values.tolist()) == "[[0.0, 2.0], [1.0, nan], [1.0, nan]]"
        assert inverse.tolist() == [1, 2, 0, 0] and counts.tolist() == [2, 1, 1]
    else:
        assert str(values.tolist()) == "[[1.0, nan], [1.0, nan], [0.0, 2.0]]"
        assert inverse.tolist() == [0, 1, 2, 2] and counts.tolist() == [1, 1, 2]
    values, inverse, counts = fn(strided(np.array([[3.0, 1.0], [3.0, 1.0]])), dim=1, return_inverse=True,
                                 return_counts=True)
    assert values.tolist() == ([[1.0, 3.0], [1.0, 3.0]] if name == "unique" else [[3.0, 1.0], [3.0, 1.0]])
    # an empty dim along dim: no slices; empty elsewhere: refused, as PyTorch
    values, inverse, counts = fn(f64(np.zeros((3, 0))), dim=1, return_inverse=True, return_counts=True)
    assert values.shape == (3, 0) and inverse.shape == (0,) and counts.shape == (0,)
    assert fn(f64([]), dim=0).shape == (0,)
    assert not fn(f64(a, True), dim=0).requires_grad
    with pytest.raises(hg.Error, match=rf"{name}\(\): shape \(0, 3\) has a size 0 other than along dim 1"):
        fn(f64(np.zeros((0, 3))), dim=1)
    with pytest.raises(hg.Error, match=rf"{name}\(\): shape \(0, 0\) has a size 0 other than along dim 0"):
        fn(f64(np.zeros((0, 0))), dim=0)
    with pytest.raises(IndexError, match=rf"{name}\(\): dim 0 is out of range for a 0-d tensor"):
        fn(f64(1.0), dim=0)
    with pytest.raises(IndexError, match=rf"{name}\(\): dim 3 is out of range for a tensor of shape \(4, 3, 5\)"):
        fn(i64(a), dim=3)
    with pytest.raises(TypeError, match=rf"{name}\(\): return_counts must be a bool"):
        fn(i64(a), return_counts=1)


UNIQUE_CONSECUTIVE = getattr(hg, "unique_consecutive", hg._search.unique_consecutive)


def test_unique_consecutive():
    a = np.array([[1.0, 1.0, 2.0], [2.0, nan, nan], [-0.0, 0.0, 1.0]])
    values, inverse, counts = UNIQUE_CONSECUTIVE(f64(a), return_inverse=True, return_counts=True)
    assert str(values.tolist()) == "[1.0, 2.0, nan, nan, -0.0, 1.0]"  # each NaN its own; −0.0 and 0.0 one run
    assert inverse.tolist() == [[0, 0, 1], [1, 2, 3], [4, 4, 5]] and counts.tolist() == [2, 2, 1, 1, 2, 1]
    assert f64(a).unique_consecutive().shape == (6,)
    v0, i0, c0 = UNIQUE_CONSECUTIVE(f64(3.0), return_inverse=True, return_counts=True)
    assert v0.tolist() == [3.0] and i0.dim() == 0 and c0.tolist() == [1]
    v, i, c = UNIQUE_CONSECUTIVE(f64(np.zeros((0, 3))), return_inverse=True, return_counts=True)
    assert v.shape == (0,) and i.shape == (0, 3) and c.shape == (0,)
    assert UNIQUE_CONSECUTIVE(hg.tensor([True, True, False])).tolist() == [True, False]
