"""Rows of the breadth ops (1 of 2): addmm, addmv, baddbmm, addcmul, addcdiv, mv, vdot, inner;
nansum, nanmean, median, nanmedian, quantile, nanquantile; searchsorted, bucketize, unique,
unique_consecutive. The scans, shapes, creation and activations are rows_breadth_shapes.py; the
sample makers both use (distinct, away_from_kinks) are here."""

import numpy as np

import handgrad as hg

from . import Bool, Const, Dtype, F32, Int, Row, Sample
from .samples import EDGES, uniform

NAN, INF = np.nan, np.inf
MODES = ("linear", "lower", "higher", "midpoint", "nearest")
NOT_DIFFERENTIABLE = "its results are positions, counts or values read on the host: not differentiable"


def _fn(name):
    return lambda m, *args, **kw: getattr(m, name)(*args, **kw)


def _searchsorted_fn(m, sorted_sequence, values, sorter=None, **kw):
    return m.searchsorted(sorted_sequence, values, sorter=sorter, **kw)


def _F(name):
    return lambda m, *args, **kw: getattr(m.nn.functional, name)(*args, **kw)


def distinct(rng, shape, scale=1.0):
    """Distinct values (a shuffled grid with jitter): sorts and running extremes keep their order
    within finite differences."""
    n = int(np.prod(shape))
    grid = rng.permutation(n) + rng.uniform(0.2, 0.8, size=n)
    return np.asarray(grid.reshape(shape) * scale / max(n, 1), dtype=np.float64)


def away_from_kinks(rng, shape, kinks=(-3.0, 3.0), width=(-5.0, 5.0)):
    x = rng.uniform(*width, size=shape)
    for k in kinks:
        x = np.where(np.abs(x - k) < 0.05, x + 0.1, x)
    return x


# ---------------------------------------------------------------- products

def _addmm(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(3, 4), u(3, 5), u(5, 4)), {}, "random"),
            Sample((u(3, 4), u(3, 5), u(5, 4)), {"beta": 0.5, "alpha": -2.0}, "beta and alpha"),
            Sample((u(4), u(3, 5), u(5, 4)), {"beta": 2}, "input broadcast (a row)"),
            Sample((u(), u(2, 3), u(3, 2)), {}, "0-d input"),
            Sample((u(2, 3), u(2, 0), u(0, 3)), {}, "empty inner dim"),
            Sample((u(0, 3), u(0, 2), u(2, 3)), {}, "empty rows"),
            Sample((np.full((2, 2), NAN), u(2, 3), u(3, 2)), {"beta": 0}, "beta 0 ignores NaN input"),
            Sample((u(2, 2), np.array([[NAN, 1.0, INF], [1.0, 2.0, 3.0]]), u(3, 2)), {"alpha": 0},
                   "alpha 0 ignores NaN and inf", grad=False),
            Sample((Int([[1, 2], [3, 4]]), Int([[1, 0, 2], [3, 1, 1]]), Int([[1, 2], [0, 1], [5, 2]])),
                   {"beta": 2, "alpha": 3}, "int operands"),
            Sample((F32(u(2, 2)), F32(u(2, 3)), F32(u(3, 2))), {}, "float32")]


def _addmv(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(3), u(3, 5), u(5)), {}, "random"),
            Sample((u(3), u(3, 5), u(5)), {"beta": -1, "alpha": 0.25}, "beta and alpha"),
            Sample((u(1), u(3, 5), u(5)), {}, "input broadcast"),
            Sample((u(2), u(2, 0), u(0)), {}, "empty inner dim"),
            Sample((np.full(3, NAN), u(3, 2), u(2)), {"beta": 0}, "beta 0 ignores NaN input"),
            Sample((u(2), np.array([[NAN, 1.0], [1.0, INF]]), u(2)), {"alpha": 0}, "alpha 0 ignores NaN and inf",
                   grad=False),
            Sample((Int([1, 2]), Int([[1, 0, 2], [3, 1, 1]]), Int([1, 2, 3])), {"alpha": 2}, "int operands"),
            Sample((F32(u(2)), F32(u(2, 3)), F32(u(3))), {}, "float32")]


