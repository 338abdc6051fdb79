"""Rows of the calls whose numbers or refusals were brought to PyTorch's: masked_fill with a tensor
value, the matrix norms (linalg.norm, matrix_norm, norm), vector_norm at ord 0 and ord < 0, logit
with eps, softplus's threshold, the 0-d forms (index_select, unfold, amax, amin, logsumexp),
take_along_dim's broadcasting, pad's modes, dtype= on softmax, device= on the *_like factories,
flip(dims=), min and max of two tensors, linspace between 0-d tensors, matrix_rank of an empty
matrix, cdist's compute_mode and the mean over an empty dim."""

import math

import numpy as np

from . import Bool, Const, F32, Int, Row, Sample
from .samples import BOOLS, EDGES, INTS, TINY_HUGE, uniform

INF = math.inf


def _dt(m, kw):
    """kwargs with dtype='float64' (a name, so one sample serves both libraries) as m's dtype."""
    return {**kw, "dtype": getattr(m, kw["dtype"])} if isinstance(kw.get("dtype"), str) else kw


def _mask(rng, shape):
    return Bool(rng.random(shape) > 0.5)


# ---------------------------------------------------------------- masked_fill

def _masked_fill(rng):
    x = uniform(rng, (3, 4))
    return [Sample((x, _mask(rng, (3, 4)), 1.5), {}, "number"),
            Sample((x, _mask(rng, (3, 4)), uniform(rng, ())), {}, "0-d tensor value (its gradient: Σ over the mask)"),
            Sample((x, _mask(rng, (4,)), uniform(rng, ())), {}, "broadcast mask"),
            Sample((uniform(rng, (4,)), _mask(rng, (3, 1)), uniform(rng, ())), {}, "the mask broadcasts the input"),
            Sample((uniform(rng, ()), Bool(np.array([True, False])), 2.0), {}, "0-d input, 1-d mask"),
            Sample((uniform(rng, (0, 3)), Bool(np.zeros((0, 3), bool)), uniform(rng, ())), {}, "empty"),
            Sample((EDGES.copy(), Bool(np.arange(7) % 2 == 0), np.nan), {}, "edge ±0 ±inf nan", grad=False),
            Sample((F32(x), _mask(rng, (3, 4)), Const(np.array(0.25))), {}, "float32 input, float64 value"),
            Sample((Int(INTS), Bool(BOOLS), 2.7), {}, "int operand (the value truncated)"),
            Sample((Int(INTS), Bool(BOOLS), Const(np.array(-2.7))), {}, "int operand, tensor value"),
            Sample((Bool(BOOLS), Bool(BOOLS[::-1].copy()), 0.5), {}, "bool operand")]


def _masked_fill_inplace(rng):
    return [Sample((Const(uniform(rng, (3, 4))), _mask(rng, (3, 4)), Const(np.array(0.5))), {}, "0-d tensor value"),
            Sample((Const(uniform(rng, (3, 4))), _mask(rng, (4,)), -1.0), {}, "broadcast mask"),
            Sample((Int(INTS), Bool(BOOLS), 9), {}, "int operand")]


# ---------------------------------------------------------------- norms

