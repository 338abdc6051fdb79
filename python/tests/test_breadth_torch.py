"""The breadth ops against PyTorch 2.15 (skipped without torch): the same lambda on both, values
and the float64 gradients of the float results against one random direction, to 1e-10; where the
two differ on purpose, the test says why."""
import numpy as np
import pytest

import handgrad as hg
from breadth_helpers import MODES, f64, inf, nan

torch = pytest.importorskip("torch")

rng = np.random.default_rng(33)


# ---------------------------------------------------------------- against PyTorch

def _both(fn, arrays, grad=True, grad_rtol=1e-10):
    """fn on handgrad and on torch over float64 copies of arrays: values (and gradients of the
    float results against one random direction) to 1e-10."""
    hins = [hg.tensor(a, dtype=hg.float64, requires_grad=grad) if a.dtype.kind == "f" else hg.tensor(a)
            for a in arrays]
    tins = [torch.tensor(a, dtype=torch.float64, requires_grad=grad) if a.dtype.kind == "f" else torch.tensor(a)
            for a in arrays]
    hout, tout = fn(hg, *hins), fn(torch, *tins)
    hs = list(hout) if isinstance(hout, tuple) else [hout]
    ts = list(tout) if isinstance(tout, tuple) else [tout]
    assert len(hs) == len(ts)
    for h, t in zip(hs, ts):
        assert tuple(h.shape) == tuple(t.shape)
        np.testing.assert_allclose(h.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
    floats = [k for k, t in enumerate(ts) if t.dtype == torch.float64 and t.requires_grad]
    leaves = [k for k, a in enumerate(arrays) if a.dtype.kind == "f"]
    if not (grad and floats and leaves):
        return
    g = [rng.normal(size=tuple(ts[k].shape)) for k in floats]
    hgrads = hg.autograd.grad([hs[k] for k in floats], [hins[k] for k in leaves],
                              [hg.tensor(x, dtype=hg.float64) for x in g], allow_unused=True)
    tgrads = torch.autograd.grad([ts[k] for k in floats], [tins[k] for k in leaves],
                                 [torch.tensor(x) for x in g], allow_unused=True)
    for h, t, k in zip(hgrads, tgrads, leaves):
        hv = np.zeros(arrays[k].shape) if h is None else h.numpy()
        tv = np.zeros(arrays[k].shape) if t is None else t.numpy()
        np.testing.assert_allclose(hv, tv, rtol=grad_rtol, atol=1e-12)


def test_against_torch():
    r = lambda *s: rng.normal(size=s)  # noqa: E731
    distinct = rng.permutation(30).reshape(5, 6) / 7.0
    with_nan = distinct.copy()
    with_nan[1, 2] = with_nan[3] = nan
    one_nan = distinct.copy()
    one_nan[2, 4] = nan
    edges = np.array([-4.0, -3.0, -1.0, 0.0, 3.0, 4.0, 2.9999, -2.9999])
    cases = [
        (lambda m, i, x, y: m.addmm(i, x, y, beta=0.5, alpha=-2), (r(3, 4), r(3, 5), r(5, 4))),
        (lambda m, i, x, y: m.addmm(i, x, y, beta=0), (np.full((3, 4), nan), r(3, 5), r(5, 4))),
        (lambda m, i, x, y: m.addmv(i, x, y, alpha=0), (r(3), np.full((3, 5), nan), r(5))),
        (lambda m, i, x, y: m.baddbmm(i, x, y, beta=2, alpha=0.5), (r(4), r(2, 3, 5), r(2, 5, 4))),
        (lambda m, i, x, y: m.addcmul(i, x, y, value=0.3), (r(3, 1), r(4), r(2, 3, 4))),
        (lambda m, i, x, y: m.addcdiv(i, x, y, value=-2), (r(3, 4), r(4), r(3, 4) + 5)),
        (lambda m, x, y: m.mv(x, y), (r(3, 5), r(5))),
        (lambda m, x, y: m.vdot(x, y), (r(5), r(5))),
        (lambda m, x, y: m.inner(x, y), (r(2, 3, 4), r(5, 4))),
        (lambda m, x: m.nansum(x, 1), (with_nan,)),
        (lambda m, x: m.nanmean(x, 0, keepdim=True), (with_nan[:3],)),
        (lambda m, x: m.median(x), (distinct,)),
        (lambda m, x: m.median(x), (np.array([3.0, 1.0, 3.0, 0.0, 5.0, 3.0]),)),
        (lambda m, x: m.median(x, 1), (with_nan,)),
        (lambda m, x: m.nanmedian(x, 1, keepdim=True), (with_nan,)),
        (lambda m, x: m.nanmedian(x), (with_nan,)),
        (lambda m, x: m.median(x, 0), (np.round(r(6, 4)),)),
        (lambda m, x: m.cummax(x, 1), (distinct,)),
        (lambda m, x: m.cummin(x, 0), (distinct,)),
        (lambda m, x: m.cummax(x, 1), (np.round(r(3, 9)),)),
        (lambda m, x: m.cummin(x, 1), (np.array([[3.0, 1.0, 1.0, nan, 2.0, nan, 0.0]]),)),
        (lambda m, x: m.logcumsumexp(x, 1), (r(3, 140) * 20,)),
        (lambda m, x: m.logcumsumexp(x, 0), (np.array([-1000.0, 0.0, -inf, 1.0, 1000.0]),)),
        (lambda m, x, p: m.diff(x, 2, 0, prepend=p), (r(4, 3), r(1, 3))),
        (lambda m, x: m.rot90(x, 3, [2, 0]), (r(2, 3, 4),)),
        (lambda m, x: m.rot90(x, -1), (r(2, 3),)),
        (lambda m, x: m.tensor_split(x, 4, 1), (r(3, 10),)),
        (lambda m, x: m.tensor_split(x, [2, -3, 8], 1), (r(3, 10),)),
        (lambda m, x, i: m.take(x, i), (r(3, 4), np.array([[0, -1, 5], [11, 2, 2]]))),
        (lambda m, x, y: m.broadcast_tensors(x, y), (r(2, 1, 3), r(4, 1))),
        (lambda m, x: m.nn.functional.softmin(x, 1), (r(3, 5),)),
        (lambda m, x: m.nn.functional.glu(x, 0), (r(4, 3),)),
        (lambda m, x: m.nn.functional.hardswish(x), (edges,)),
        (lambda m, x: m.nn.functional.threshold(x, -1.0, 0.5), (edges,)),
    ]
    for n in (1, 4, 9, 17, 100):  # slices of NaN only: PyTorch's partial sort picks the index
        cases.append((lambda m, x: m.nanmedian(x, 0), (np.full((n, 3), nan),)))
    for mode in MODES:
        cases.append((lambda m, x, q, mode=mode: m.quantile(x, q, 1, True, interpolation=mode),
                      (distinct, np.array([0.0, 0.13, 0.5, 0.77, 1.0]))))
        cases.append((lambda m, x, mode=mode: m.nanquantile(x, 0.3, 0, interpolation=mode), (with_nan,)))
        cases.append((lambda m, x, mode=mode: m.quantile(x, 0.41, interpolation=mode), (one_nan,)))
        # several NaN in a slice: which NaN the result reads (and sends the gradient to) follows
        # each library's sort among equal keys; the values agree
        cases.append((lambda m, x, mode=mode: m.quantile(x, 0.41, interpolation=mode), (with_nan,), False))
    for k, (fn, arrays, *grad) in enumerate(cases):
        try:
            _both(fn, [np.asarray(a) for a in arrays], *grad)
        except AssertionError as e:
            raise AssertionError(f"case {k}: {e}") from None
    # PyTorch's hardsigmoid backward multiplies by the float32 constant 1/6 at every dtype (3e-8 off
    # in float64); handgrad's is 1/6 to the dtype's precision
    _both(lambda m, x: m.nn.functional.hardsigmoid(x), [edges], grad_rtol=1e-7)
    seq = np.sort(r(2, 7), 1)
    vals = r(2, 4)
    for right in (False, True):
        assert hg.searchsorted(f64(seq), f64(vals), right=right).tolist() == \
            torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right).tolist()
        assert hg.bucketize(f64(vals), f64(seq[0]), right=right).tolist() == \
            torch.bucketize(torch.tensor(vals), torch.tensor(seq[0]), right=right).tolist()
    a = np.array([3.0, 1.0, nan, 1.0, nan, -0.0, 0.0, 2.0])
    for ours, theirs in zip(hg.unique(f64(a), return_inverse=True, return_counts=True),
                            torch.unique(torch.tensor(a), return_inverse=True, return_counts=True)):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert hg.broadcast_shapes((2, 1), (3,), 1) == tuple(torch.broadcast_shapes((2, 1), (3,), 1))
    for r_, c, k in ((3, 4, 1), (5, 3, -2), (0, 2, 0)):
        assert hg.tril_indices(r_, c, k).tolist() == torch.tril_indices(r_, c, k).tolist()
        assert hg.triu_indices(r_, c, k).tolist() == torch.triu_indices(r_, c, k).tolist()