def _baddbmm(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(2, 3, 4), u(2, 3, 5), u(2, 5, 4)), {}, "random"),
            Sample((u(4), u(2, 3, 5), u(2, 5, 4)), {"beta": 2, "alpha": 0.5}, "input broadcast, beta and alpha"),
            Sample((u(1, 3, 1), u(2, 3, 0), u(2, 0, 1)), {}, "empty inner dim"),
            Sample((np.full((2, 2, 2), NAN), u(2, 2, 3), u(2, 3, 2)), {"beta": 0}, "beta 0 ignores NaN input"),
            Sample((u(1, 2, 2), np.array([[[NAN, 1.0], [1.0, 1.0]]]), u(1, 2, 2)), {"alpha": 0},
                   "alpha 0 keeps 0·NaN", grad=False),
            Sample((Int([[[1, 2]]]), Int([[[1, 0], [2, 1]]]), Int([[[3, 1], [1, 2]]])), {"beta": 2}, "int operands"),
            Sample((F32(u(2, 2, 2)), F32(u(2, 2, 3)), F32(u(2, 3, 2))), {}, "float32")]


def _pointwise3(divide):
    def make(rng):
        u = lambda *s: uniform(rng, s)  # noqa: E731
        d = (lambda *s: uniform(rng, s, (0.5, 2.0), signed=True)) if divide else u  # noqa: E731
        out = [Sample((u(3, 4), u(3, 4), d(3, 4)), {}, "random"),
               Sample((u(3, 1), u(4), d(2, 3, 4)), {"value": 0.5}, "broadcast, value"),
               Sample((u(), u(2, 3), d()), {"value": -2}, "0-d"),
               Sample((u(0, 3), u(1, 3), d(3)), {}, "empty"),
               Sample((EDGES.copy(), EDGES[::-1].copy(), np.full(7, 2.0)), {}, "edge ±0 ±inf nan", grad=False),
               Sample((u(3), np.array([INF, 1.0, NAN]), d(3)), {"value": 0}, "value 0 (0·inf is nan)", grad=False),
               Sample((F32(u(2, 3)), F32(u(2, 3)), F32(d(2, 3))), {}, "float32"),
               Sample((u(2, 3), Int([[1, 2, 3], [4, 5, 6]]), d(2, 3)), {}, "an int operand")]
        if not divide:
            out.append(Sample((Int([1, 2]), Int([3, 4]), Int([5, 6])), {"value": 2}, "int operands"))
        return out
    return make


def _mv(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(3, 5), u(5)), {}, "random"), Sample((u(0, 2), u(2)), {}, "empty rows"),
            Sample((u(2, 0), u(0)), {}, "empty inner dim"),
            Sample((Int([[1, 2], [3, 4]]), Int([5, -1])), {}, "int operands"),
            Sample((F32(u(2, 3)), F32(u(3))), {}, "float32")]


def _vdot(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(5), u(5)), {}, "random"), Sample((u(0), u(0)), {}, "empty"),
            Sample((Int([1, 2]), Int([3, 4])), {}, "int operands"), Sample((F32(u(3)), F32(u(3))), {}, "float32"),
            Sample((EDGES.copy(), EDGES[::-1].copy()), {}, "edge ±0 ±inf nan", grad=False)]


def _inner(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(2, 3, 4), u(5, 4)), {}, "random"), Sample((u(4), u(4)), {}, "vectors"),
            Sample((u(), u(2, 3)), {}, "0-d operand"), Sample((u(2, 0), u(3, 0)), {}, "empty last dim"),
            Sample((Int([[1, 2], [3, 4]]), Int([5, -1])), {}, "int operands"),
            Sample((F32(u(2, 3)), F32(u(3))), {}, "float32")]


# ---------------------------------------------------------------- nansum, nanmean, median, quantile

def _with_nan(rng, shape):
    x = uniform(rng, shape)
    x[rng.random(shape) < 0.3] = NAN
    return x