def _matrix_norm(rng):
    a, b = uniform(rng, (3, 4)), uniform(rng, (2, 3, 4))
    out = [Sample((a,), {"ord": o}, f"ord {o}") for o in ("fro", 1, -1, INF, -INF)]
    out += [Sample((a,), {"ord": o}, f"ord {o} (singular values: no gradient)", grad=False) for o in ("nuc", 2, -2)]
    out += [Sample((b,), {"ord": 1, "dim": (0, 2), "keepdim": True}, "dim (0, 2), keepdim"),
            Sample((b,), {"ord": -INF, "dim": (2, 0)}, "dim (2, 0)"),
            Sample((b,), {"ord": INF, "dim": (-1, -3), "keepdim": True}, "negative dims, keepdim"),
            Sample((b,), {"ord": "nuc", "dim": (2, 0), "keepdim": True}, "nuc over (2, 0), keepdim", grad=False),
            Sample((b,), {"ord": -2}, "-2 of a batch", grad=False),
            Sample((uniform(rng, (0, 3)),), {"ord": 1}, "empty, ord 1"),
            Sample((uniform(rng, (0, 3)),), {"ord": -1}, "empty, ord -1"),
            Sample((uniform(rng, (0, 3)),), {"ord": INF}, "empty, ord inf"),
            Sample((uniform(rng, (2, 0, 0)),), {"ord": "nuc"}, "empty batch of empty matrices, nuc", grad=False),
            Sample((uniform(rng, (0, 3)),), {"ord": 2}, "empty, ord 2", grad=False),
            Sample((F32(a),), {"ord": INF}, "float32"),
            Sample((a,), {"ord": 1, "dtype": "float64"}, "dtype float64"),
            Sample((np.array([[np.inf, 1.0], [np.nan, -0.0]]),), {"ord": 1}, "edge inf nan", grad=False)]
    return out


def _linalg_norm(rng):
    a, b = uniform(rng, (3, 4)), uniform(rng, (2, 3, 4))
    return [Sample((b,), {}, "ord None: every entry"),
            Sample((a, INF), {}, "2-d, ord inf: the largest row sum"),
            Sample((a, -1), {}, "2-d, ord -1"),
            Sample((a, "fro"), {}, "fro"),
            Sample((a, "nuc"), {}, "nuc", grad=False),
            Sample((b, 1), {"dim": (2, 1)}, "a 2-tuple dim: a matrix norm"),
            Sample((b, 3), {"dim": 1, "keepdim": True}, "an int dim: a vector norm"),
            Sample((uniform(rng, (5,)), INF), {}, "1-d, ord inf"),
            Sample((b, None), {"dim": (0, 2)}, "ord None over two dims"),
            Sample((uniform(rng, ()),), {}, "0-d")]


def _torch_norm(rng):
    a, b = uniform(rng, (3, 4)), uniform(rng, (2, 3, 4))
    return [Sample((b,), {}, "default fro: every entry"),
            Sample((b,), {"p": "fro", "dim": 1}, "fro over one dim"),
            Sample((b,), {"p": "fro", "dim": (0, 2), "keepdim": True}, "fro over two dims"),
            Sample((a,), {"p": "nuc"}, "nuc of a matrix", grad=False),
            Sample((b,), {"p": "nuc", "dim": (2, 0)}, "nuc over (2, 0)", grad=False),
            Sample((b,), {"p": INF, "dim": (0, 1)}, "inf over two dims: a vector norm"),
            Sample((a,), {"p": 0}, "p 0 (its gradient is 0)"),
            Sample((a,), {"p": 3, "dim": 0}, "p 3"),
            Sample((uniform(rng, ()),), {"p": 1}, "0-d")]


def _vector_norm(rng):
    a = uniform(rng, (3, 4), (0.2, 2.0), signed=True)
    zeros = np.array([[0.0, 1.5, -2.0], [0.0, 0.0, 0.0]])
    out = [Sample((a, o), {"dim": 1}, f"ord {o}") for o in (2, 1, 3, 0.5, 0, -1, -0.5, INF, -INF)]
    out += [Sample((zeros, o), {"dim": 1}, f"ord {o} with zeros", grad=False) for o in (0.5, -1, -0.5, 0, -INF)]
    out += [Sample((a,), {"keepdim": True}, "every entry, keepdim"),
            Sample((uniform(rng, (0, 3)), 2), {"dim": 0}, "empty"),
            Sample((uniform(rng, ()), 1.5), {}, "0-d"),
            Sample((np.array([0.0, np.nan]), -1), {}, "nan with a zero, ord -1", grad=False),
            Sample((np.array([0.0, np.inf]), -1), {}, "inf with a zero, ord -1", grad=False),
            Sample((TINY_HUGE.copy(), -2), {}, "tiny and huge, ord -2", grad=False),
            Sample((F32(a), -1.5), {"dim": 0}, "float32, ord -1.5")]
    return out


# ---------------------------------------------------------------- elementwise

