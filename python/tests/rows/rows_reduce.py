"""Rows of the reductions and scans: sum, prod, var, std, std_mean, var_mean, argmax, argmin, any,
all, cumsum, count_nonzero, aminmax, trace, numel, nonzero, and the comparisons of whole tensors
isclose, allclose, equal."""

import numpy as np

from . import Bool, Const, Dtype, F32, Int, Row, Sample
from .samples import BOOLS, EDGES, INTS, operand, reduction, uniform

ALL = ("float64", "float32", "int64", "bool")
FLOATS = ("float64", "float32")


def _method(name):
    return lambda m, *args, **kw: getattr(m, name)(*args, **kw)


def _more(make, extra):
    return lambda rng: make(rng) + extra(rng)


def _sum_extra(rng):
    return [Sample((uniform(rng, (2, 3)),), {"dim": 0, "dtype": Dtype("float64")}, "dtype float64"),
            Sample((F32(uniform(rng, (2, 3))),), {"dtype": Dtype("float64")}, "float32 to dtype float64"),
            Sample((Int(INTS),), {"dim": 1, "dtype": Dtype("float64")}, "int operand, dtype float64"),
            Sample((uniform(rng, (2, 3)),), {"axis": 1}, "axis 1"),
            Sample((uniform(rng, (2, 3, 2)),), {"dim": [0, -1], "keepdim": True}, "dims as a list, keepdim")]


def _var_extra(rng, std=False):
    x = uniform(rng, (3, 4))
    constant = np.array([[1.5, 1.5, 1.5], [1.0, 2.0, 4.0]])
    # std is not differentiable where a slice is constant (std 0): PyTorch's subgradient there is 0
    at_zero = (Sample((constant,), {"dim": 1}, "a constant row (std 0)", kink=True) if std
               else Sample((constant,), {"dim": 1}, "a constant row"))
    return [at_zero,
            Sample((x,), {"dim": 1, "unbiased": False}, "unbiased False"),
            Sample((x,), {"dim": 0, "correction": 0}, "correction 0"),
            Sample((x,), {"dim": 1, "correction": 2}, "correction 2"),
            Sample((x, False), {}, "positional unbiased False"),
            Sample((uniform(rng, (1, 3)),), {"dim": 0}, "one element per slice (nan)", grad=False)]


def _spread_samples(std=False):
    # the variance of one element (or of none) is nan: those samples are forward-only
    return _more(reduction(ints=False, bools=False, one_element_grad=False, empty_grad=False),
                 lambda rng: _var_extra(rng, std))


def _repeats(sample):
    """gen_skip of std's gradient draws: a repeated value may make a constant slice, where std is not
    differentiable (the rows' "a constant row (std 0)" compares PyTorch's subgradient there)."""
    arrays = [np.asarray(getattr(a, "value", a)) for a in sample.args]
    return sample.grad is not False and any(len(np.unique(a)) < a.size for a in arrays)


PROD_UNDERFLOW = ("prod's gradient where the product underflows to 0 is the product of the other entries (PyTorch's, "
                  "the result divided by the entry, is 0)")


def _underflow(sample):
    """gen_skip of prod: a product that underflows (PROD_UNDERFLOW)."""
    a = np.asarray(getattr(sample.args[0], "value", sample.args[0]), dtype=float)
    return a.size > 0 and bool((np.abs(a[a != 0]) < 1e-100).any())


def _argext(rng):
    ties = np.array([[1.0, 3.0, 3.0, 0.5], [2.0, 2.0, -1.0, -1.0]])
    return [Sample((ties,), {"dim": 1}, "ties (the first)"),
            Sample((ties,), {}, "ties, flattened"),
            Sample((np.array([[1.0, np.inf, 3.0], [np.inf, -np.inf, 0.0]]),), {"dim": 1}, "inf"),
            Sample((np.array([[1.0, np.nan, 3.0], [np.nan, -np.inf, 0.0]]),), {"dim": 1}, "nan (the first nan)")]