def _nanreduce(ints):
    def make(rng):
        u = lambda *s: uniform(rng, s)  # noqa: E731
        out = [Sample((u(3, 4),), {}, "every entry"), Sample((_with_nan(rng, (3, 4)),), {"dim": 1}, "NaN, dim 1"),
               Sample((_with_nan(rng, (3, 4, 2)),), {"dim": (0, 2), "keepdim": True}, "NaN, dims (0, 2), keepdim"),
               Sample((np.full((2, 3), NAN),), {"dim": 0}, "all NaN", grad=False),
               Sample((u(),), {}, "0-d"), Sample((u(0, 3),), {"dim": 1}, "empty"),
               Sample((np.array([[INF, -INF, 1.0], [INF, 2.0, NAN]]),), {"dim": 1}, "inf", grad=False),
               Sample((F32(_with_nan(rng, (2, 3))),), {"dim": 1}, "float32"),
               Sample((F32(u(2, 3)),), {"dtype": Dtype("float64")}, "float32 to dtype float64")]
        if ints:
            out += [Sample((Int([[1, 2], [3, 4]]),), {"dim": 0}, "int operand"),
                    Sample((Bool([[True, False], [True, True]]),), {}, "bool operand")]
        return out
    return make


def _median(nan_skipping):
    def make(rng):
        x = distinct(rng, (4, 5))
        ties = np.array([[3.0, 1.0, 3.0, 0.0, 3.0], [2.0, 2.0, 2.0, 5.0, 5.0]])
        nans = np.array([[1.0, NAN, NAN, 2.0, 0.5], [NAN, NAN, NAN, NAN, NAN], [4.0, NAN, 1.0, 3.0, 2.0]])
        return [Sample((x,), {}, "every entry"), Sample((x,), {"dim": 1}, "dim 1"),
                Sample((x,), {"dim": -2, "keepdim": True}, "dim -2, keepdim"),
                Sample((distinct(rng, (6,)),), {}, "even count (the lower middle)"),
                Sample((uniform(rng, ()),), {}, "0-d"), Sample((uniform(rng, ()),), {"dim": 0}, "0-d, dim 0"),
                Sample((uniform(rng, (0, 3)),), {"dim": 1}, "empty rows"),
                Sample((uniform(rng, (0,)),), {}, "empty (nan)", grad=False),
                Sample((ties,), {"dim": 1}, "ties (the stable order's index)", grad=False),
                Sample((ties,), {}, "ties, every entry", grad=False),
                Sample((nans,), {"dim": 1}, "NaN" + (" skipped" if nan_skipping else ": the first"), grad=False),
                Sample((nans,), {}, "NaN, every entry", grad=False),
                Sample((np.array([[INF, -INF, 1.0, 2.0]]),), {"dim": 1}, "inf", grad=False),
                Sample((Int([[3, 1, 2, 5], [0, 0, 7, 1]]),), {"dim": 1}, "int operand"),
                Sample((Int([3, 1, 2, 5]),), {}, "int operand, every entry"),
                Sample((F32(distinct(rng, (2, 5))),), {"dim": 0}, "float32")]
    return make


def _quantile(nan_skipping):
    def make(rng):
        x = distinct(rng, (4, 6))
        q = np.array([0.13, 0.47, 0.77])  # ranks 0.65, 2.35, 3.85 of 6: away from integers and halves
        out = []
        for mode in MODES:
            out += [Sample((x, 0.3), {"dim": 1, "interpolation": mode}, f"{mode}, a number q, dim 1"),
                    Sample((x, q), {"dim": 1, "keepdim": True, "interpolation": mode}, f"{mode}, q a tensor, keepdim"),
                    Sample((x, Const(q)), {"interpolation": mode}, f"{mode}, every entry")]
        nans = np.array([[1.0, NAN, 3.0, 2.0], [NAN, NAN, NAN, NAN], [4.0, 0.5, 1.0, 3.0]])
        out += [Sample((x, Const(np.array(0.31))), {"dim": 0}, "0-d q"),
                Sample((uniform(rng, ()), 0.4), {}, "0-d input"),
                Sample((uniform(rng, ()), 0.4), {"dim": 0}, "0-d, dim 0"),
                Sample((x, Const(np.zeros(0))), {"dim": 1}, "no q"),
                Sample((x, Const(np.array([0.0, 1.0]))), {"dim": 1}, "q 0 and 1", grad=False),
                Sample((nans, 0.5), {"dim": 1}, "NaN", grad=False),
                Sample((np.array([[1.0, INF, -INF, 2.0]]), Const(np.array([0.0, 0.5, 1.0]))), {"dim": 1}, "inf",
                       grad=False),
                Sample((F32(distinct(rng, (2, 5))), 0.3), {"dim": 1}, "float32"),
                Sample((F32(np.arange(4.0)), F32(np.array([1 / 6]))), {"interpolation": "nearest"},
                       "float32 q near a half (ranks in float64)")]
        if nan_skipping:
            x = distinct(rng, (3, 5))
            x[0, 1] = x[2, 3] = NAN
            out.append(Sample((x, q), {"dim": 1}, "NaN skipped, gradient"))
        return out
    return make