def _logit(rng):
    x = uniform(rng, (3, 4), (0.05, 0.95))
    away = np.array([0.02, 0.05, 0.3, 0.5, 0.7, 0.95, 0.98])  # not within 1e-3 of eps or 1 − eps
    return [Sample((x,), {}, "random"),
            Sample((away,), {"eps": 0.1}, "eps 0.1"),
            Sample((away,), {"eps": 0.6}, "eps 0.6 > 0.5: below eps reads eps, the rest 1 − eps"),
            Sample((uniform(rng, (), (0.1, 0.9)),), {"eps": 0.2}, "0-d"),
            Sample((uniform(rng, (0, 3)),), {"eps": 0.2}, "empty"),
            Sample((np.array([0.0, -0.0, 1.0, np.inf, -np.inf, np.nan, 0.5]),), {"eps": 0.25}, "edge", grad=False),
            Sample((np.array([0.0, 1.0, 2.0, -1.0, np.nan]),), {}, "edge, no eps", grad=False),
            Sample((F32(x),), {"eps": 0.3}, "float32"),
            Sample((Int(np.array([0, 1, 2])),), {"eps": 0.3}, "int operand"),
            Sample((Bool(np.array([True, False])),), {}, "bool operand")]


def _softplus(rng):
    x = uniform(rng, (3, 4), (-3.0, 3.0))
    above = np.array([-3.0, -0.5, 0.4, 1.6, 2.5, 25.0])  # away from βx = threshold
    return [Sample((x,), {}, "random"),
            Sample((above,), {"threshold": 2}, "threshold 2: x itself above it"),
            Sample((above,), {"beta": 2, "threshold": 1}, "beta 2, threshold 1"),
            Sample((above,), {"beta": 0.5}, "beta 0.5"),
            Sample((np.array([19.0, 21.0, 30.0, 700.0]),), {}, "around the default threshold 20"),
            Sample((uniform(rng, ()),), {}, "0-d"),
            Sample((uniform(rng, (0, 3)),), {}, "empty"),
            Sample((EDGES.copy(),), {}, "edge ±0 ±inf nan", grad=False),
            Sample((F32(x),), {"beta": 2}, "float32")]


# ---------------------------------------------------------------- 0-d, broadcasting, modes

def _index_select(rng):
    return [Sample((uniform(rng, ()), 0, Int(np.array([0]))), {}, "0-d input: 0-d out"),
            Sample((uniform(rng, ()), -1, Int(np.array(0))), {}, "0-d input, 0-d index"),
            Sample((uniform(rng, (3, 4)), 1, Int(np.array([3, 0, 3]))), {}, "repeated index"),
            Sample((uniform(rng, (3, 4)), 0, Int(np.zeros(0, np.int64))), {}, "empty index"),
            Sample((uniform(rng, (3, 4)), 0, Int(np.array(2))), {}, "0-d index: one entry, the dim kept")]


def _unfold(rng):
    return [Sample((uniform(rng, ()), 0, 1, 1), {}, "0-d, size 1"),
            Sample((uniform(rng, ()), -1, 1, 3), {}, "0-d, step 3"),
            Sample((uniform(rng, ()), 0, 0, 1), {}, "0-d, size 0"),
            Sample((uniform(rng, (3, 5)), 1, 2, 2), {}, "windows of 2, step 2")]


def _take_along_dim(rng):
    x = uniform(rng, (3, 4))
    return [Sample((x, Int(rng.integers(0, 4, (3, 2))), 1), {}, "same rank"),
            Sample((x, Int(np.array([[1]])), 1), {}, "indices broadcast"),
            Sample((uniform(rng, (1, 4)), Int(rng.integers(0, 4, (3, 2))), 1), {}, "input broadcasts"),
            Sample((x, Int(rng.integers(0, 3, (2, 1))), -2), {}, "dim -2, broadcast"),
            Sample((x, Int(np.array([11, 0, 5, 5]))), {}, "dim None: flattened"),
            Sample((uniform(rng, (0, 4)), Int(np.zeros((0, 2), np.int64)), 1), {}, "empty"),
            Sample((uniform(rng, (1, 4)), Int(np.zeros((0, 2), np.int64)), 1), {}, "empty indices broadcast the input")]


