"""Rows of the breadth ops (2 of 2): cummax, cummin, logcumsumexp, diff; broadcast_shapes,
broadcast_tensors, tensor_split, take, rot90; tril_indices, triu_indices, rand_like, randn_like,
randint_like; F.softmin, F.glu, F.hardswish, F.hardsigmoid, F.threshold."""

import numpy as np

from . import Bool, Const, Dtype, F32, Int, Row, Sample
from .rows_breadth import away_from_kinks, distinct
from .samples import EDGES, fixed, uniform

NAN, INF = np.nan, np.inf
HARDSIGMOID_GRAD = ("PyTorch's backward multiplies by the float32 constant 1/6 at every dtype (3e-8 off in float64); "
                    "handgrad's gradient is 1/6 to the dtype's precision")
POSITIONS = "a factory of positions: no tensor argument"


def _fn(name):
    return lambda m, *args, **kw: getattr(m, name)(*args, **kw)


def _F(name):
    return lambda m, *args, **kw: getattr(m.nn.functional, name)(*args, **kw)


# ---------------------------------------------------------------- scans, diff

def _running(rng):
    ties = np.array([[1.0, 3.0, 3.0, 2.0, 3.0], [0.0, -1.0, -1.0, 2.0, -1.0]])
    return [Sample((distinct(rng, (3, 5)), 1), {}, "dim 1"), Sample((distinct(rng, (3, 5)), -2), {}, "dim -2"),
            Sample((uniform(rng, ()), 0), {}, "0-d"), Sample((uniform(rng, (2, 0)), 1), {}, "empty"),
            Sample((ties, 1), {}, "ties (the newest)", grad=False),
            Sample((np.array([[1.0, 3.0, NAN, 2.0, NAN, 5.0], [INF, -INF, 0.0, INF, 1.0, -INF]]), 1), {},
                   "NaN (kept once met), inf", grad=False),
            Sample((Int([[1, 3, 2, 3], [0, -1, -1, 5]]), 1), {}, "int operand"),
            Sample((Bool([True, False, True]), 0), {}, "bool operand"),
            Sample((F32(distinct(rng, (2, 4))), 1), {}, "float32")]


def _logcumsumexp(rng):
    return [Sample((uniform(rng, (3, 5)), 1), {}, "dim 1"), Sample((uniform(rng, (4, 3)), 0), {}, "dim 0"),
            Sample((uniform(rng, (2, 130), (-40.0, 40.0)), 1), {}, "long (three blocks), wide range"),
            Sample((uniform(rng, ()), 0), {}, "0-d"), Sample((uniform(rng, (2, 0)), 1), {}, "empty"),
            Sample((np.array([-1000.0, 0.0, 1000.0, 1000.0]), 0), {}, "no overflow or underflow"),
            Sample((np.array([[-INF, -INF, 1.0, -INF], [INF, -INF, INF, 0.0], [1.0, NAN, 2.0, 3.0]]), 1), {},
                   "edge ±inf nan", grad=False),
            Sample((F32(uniform(rng, (2, 70), (-30.0, 30.0))), 1), {}, "float32")]


def _diff(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(3, 6),), {}, "last dim"), Sample((u(3, 6),), {"n": 2, "dim": 0}, "n 2, dim 0"),
            Sample((u(3, 6), 3, 1, u(3, 2), u(3, 1)), {}, "prepend and append"),
            Sample((u(4),), {"n": 6}, "n past the length (empty)"), Sample((u(4),), {"n": 0}, "n 0"),
            Sample((u(3, 6), 0, 0, u(2, 6), u(1, 6)), {}, "n 0 with prepend and append (not joined)"),
            Sample((u(0, 3),), {"dim": 0}, "empty"),
            Sample((EDGES.copy(),), {}, "edge ±0 ±inf nan", grad=False),
            Sample((Int([1, 5, 2, 2]),), {}, "int operand"), Sample((Bool([True, False, False]),), {}, "bool operand"),
            Sample((Int([1, 5, 2]), 1, -1, Const(np.array([0.5]))), {}, "int operand, float prepend"),
            Sample((F32(u(2, 4)),), {"dim": 1}, "float32")]


# ---------------------------------------------------------------- shapes, splits, take, rot90

def _tensor_split(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(7), 3), {}, "3 sections"), Sample((u(3, 10), 4, 1), {}, "4 sections of dim 1"),
            Sample((u(3, 10), [2, -3, 8], 1), {}, "indices (negative, crossing)"),
            Sample((u(7), [1, 9, 3]), {}, "indices past the end"),
            Sample((u(7), Int([1, 5])), {}, "an int64 tensor of indices"),
            Sample((u(7), Int(3)), {}, "a 0-d int64 tensor of sections"),
            Sample((u(2, 5), 7, -1), {}, "more sections than entries"), Sample((u(0, 3), 2), {}, "empty"),
            Sample((Int([[1, 2, 3], [4, 5, 6]]), 2, 1), {}, "int operand"),
            Sample((F32(u(2, 5)), [2]), {"dim": 1}, "float32")]