# ---------------------------------------------------------------- search, unique

def _searchsorted(rng):
    seq = np.sort(uniform(rng, (7,)))
    seq[3] = seq[4]
    vals = np.concatenate([uniform(rng, (5,)), [seq[4], seq[0], -INF, INF, NAN]])
    rows = np.sort(uniform(rng, (3, 6)), 1)
    shuffled = rng.permutation(7)
    return [Sample((seq, vals), {}, "1-d"), Sample((seq, vals), {"right": True}, "right"),
            Sample((seq, vals), {"side": "right"}, "side right"),
            Sample((rows, uniform(rng, (3, 4))), {}, "rows"),
            Sample((seq[shuffled], vals, Int(np.argsort(seq[shuffled], kind="stable"))), {}, "sorter"),
            Sample((seq, 0.25), {}, "a number"), Sample((seq, uniform(rng, ())), {}, "0-d values"),
            Sample((uniform(rng, (0,)), vals), {}, "empty sequence"),
            Sample((np.array([1.0, NAN, 3.0]), np.array([2.0, 3.0, 4.0, NAN])), {}, "NaN in the sequence"),
            Sample((Int([1, 2, 2, 5]), np.array([2.0, 2.5, -1.0])), {"right": True}, "int sequence, float values"),
            Sample((F32(seq), F32(vals)), {}, "float32"),
            Sample((F32(np.array([0.1, 0.2])), 0.1), {"right": True}, "float32, a number (compared in float32)"),
            Sample((uniform(rng, (0, 0)), uniform(rng, (0, 0))), {}, "empty rows"),
            Sample((uniform(rng, (0, 0)), uniform(rng, (0, 0)), Int(np.zeros((0, 0)))), {}, "empty rows, sorter"),
            Sample((rows[:, :0], uniform(rng, (3, 2))), {"right": True}, "empty sequences"),
            Sample((seq, uniform(rng, (2, 0))), {}, "empty values")]


def _bucketize(rng):
    bounds = np.sort(uniform(rng, (5,)))
    vals = np.concatenate([uniform(rng, (5,)), bounds[:2], [NAN, INF]]).reshape(3, 3)
    return [Sample((vals, bounds), {}, "random"), Sample((vals, bounds), {"right": True}, "right"),
            Sample((0.5, bounds), {}, "a number"), Sample((Int([[1, 5], [3, 0]]), Int([1, 3, 5])), {}, "int operands"),
            Sample((F32(vals), F32(bounds)), {}, "float32")]


def _unique(rng):
    ints = Int(rng.integers(0, 5, size=(3, 4)))
    floats = np.array([3.0, 1.0, NAN, 1.0, -0.0, 0.0, INF, -INF, 3.0])  # one NaN: PyTorch's order among NaN varies
    return [Sample((ints,), {}, "ints"), Sample((ints,), {"return_inverse": True, "return_counts": True},
                                                 "inverse and counts"),
            Sample((ints,), {"sorted": False, "return_counts": True}, "sorted False"),
            Sample((floats,), {"return_inverse": True, "return_counts": True}, "edge ±0 ±inf nan"),
            Sample((uniform(rng, ()),), {"return_inverse": True}, "0-d"), Sample((uniform(rng, (0, 2)),), {}, "empty"),
            Sample((Bool([True, False, True]),), {"return_counts": True}, "bool operand"),
            Sample((F32(floats),), {}, "float32"), *_along_a_dim(rng)]