def _pad(rng):
    x3, x4, x5 = uniform(rng, (2, 3, 5)), uniform(rng, (1, 2, 3, 4)), uniform(rng, (1, 2, 2, 3, 3))
    out = []
    for mode in ("reflect", "replicate", "circular"):
        out += [Sample((x3, (2, 1)), {"mode": mode}, f"{mode}, 3-d"),
                Sample((uniform(rng, (3, 5)), (1, 3)), {"mode": mode}, f"{mode}, 2-d (no batch)"),
                Sample((x3, (-1, 2)), {"mode": mode}, f"{mode}, a negative amount"),
                Sample((x4, (1, 2, 2, 0)), {"mode": mode}, f"{mode}, two dims"),
                Sample((x3, (1, 1, 2, 0)), {"mode": mode}, f"{mode}, two dims of a 3-d input"),
                Sample((x5, (1, 2, 0, 1, 1, 1)), {"mode": mode}, f"{mode}, three dims"),
                Sample((uniform(rng, (0, 3, 4)), (1, 1)), {"mode": mode}, f"{mode}, empty batch"),
                Sample((Int(np.arange(10).reshape(2, 5)), (1, 1)), {"mode": mode}, f"{mode}, int operand")]
    out += [Sample((x3, (4, 4)), {"mode": "reflect"}, "reflect by size − 1"),
            Sample((x3, (5, 5)), {"mode": "circular"}, "circular by the size"),
            Sample((x3, (-2, 3)), {"mode": "circular"}, "circular, cropped then wrapped"),
            Sample((x3, (7, -3)), {"mode": "replicate"}, "replicate far"),
            Sample((uniform(rng, (2, 0, 4)), (1, 1)), {"mode": "circular"}, "circular, empty channels"),
            Sample((x3, (1, 2)), {"mode": "constant", "value": 1.5}, "constant")]
    return out


def _softmax_samples(rng):
    x = uniform(rng, (3, 4))
    return [Sample((x, 1), {}, "dim 1"),
            Sample((x, 0), {"dtype": "float64"}, "dtype float64"),
            Sample((F32(x), -1), {"dtype": "float64"}, "float32 input, dtype float64"),
            Sample((x, 1), {"dtype": "float32"}, "float64 input, dtype float32", grad=False),
            Sample((Int(INTS), 1), {"dtype": "float32"}, "int operand, dtype float32"),
            Sample((uniform(rng, ()), 0), {"dtype": "float64"}, "0-d")]


def _softmax_row(name):
    head, fn_name = name.split(".")
    if head == "Tensor":
        def call(m, x, dim, **kw):
            return getattr(x, fn_name)(dim, **_dt(m, kw))
    else:
        def call(m, x, dim, **kw):
            module = m.nn.functional if head == "F" else m
            return getattr(module, fn_name)(x, dim, **_dt(m, kw))
    return Row(name, call, _softmax_samples)


def _like(rng):
    x = uniform(rng, (2, 3))
    return [Sample((x,), {"device": "cpu"}, "device 'cpu'"),
            Sample((x,), {"device": "cpu", "dtype": "float32"}, "device and dtype"),
            Sample((Int(INTS),), {"device": "cpu"}, "int operand"),
            Sample((uniform(rng, (0, 3)),), {"device": "cpu"}, "empty")]


def _all_zero(out, *args, **kwargs):
    assert not out.numpy().any(), "hg.empty_like fills with zeros"


def _like_row(name, fill=(), **extra):
    return Row(f"hg.{name}", lambda m, x, **kw: getattr(m, name)(x, *fill, **_dt(m, kw)), _like, grad=False,
               why="a new tensor: no gradient to an input", **extra)