def _cumsum(rng):
    x = uniform(rng, (3, 4))
    return [Sample((x,), {"dim": 1}, "dim 1"),
            Sample((x,), {"dim": -2}, "dim -2"),
            Sample((uniform(rng, ()),), {"dim": 0}, "0-d"),
            Sample((uniform(rng, (0, 3)),), {"dim": 0}, "empty"),
            Sample((uniform(rng, (0, 3)),), {"dim": 1}, "empty, over a non-empty dim"),
            Sample((np.stack([EDGES, EDGES[::-1]]),), {"dim": 1}, "edge ±0 ±inf nan", grad=False),
            Sample((F32(x),), {"dim": 1}, "float32"),
            *operand(Int, INTS, "int operand", {"dim": 1}, True),
            *operand(Bool, BOOLS, "bool operand", {"dim": 0}, True),
            Sample((Int(INTS),), {"dim": 1, "dtype": Dtype("float64")}, "int operand, dtype float64")]


def _count_nonzero(rng):
    x = np.where(rng.random((3, 4)) > 0.5, uniform(rng, (3, 4)), 0.0)
    return [Sample((x,), {}, "every dim"), Sample((x,), {"dim": 1}, "dim 1"),
            Sample((np.stack([EDGES, EDGES]),), {"dim": 0}, "edge ±0 ±inf nan"),
            Sample((Int(INTS),), {"dim": 0}, "int operand"), Sample((Bool(BOOLS),), {}, "bool operand"),
            Sample((uniform(rng, (0, 3)),), {"dim": 0}, "empty")]


def _close(rng):
    x = uniform(rng, (3, 4))
    near = x + 1e-6 * uniform(rng, (3, 4))
    edge = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0])
    return [Sample((Const(x), Const(near)), {}, "near"),
            Sample((Const(x), Const(near)), {"rtol": 0.0, "atol": 1e-9}, "near, tight tolerance"),
            Sample((Const(x), Const(x[:1])), {}, "broadcast"),
            Sample((Const(edge), Const(edge)), {}, "nan and inf"),
            Sample((Const(edge), Const(edge)), {"equal_nan": True}, "nan and inf, equal_nan"),
            *operand(Int, INTS, "int operands", {"atol": 1.0, "rtol": 0.0}, True, (Int(INTS + 1),)),
            Sample((Const(np.zeros((0, 2))), Const(np.zeros((0, 2)))), {}, "empty")]


def _equal(rng):
    x = uniform(rng, (3, 4))
    return [Sample((Const(x), Const(x)), {}, "equal"), Sample((Const(x), Const(x + 1e-15)), {}, "one ulp apart"),
            Sample((Const(x), Const(x[:2])), {}, "different shapes"),
            Sample((Const(np.array([np.nan])), Const(np.array([np.nan]))), {}, "nan"),
            Sample((Int(INTS), Int(INTS)), {}, "int operands")]


def _nonzero(rng):
    x = np.where(rng.random((3, 4)) > 0.5, 1.0, 0.0)
    return [Sample((Const(x),), {}, "matrix"), Sample((Const(x),), {"as_tuple": True}, "as_tuple"),
            Sample((Const(np.float64(2.0)),), {}, "0-d"), Sample((Const(np.zeros((0, 2))),), {}, "empty"),
            Sample((Const(np.array([np.nan, -0.0, 0.0, np.inf])),), {}, "nan, ±0, inf"),
            Sample((Int(INTS),), {}, "int operand"), Sample((Bool(BOOLS),), {}, "bool operand")]


def _aminmax(rng):
    x = uniform(rng, (3, 4))
    return [Sample((x,), {}, "every dim"), Sample((x,), {"dim": 1}, "dim 1"),
            Sample((x,), {"dim": -1, "keepdim": True}, "dim -1 keepdim"), Sample((uniform(rng, ()),), {}, "0-d"),
            Sample((np.array([[0.0, -0.0, np.inf, 1.5], [-np.inf, 2.0, -0.0, 0.0]]),), {"dim": 1}, "edge ±0 ±inf",
                   grad=False),
            Sample((np.array([[1.0, 2.0, 2.0, 1.0]]),), {"dim": 1}, "ties", kink=True),
            Sample((np.array([[1.0, np.nan, -2.0]]),), {"dim": 1}, "nan", grad=False),
            *operand(Int, INTS, "int operand", {"dim": 0}, True)]