def _along_a_dim(rng):
    """unique's and unique_consecutive's samples with dim: the distinct slices (NaN in a slice
    makes it distinct), an empty dim along dim, a non-contiguous input."""
    ints = Int(rng.integers(0, 2, size=(4, 3, 5)))
    rows = np.array([[1.0, NAN], [1.0, NAN], [0.0, 2.0], [-0.0, 2.0], [INF, -INF], [0.0, 2.0]])
    both = {"return_inverse": True, "return_counts": True}
    return [Sample((ints,), {"dim": 0, **both}, "dim 0"), Sample((ints,), {"dim": -1, **both}, "dim -1"),
            Sample((ints,), {"dim": 1, "return_counts": True}, "dim 1, counts"),
            Sample((rows,), {"dim": 0, **both}, "dim 0, edge ±0 ±inf nan"),
            Sample((np.round(uniform(rng, (3, 6))),), {"dim": 1, "return_inverse": True}, "dim 1, float"),
            Sample((uniform(rng, (3, 0)),), {"dim": 1, **both}, "dim of size 0"),
            Sample((Bool(rng.integers(0, 2, size=(5, 2)) > 0),), {"dim": 0, **both}, "dim 0, bool operand")]


def _unique_consecutive(rng):
    floats = np.array([1.0, 1.0, NAN, NAN, -0.0, 0.0, INF, INF, 1.0])
    return [Sample((Int(rng.integers(0, 3, size=(3, 4))),), {"return_inverse": True, "return_counts": True}, "ints"),
            Sample((floats,), {"return_inverse": True, "return_counts": True}, "edge ±0 ±inf nan"),
            Sample((uniform(rng, ()),), {"return_inverse": True}, "0-d"), Sample((uniform(rng, (0, 2)),), {}, "empty"),
            Sample((Bool([True, True, False]),), {"return_counts": True}, "bool operand"),
            Sample((F32(floats),), {}, "float32"), *_along_a_dim(rng)]


# hg.unique_consecutive once handgrad/__init__.py exports it; until then the method (attached by _search)
_CONSECUTIVE = (Row("hg.unique_consecutive", _fn("unique_consecutive"), _unique_consecutive, grad=False,
                    also=("Tensor.unique_consecutive",), why=NOT_DIFFERENTIABLE)
                if hasattr(hg, "unique_consecutive") else
                Row("Tensor.unique_consecutive", lambda m, x, **kw: x.unique_consecutive(**kw), _unique_consecutive,
                    grad=False, why=NOT_DIFFERENTIABLE))


ROWS = [
    Row("hg.addmm", _fn("addmm"), _addmm, also=("Tensor.addmm",)),
    Row("hg.addmv", _fn("addmv"), _addmv, also=("Tensor.addmv",)),
    Row("hg.baddbmm", _fn("baddbmm"), _baddbmm, also=("Tensor.baddbmm",)),
    Row("hg.addcmul", _fn("addcmul"), _pointwise3(False), also=("Tensor.addcmul",)),
    Row("hg.addcdiv", _fn("addcdiv"), _pointwise3(True), also=("Tensor.addcdiv",)),
    Row("hg.mv", _fn("mv"), _mv, also=("Tensor.mv",)),
    Row("hg.vdot", _fn("vdot"), _vdot, also=("Tensor.vdot",)),
    Row("hg.inner", _fn("inner"), _inner, also=("Tensor.inner",)),
    Row("hg.nansum", _fn("nansum"), _nanreduce(ints=True), also=("Tensor.nansum",)),
    Row("hg.nanmean", _fn("nanmean"), _nanreduce(ints=False), also=("Tensor.nanmean",)),
    Row("hg.median", _fn("median"), _median(False), also=("Tensor.median",)),
    Row("hg.nanmedian", _fn("nanmedian"), _median(True), also=("Tensor.nanmedian",)),
    Row("hg.quantile", _fn("quantile"), _quantile(False), also=("Tensor.quantile",)),
    Row("hg.nanquantile", _fn("nanquantile"), _quantile(True), also=("Tensor.nanquantile",)),
    Row("hg.searchsorted", _searchsorted_fn, _searchsorted, grad=False, why=NOT_DIFFERENTIABLE),
    Row("hg.bucketize", _fn("bucketize"), _bucketize, grad=False, why=NOT_DIFFERENTIABLE),
    Row("hg.unique", _fn("unique"), _unique, grad=False, also=("Tensor.unique",), why=NOT_DIFFERENTIABLE),
    _CONSECUTIVE,
]