def _flip(rng):
    x = uniform(rng, (2, 3, 4))
    return [Sample((x,), {"dims": (0, 2)}, "dims= a tuple"),
            Sample((x,), {"dims": [-1]}, "dims= a list"),
            Sample((uniform(rng, ()),), {"dims": (0,)}, "0-d")]


def _extremum(rng):
    x, y = uniform(rng, (3, 4)), uniform(rng, (3, 4))
    return [Sample((x, y), {}, "two tensors"),
            Sample((uniform(rng, (2, 1, 4)), uniform(rng, (3, 1))), {}, "broadcast"),
            Sample((uniform(rng, ()), uniform(rng, (2, 3))), {}, "0-d with a matrix"),
            Sample((np.repeat(EDGES, 7), np.tile(EDGES, 7)), {}, "edge ±0 ±inf nan", grad=False),
            Sample((Int(INTS), Int(INTS[::-1].copy())), {}, "int operands"),
            Sample((F32(x), y), {}, "float32 with float64: float64"),
            Sample((x,), {}, "every entry"),
            Sample((x, 1), {}, "dim 1: values and indices"),
            Sample((x, 0, True), {}, "dim 0, keepdim")]


def _reduce_0d(rng):
    x = uniform(rng, ())
    return [Sample((x, 0), {}, "0-d, dim 0"), Sample((x, -1), {}, "0-d, dim -1"),
            Sample((x, (0,)), {}, "0-d, dim (0,)"), Sample((x, 0, True), {}, "0-d, dim 0, keepdim"),
            Sample((uniform(rng, (3, 4)), 1), {}, "dim 1")]


def _logsumexp(rng):
    return _reduce_0d(rng) + [
        Sample((uniform(rng, (2, 0)), 1), {}, "over an empty dim: -inf", grad=False),
        Sample((uniform(rng, (0, 3)), 1), {}, "an empty tensor over a full dim"),
        Sample((Int(INTS), 1), {}, "int operand: float32"),
        Sample((Bool(BOOLS), 0), {}, "bool operand: float32")]


def _linspace(rng):
    return [Sample((Const(np.array(-1.0)), Const(np.array(2.0)), 5), {}, "0-d tensors"),
            Sample((Const(np.array(0.5)), 3.0, 4), {"dtype": "float64"}, "a 0-d tensor and a number, float64"),
            Sample((0, 1, 7), {}, "numbers"),
            Sample((2.0, -2.0, 1), {}, "one step"),
            Sample((2.0, 4.0, 0), {}, "no step"),
            Sample((0, 10, 4), {}, "float32 arithmetic, the second half counted from end"),
            Sample((0.5, 7.9, 4), {"dtype": "int64"}, "int64: the ends truncated first"),
            Sample((-1.0, np.inf, 3), {}, "an infinite end")]


def _matrix_rank(rng):
    full = uniform(rng, (3, 4))
    low = uniform(rng, (3, 1)) @ uniform(rng, (1, 4))
    return [Sample((full,), {}, "full rank"), Sample((low,), {}, "rank 1"),
            Sample((uniform(rng, (0, 3)),), {}, "no rows"), Sample((uniform(rng, (2, 3, 0)),), {}, "no columns"),
            Sample((uniform(rng, (2, 0, 0)),), {}, "empty batch")]