def _take(rng):
    return [Sample((uniform(rng, (3, 4)), Int([[0, -1, 5], [11, 2, 2]])), {}, "random (repeated, negative)"),
            Sample((uniform(rng, ()), Int([0, 0, -1])), {}, "0-d input"),
            Sample((uniform(rng, (3,)), Int(np.zeros(0, dtype=np.int64))), {}, "empty index"),
            Sample((uniform(rng, (2, 3)), Int(4)), {}, "0-d index"),
            Sample((Int([[1, 2], [3, 4]]), Int([3, 0])), {}, "int operand"),
            Sample((EDGES.copy(), Int([2, 3, 4])), {}, "edge ±inf nan", grad=False),
            Sample((F32(uniform(rng, (2, 3))), Int([1, 5])), {}, "float32")]


def _rot90(rng):
    x = uniform(rng, (2, 3, 4))
    out = [Sample((x, k, dims), {}, f"k {k}, dims {dims}")
           for k, dims in ((1, [0, 1]), (2, [1, 2]), (3, [2, 0]), (-1, [0, 2]), (5, [-1, -2]), (0, [0, 1]))]
    return out + [Sample((uniform(rng, (0, 3)),), {}, "empty"),
                  Sample((Int([[1, 2, 3], [4, 5, 6]]),), {}, "int operand"),
                  Sample((F32(uniform(rng, (2, 3))), -1), {}, "float32")]


def _broadcast_tensors(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(2, 1, 3), u(4, 1)), {}, "two"), Sample((u(3), u(), u(2, 1)), {}, "three, a 0-d"),
            Sample((u(3),), {}, "one"), Sample((u(0, 1), u(3)), {}, "empty"),
            Sample((Int([1, 2]), u(2, 1)), {}, "an int operand"), Sample((F32(u(2)), Bool([[True], [False]])), {},
                                                                        "float32 and bool")]


# ---------------------------------------------------------------- creation

def _triangle(rng):
    return [Sample((r, c, k), {}, f"{r}×{c}, offset {k}")
            for r, c, k in ((3, 4, 0), (3, 4, 1), (4, 3, -1), (5, 5, -2), (0, 4, 0), (3, 3, 10), (3, 3, -10))] + \
        [Sample((3, 3), {"dtype": Dtype("int64")}, "dtype int64")]


def _check_rand(out, x, *args, **kw):
    v = out.detach().numpy()
    assert ((v >= 0) & (v < 1)).all(), "rand_like drew outside [0, 1)"


def _check_randn(out, x, *args, **kw):
    assert np.isfinite(out.detach().numpy()).all(), "randn_like drew a non-finite number"


def _check_randint(out, x, *args, **kw):
    low, high = (0, args[0]) if len(args) == 1 else args[:2]
    v = out.detach().numpy()
    assert ((v >= low) & (v < high)).all() and (v == np.round(v)).all(), f"randint_like drew outside [{low}, {high})"


def _like(rng):
    return [Sample((Const(uniform(rng, (2, 3))),), {}, "float64"), Sample((F32(uniform(rng, (3,))),), {}, "float32"),
            Sample((Const(uniform(rng, ())),), {}, "0-d"), Sample((Const(uniform(rng, (0, 2))),), {}, "empty"),
            Sample((Int([1, 2]),), {"dtype": Dtype("float64")}, "int64 input, dtype float64"),
            Sample((F32(uniform(rng, (2,))),), {"dtype": Dtype("float64"), "requires_grad": True},
                   "dtype float64, requires_grad")]


def _randint_like(rng):
    return [Sample((Const(uniform(rng, (2, 3))), 5), {}, "high (float64: whole numbers)"),
            Sample((Int([[1, 2], [3, 4]]), -2, 3), {}, "low, high (int64)"),
            Sample((F32(uniform(rng, (3,))), 0, 2), {}, "float32"),
            Sample((Int(np.zeros(0, np.int64)), 4), {}, "empty"),
            Sample((Int(7), 10), {"dtype": Dtype("float64")}, "0-d, dtype float64")]


# ---------------------------------------------------------------- activations