def test_unique_searchsorted_and_diff_on_torchs_edge_cases():
    """unique and unique_consecutive along a dim (and flattened), searchsorted on empty shapes and
    diff with n=0 give torch's results."""
    unique_consecutive = getattr(hg, "unique_consecutive", hg._search.unique_consecutive)
    a = rng.integers(0, 2, size=(4, 3, 5))
    x = np.array([[1.0, nan], [1.0, nan], [0.0, 2.0], [-0.0, 2.0], [inf, -inf], [0.0, 2.0]])
    for array, dims in ((a, (None, 0, 1, 2, -1)), (a.astype(float), (0, -2)), (a > 0, (None, 1)), (x, (None, 0, 1)),
                        (np.zeros((3, 0)), (1,)), (np.zeros(0), (None, 0)), (np.array(2.0), (None,))):
        for dim in dims:
            for ours, theirs in ((hg.unique, torch.unique), (unique_consecutive, torch.unique_consecutive)):
                got = ours(hg.tensor(array), dim=dim, return_inverse=True, return_counts=True)
                want = theirs(torch.tensor(array), dim=dim, return_inverse=True, return_counts=True)
                for g, w in zip(got, want):
                    assert g.shape == tuple(w.shape) and str(g.tolist()) == str(w.tolist()), (array, dim, ours)
    for seq_shape, values_shape in (((0, 0), (0, 0)), ((0, 4), (0, 2)), ((2, 0), (2, 3)), ((3,), (2, 0))):
        seq, values = np.zeros(seq_shape), rng.normal(size=values_shape)
        for right in (False, True):
            got = hg.searchsorted(f64(seq), f64(values), right=right)
            want = torch.searchsorted(torch.tensor(seq), torch.tensor(values), right=right)
            assert got.shape == tuple(want.shape) and got.tolist() == want.tolist()
    b, pre, post = rng.normal(size=(3, 4)), rng.normal(size=(2, 4)), rng.normal(size=(1, 4))
    _both(lambda m, t, p, q: m.diff(t, 0, 0, p, q), [b, pre, post])
    _both(lambda m, t: m.diff(t, 0, 7), [b])