def _cdist(rng):
    a, b = uniform(rng, (3, 4)), uniform(rng, (5, 4))
    return [Sample((a, b), {}, "p 2"),
            Sample((a, b), {"p": 1.0}, "p 1"),
            Sample((a, b), {"p": 3.0}, "p 3"),
            Sample((uniform(rng, (2, 3, 4)), uniform(rng, (1, 2, 4))), {"p": INF}, "batch broadcast, p inf"),
            *[Sample((a, b), {"compute_mode": mode}, mode) for mode in
              ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")],
            Sample((uniform(rng, (0, 4)), b), {}, "empty")]


def _mean(rng):
    x = uniform(rng, (3, 4))
    return [Sample((x,), {}, "every entry"), Sample((x, 1), {}, "dim 1"), Sample((x, (0, 1), True), {}, "keepdim"),
            Sample((uniform(rng, (0,)),), {}, "empty: nan", grad=False),
            Sample((uniform(rng, (2, 0)), 1), {}, "over an empty dim: nan", grad=False),
            Sample((uniform(rng, (2, 0)), 0), {}, "over a full dim of an empty tensor"),
            Sample((uniform(rng, (0, 3)), (0,), True), {}, "over an empty dim, keepdim", grad=False),
            Sample((F32(np.zeros((0, 2))),), {}, "float32, empty"),
            Sample((EDGES.copy(),), {}, "edge ±0 ±inf nan", grad=False)]


ROWS = [
    Row("Tensor.masked_fill", lambda m, x, mask, v: x.masked_fill(mask, v), _masked_fill, also=("hg.masked_fill",)),
    Row("Tensor.masked_fill_", lambda m, x, mask, v: x.clone().masked_fill_(mask, v), _masked_fill_inplace,
        grad=False, why="in-place: the library records no in-place writes (an argument that requires grad is refused)"),
    Row("hg.linalg.matrix_norm", lambda m, a, **kw: m.linalg.matrix_norm(a, **_dt(m, kw)), _matrix_norm),
    Row("hg.linalg.norm", lambda m, a, *o, **kw: m.linalg.norm(a, *o, **kw), _linalg_norm),
    Row("hg.norm", lambda m, a, **kw: m.norm(a, **kw), _torch_norm, also=("Tensor.norm",)),
    Row("hg.linalg.vector_norm", lambda m, a, *o, **kw: m.linalg.vector_norm(a, *o, **kw), _vector_norm),
    Row("hg.logit", lambda m, x, **kw: m.logit(x, **kw), _logit, also=("Tensor.logit",)),
    Row("F.softplus", lambda m, x, **kw: m.nn.functional.softplus(x, **kw), _softplus),
    Row("hg.index_select", lambda m, x, d, i: m.index_select(x, d, i), _index_select, also=("Tensor.index_select",)),
    Row("Tensor.unfold", lambda m, x, d, size, step: x.unfold(d, size, step), _unfold),
    Row("hg.take_along_dim", lambda m, x, i, *d: m.take_along_dim(x, i, *d), _take_along_dim,
        also=("Tensor.take_along_dim",)),
    Row("F.pad", lambda m, x, p, **kw: m.nn.functional.pad(x, p, **kw), _pad),
    *[_softmax_row(n) for n in ("hg.softmax", "hg.log_softmax", "F.softmax", "F.log_softmax", "Tensor.softmax",
                                "Tensor.log_softmax")],
    _like_row("zeros_like"), _like_row("ones_like"), _like_row("full_like", (2.5,)),
    _like_row("empty_like", compare="meta", check=_all_zero),
    Row("hg.flip", lambda m, x, **kw: m.flip(x, **kw), _flip, also=("Tensor.flip",)),
    Row("hg.min", lambda m, x, *a: m.min(x, *a), _extremum, also=("Tensor.min",)),
    Row("hg.max", lambda m, x, *a: m.max(x, *a), _extremum, also=("Tensor.max",)),
    Row("hg.amax", lambda m, x, *a: m.amax(x, *a), _reduce_0d, also=("Tensor.amax",)),
    Row("hg.amin", lambda m, x, *a: m.amin(x, *a), _reduce_0d, also=("Tensor.amin",)),
    Row("hg.logsumexp", lambda m, x, *a: m.logsumexp(x, *a), _logsumexp, also=("Tensor.logsumexp",)),
    Row("hg.linspace", lambda m, s, e, n, **kw: m.linspace(s, e, n, **_dt(m, kw)), _linspace, grad=False,
        why="a new tensor from numbers"),
    Row("hg.linalg.matrix_rank", lambda m, a: m.linalg.matrix_rank(a), _matrix_rank, grad=False,
        why="an int64 count (piecewise constant)"),
    Row("hg.cdist", lambda m, a, b, **kw: m.cdist(a, b, **kw), _cdist),
    Row("hg.mean", lambda m, x, *a: m.mean(x, *a), _mean, also=("Tensor.mean",)),
]