def _kinked(kinks, extra=()):
    def make(rng):
        x = away_from_kinks(rng, (3, 4), kinks)
        return [Sample((x, *extra), {}, "random"), Sample((away_from_kinks(rng, (), kinks), *extra), {}, "0-d"),
                Sample((uniform(rng, (0, 2)), *extra), {}, "empty"),
                Sample((np.array([-4.0, -3.0, -1.0, 0.0, 3.0, 4.0, NAN, INF, -INF, -0.0]), *extra), {},
                       "kinks ±3, edge ±0 ±inf nan", grad=False),
                Sample((F32(x), *extra), {}, "float32")]
    return make


def _threshold(rng):
    return _kinked((0.5,), (0.5, -2.0))(rng) + [Sample((Int([1, 2, 3]), 1.5, 0), {}, "int operand"),
                                                Sample((Int([1, 2, 3]), 1, 0.5), {}, "int operand, a float value")]


def _hardsigmoid(rng):
    return [Sample(s.args, s.kwargs, s.label, s.grad, differs=HARDSIGMOID_GRAD if s.grad is not False and
                   not isinstance(s.args[0], F32) and np.size(s.args[0]) else "")
            for s in _kinked((-3.0, 3.0))(rng)]


def _softmin(rng):
    u = lambda *s: uniform(rng, s, (-4.0, 4.0))  # noqa: E731
    return [Sample((u(3, 5),), {"dim": 1}, "dim 1"), Sample((u(3, 5),), {"dim": 0}, "dim 0"),
            Sample((u(),), {"dim": 0}, "0-d"), Sample((u(0, 3),), {"dim": 1}, "empty"),
            Sample((F32(u(2, 3)),), {"dim": 1, "dtype": Dtype("float64")}, "float32, dtype float64"),
            Sample((np.array([[INF, 0.0, 1.0], [-INF, 0.0, NAN]]),), {"dim": 1}, "edge ±inf nan", grad=False),
            Sample((F32(u(2, 3)),), {"dim": -1}, "float32")]


def _glu(rng):
    u = lambda *s: uniform(rng, s, (-4.0, 4.0))  # noqa: E731
    return [Sample((u(3, 4),), {}, "last dim"), Sample((u(4, 3),), {"dim": 0}, "dim 0"),
            Sample((u(2, 0, 2),), {"dim": 2}, "empty"), Sample((np.array([INF, -INF, NAN, 0.0, 1.0, 2.0, 3.0, 4.0]),),
                                                              {}, "edge ±inf nan", grad=False),
            Sample((F32(u(2, 6)),), {}, "float32")]


ROWS = [
    Row("hg.cummax", _fn("cummax"), _running, also=("Tensor.cummax",)),
    Row("hg.cummin", _fn("cummin"), _running, also=("Tensor.cummin",)),
    Row("hg.logcumsumexp", _fn("logcumsumexp"), _logcumsumexp, also=("Tensor.logcumsumexp",)),
    Row("hg.diff", _fn("diff"), _diff, also=("Tensor.diff",)),
    Row("hg.broadcast_shapes", _fn("broadcast_shapes"),
        fixed(Sample(((2, 1), (3,), 1, (1, 1, 1)), {}, "tuples and an int"), Sample((), {}, "none"),
              Sample(([0], (1,)), {}, "empty"), Sample(((4, 1, 2),), {}, "one")),
        grad=False, why="shapes in, a shape out: no tensor"),
    Row("hg.broadcast_tensors", _fn("broadcast_tensors"), _broadcast_tensors),
    Row("hg.tensor_split", _fn("tensor_split"), _tensor_split, also=("Tensor.tensor_split",)),
    Row("hg.take", _fn("take"), _take, also=("Tensor.take",)),
    Row("hg.rot90", _fn("rot90"), _rot90, also=("Tensor.rot90",)),
    Row("hg.tril_indices", _fn("tril_indices"), _triangle, grad=False, why=POSITIONS),
    Row("hg.triu_indices", _fn("triu_indices"), _triangle, grad=False, why=POSITIONS),
    Row("hg.rand_like", _fn("rand_like"), _like, grad=False, compare="meta", check=_check_rand,
        why="random draws from handgrad's own generator: shape and dtype compared, the draws checked"),
    Row("hg.randn_like", _fn("randn_like"), _like, grad=False, compare="meta", check=_check_randn,
        why="random draws from handgrad's own generator: shape and dtype compared, the draws checked"),
    Row("hg.randint_like", _fn("randint_like"), _randint_like, grad=False, compare="meta", check=_check_randint,
        why="random draws from handgrad's own generator: shape and dtype compared, the draws checked"),
    Row("F.softmin", _F("softmin"), _softmin),
    Row("F.glu", _F("glu"), _glu),
    Row("F.hardswish", _F("hardswish"), _kinked((-3.0, 3.0))),
    Row("F.hardsigmoid", _F("hardsigmoid"), _hardsigmoid),
    Row("F.threshold", _F("threshold"), _threshold),
]