def _trace(rng):
    return [Sample((uniform(rng, (3, 3)),), {}, "square"), Sample((uniform(rng, (2, 4)),), {}, "wide"),
            Sample((uniform(rng, (4, 2)),), {}, "tall"), Sample((uniform(rng, (0, 3)),), {}, "empty"),
            Sample((Int(INTS),), {}, "int operand")]


ROWS = [
    Row("hg.sum", _method("sum"), _more(reduction(), _sum_extra), also=("Tensor.sum",), gen="reduce", dtypes=ALL),
    Row("hg.prod", _method("prod"), _more(reduction(tuples=False), lambda rng: [
        Sample((np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5]]),), {"dim": 1}, "zeros"),
        Sample((Int(INTS),), {"dtype": Dtype("float64")}, "int operand, dtype float64"),
        Sample((np.array([1e-200, 1e-200, 3.0]),), {}, "an underflowing product", differs=PROD_UNDERFLOW)]),
        also=("Tensor.prod",), gen="reduce_int", dtypes=ALL, gen_skip=_underflow),
    Row("hg.var", _method("var"), _spread_samples(), also=("Tensor.var",), gen="reduce", dtypes=FLOATS,
),
    Row("hg.std", _method("std"), _spread_samples(std=True), also=("Tensor.std",), gen="reduce", dtypes=FLOATS,
        gen_skip=_repeats),
    Row("hg.var_mean", _method("var_mean"), _spread_samples()),
    Row("hg.std_mean", _method("std_mean"), _spread_samples(std=True)),
    Row("hg.argmax", _method("argmax"), _more(reduction(tuples=False, empty=False, ints=True, bools=False, edges=False),
                                              _argext), grad=False,
        why="int64 positions", also=("Tensor.argmax",), gen="reduce_int", dtypes=FLOATS + ("int64",)),
    Row("hg.argmin", _method("argmin"), _more(reduction(tuples=False, empty=False, ints=True, bools=False, edges=False),
                                              _argext), grad=False,
        why="int64 positions", also=("Tensor.argmin",), gen="reduce_int", dtypes=FLOATS + ("int64",)),
    Row("hg.any", _method("any"), reduction(), grad=False, why="a bool result", also=("Tensor.any",),
        gen="reduce", dtypes=ALL),
    Row("hg.all", _method("all"), reduction(), grad=False, why="a bool result", also=("Tensor.all",),
        gen="reduce", dtypes=ALL),
    Row("hg.cumsum", _method("cumsum"), _cumsum, also=("Tensor.cumsum",), gen="scan", dtypes=FLOATS),
    Row("hg.count_nonzero", _method("count_nonzero"), _count_nonzero, grad=False, why="an int64 count",
        also=("Tensor.count_nonzero",)),
    Row("hg.aminmax", _method("aminmax"), _aminmax, also=("Tensor.aminmax",)),
    Row("hg.trace", _method("trace"), _trace, also=("Tensor.trace",)),
    Row("hg.numel", lambda m, x: m.numel(x),
        lambda rng: [Sample((Const(uniform(rng, (3, 4))),), {}, "matrix"), Sample((Const(np.float64(1)),), {}, "0-d"),
                     Sample((Int(np.zeros((0, 5), int)),), {}, "empty")],
        grad=False, why="a Python int", also=("Tensor.numel", "Tensor.nelement")),
    Row("hg.nonzero", _method("nonzero"), _nonzero, grad=False, why="int64 positions", also=("Tensor.nonzero",)),
    Row("hg.isclose", _method("isclose"), _close, grad=False, why="a bool result", also=("Tensor.isclose",)),
    Row("hg.allclose", _method("allclose"), _close, grad=False, why="a Python bool", also=("Tensor.allclose",)),
    Row("hg.equal", _method("equal"), _equal, grad=False, why="a Python bool", also=("Tensor.equal",)),
]
