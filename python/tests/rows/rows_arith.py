"""Rows of the elementwise functions of two or three tensors: arithmetic (add ... pow), maximum,
minimum, lerp, clamp, where, the comparisons and the logical operations."""

import handgrad as hg
import numpy as np

from . import Bool, Const, Int, Raises, Row, Sample
from .samples import BOOLS, EDGES, INTS, binary, uniform

ALL = ("float64", "float32", "int64", "bool")
NO_BOOL = ("float64", "float32", "int64")


def _binary(name, samples, also=(), dtypes=ALL, **row):
    return Row(f"hg.{name}", lambda m, x, y, **kw: getattr(m, name)(x, y, **kw), samples,
               also=(f"Tensor.{name}",) + tuple(also), gen="binary", dtypes=dtypes, **row)


def _with_kwargs(make, extra):
    """make's samples, then extra(rng)'s."""
    return lambda rng: make(rng) + extra(rng)


def _alpha(rng):
    return [Sample((uniform(rng, (2, 3)), uniform(rng, (3,))), {"alpha": 2.5}, "alpha 2.5"),
            Sample((Int(INTS), Int(INTS)), {"alpha": 3}, "int operands, alpha 3")]


def _rounding(rng):
    x, y = uniform(rng, (3, 4), (-5, 5)), uniform(rng, (3, 4), (0.3, 2), signed=False) * rng.choice([-1, 1], (3, 4))
    edges = (np.repeat(EDGES, len(EDGES)), np.tile(EDGES, len(EDGES)))
    return [Sample((x, y), {"rounding_mode": "trunc"}, "rounding_mode trunc"),
            Sample((x, y), {"rounding_mode": "floor"}, "rounding_mode floor"),
            Sample(edges, {"rounding_mode": "trunc"}, "rounding_mode trunc at edges", grad=False),
            Sample(edges, {"rounding_mode": "floor"}, "rounding_mode floor at edges", grad=False),
            Sample((Int(INTS), Int([[2, -2, 3], [-3, 4, 1]])), {"rounding_mode": "trunc"},
                   "int operands, rounding_mode trunc"),
            Sample((Int(INTS), Int([[2, -2, 3], [-3, 4, 1]])), {"rounding_mode": "floor"},
                   "int operands, rounding_mode floor"),
            Sample((np.array([-7.0, 7.0, -0.25, 0.25]), 2.0), {"rounding_mode": "trunc"},
                   "number divisor, rounding_mode trunc")]


NEGATIVE_POWER = ("an int64 tensor to a negative int64 power raises hg.Error: the result is not an integer (PyTorch "
                  "truncates it: 0 for 2 ** -1, and 0 for 0 ** -1)")


def _negative_int_power(sample):
    """gen_skip of pow: an int64 base to a negative int64 exponent (NEGATIVE_POWER)."""
    x, y = (getattr(a, "value", a) for a in sample.args)
    return isinstance(sample.args[1], Int) and (np.asarray(y) < 0).any()


def _ties(rng):
    """maximum and minimum where the operands are equal: PyTorch splits the gradient evenly."""
    return [Sample((np.array([1.0, 2.0, -0.0, 0.5]), np.array([1.0, 3.0, 0.0, 0.5])), {}, "ties", kink=True)]


def _pow(rng):
    base = uniform(rng, (3, 4), (0.5, 2.0))
    return [Sample((base, uniform(rng, (3, 4))), {}, "random"),
            Sample((base, uniform(rng, (4,))), {}, "broadcast"),
            Sample((uniform(rng, ()), uniform(rng, (2, 3))), {}, "0-d with a matrix"),
            Sample((uniform(rng, (0, 3), (0.5, 2)), uniform(rng, (1, 3))), {}, "empty"),
            Sample((uniform(rng, (3,), (0.1, 2), signed=True), 2), {}, "number exponent 2"),
            Sample((uniform(rng, (3,), (0.1, 2), signed=True), 3.0), {}, "number exponent 3.0"),
            Sample((base, 0.5), {}, "number exponent 0.5"),
            Sample((base, -1.5), {}, "number exponent -1.5"),
            Sample((uniform(rng, (3,), (0.1, 2), signed=True), 0), {}, "number exponent 0"),
            Sample((2.5, uniform(rng, (2, 3))), {}, "number base"),
            Sample((np.repeat(EDGES, len(EDGES)), np.tile(EDGES, len(EDGES))), {}, "edge ±0 ±inf nan", grad=False),
            Sample((np.array([-8.0, -0.0, 0.0, 1e300, 1e-300, -1e300]), np.array([1 / 3, -1, -1, 2, 2, 3])), {},
                   "negative bases, zero and huge", grad=False),
            Sample((Int(INTS), Int([[0, 1, 2], [3, 2, 0]])), {}, "int operands"),
            Sample((Int([0, 2, -2, 1]), Int([-1, -1, -2, -3])), {}, "int operands, negative exponents",
                   differs=NEGATIVE_POWER, expect=Raises(hg.Error)),
            Sample((Int(INTS), 2), {}, "int base, number exponent 2"),
            Sample((Int(INTS), 0.5), {}, "int base, number exponent 0.5"),
            Sample((Bool(BOOLS), 2), {}, "bool base, number exponent 2")]


def _lerp(rng):
    x, y = uniform(rng, (3, 4)), uniform(rng, (3, 4))
    return [Sample((x, y, 0.3), {}, "number weight"),
            Sample((x, y, uniform(rng, (3, 4), (0, 1))), {}, "tensor weight"),
            Sample((uniform(rng, (2, 1, 4)), uniform(rng, (3, 1)), uniform(rng, (4,))), {}, "broadcast"),
            Sample((uniform(rng, ()), uniform(rng, ()), uniform(rng, ())), {}, "0-d"),
            Sample((uniform(rng, (0, 2)), uniform(rng, (0, 2)), 0.5), {}, "empty"),
            Sample((x, y, 1.7), {}, "weight past 1"),
            Sample((EDGES, EDGES[::-1].copy(), 0.5), {}, "edge ±0 ±inf nan", grad=False)]


def _clamp(rng):
    x = uniform(rng, (3, 4), (-3, 3))
    x = np.where(np.abs(np.abs(x) - 1) < 0.1, x + 0.3, x)  # away from the bounds ±1
    lo, hi = uniform(rng, (4,), (-1.5, -0.5)), uniform(rng, (3, 1), (0.5, 1.5))
    return [Sample((x,), {"min": -1.0, "max": 1.0}, "numbers"),
            Sample((np.array([-1.0, 1.0, 0.5, -2.0]),), {"min": -1.0, "max": 1.0}, "at the bounds", kink=True),
            Sample((np.array([-1.0, 0.5, 1.0]), np.array([-1.0, -1.0, -1.0]), np.array([1.0, 0.5, 1.0])), {},
                   "at tensor bounds", kink=True),
            Sample((x,), {"min": -1.0}, "min only"),
            Sample((x,), {"max": 1}, "max only (int)"),
            Sample((x, lo, hi), {}, "tensor bounds, broadcast"),
            Sample((x, Const(lo)), {}, "constant tensor min"),
            Sample((uniform(rng, ()),), {"min": -1.0, "max": 1.0}, "0-d"),
            Sample((uniform(rng, (0, 3)),), {"min": -1.0, "max": 1.0}, "empty"),
            Sample((EDGES,), {"min": -1.0, "max": 1.0}, "edge ±0 ±inf nan", grad=False),
            Sample((np.array([-2.0, 0.5, 2.0]),), {"min": 1.0, "max": -1.0}, "min above max", grad=False),
            Sample((Int(INTS),), {"min": -1, "max": 2}, "int operand"),
            Sample((np.array([-2.0, 0.5, 2.0]),), {"min": np.nan}, "nan bound", grad=False)]


def _clamp_fn(m, x, lo=None, hi=None, **kw):
    return m.clamp(x, lo, hi, **kw) if lo is not None else m.clamp(x, **kw)


def _where(rng):
    c = rng.random((3, 4)) > 0.5
    return [Sample((Bool(c), uniform(rng, (3, 4)), uniform(rng, (3, 4))), {}, "random"),
            Sample((Bool(c[:, :1]), uniform(rng, (1, 4)), uniform(rng, ())), {}, "broadcast"),
            Sample((Bool(c), uniform(rng, (3, 4)), 0.0), {}, "number other"),
            Sample((Bool(c), 2.5, uniform(rng, (3, 4))), {}, "number input"),
            Sample((Bool(np.zeros((0, 2), bool)), uniform(rng, (0, 2)), uniform(rng, (0, 2))), {}, "empty"),
            Sample((Bool(c), Int(np.ones((3, 4), int)), Int(np.zeros((3, 4), int))), {}, "int operands"),
            Sample((Bool(c[0]), EDGES[:4], EDGES[3:]), {}, "edge ±0 ±inf nan", grad=False)]


def _compare(name, also=()):
    return Row(f"hg.{name}", lambda m, x, y: getattr(m, name)(x, y),
               binary(ints=True, bools=True, numbers=(0.5, 0, np.inf)), grad=False, why="a bool result",
               also=(f"Tensor.{name}",) + tuple(also), gen="binary", dtypes=ALL)


def _logical(name):
    def make(rng):
        return (binary(ints=True, bools=True)(rng)
                + [Sample((Bool(BOOLS), Int(INTS)), {}, "bool and int"),
                   Sample((Bool(BOOLS[0]), Bool(BOOLS[:, :1])), {}, "bool broadcast")])
    return Row(f"hg.{name}", lambda m, x, y: getattr(m, name)(x, y), make, grad=False, why="a bool result",
               also=(f"Tensor.{name}",), gen="binary", dtypes=ALL)


ROWS = [
    _binary("add", _with_kwargs(binary(bools=True, numbers=(2.5, 3, -0.0), mixed="refused"), _alpha)),
    _binary("sub", _with_kwargs(binary(numbers=(2.5, 3), mixed="refused"), _alpha), also=("hg.subtract", "Tensor.subtract"),
            dtypes=NO_BOOL),
    _binary("mul", binary(bools=True, numbers=(2.5, 3, np.inf), mixed="refused"), also=("hg.multiply", "Tensor.multiply")),
    _binary("div", _with_kwargs(binary(other_domain=(0.2, 2.0), other_signed=True, bools=True, numbers=(2.5, 3),
                                       mixed="refused"),
                                lambda rng: [Sample((uniform(rng, (2, 3)), 0.0), {}, "number 0.0", grad=False)]),
            also=("hg.divide", "Tensor.divide", "hg.true_divide", "Tensor.true_divide")),
    Row("hg.div", lambda m, x, y, **kw: m.div(x, y, **kw), _rounding, also=("Tensor.div", "hg.divide"),
        grad=False, why="rounding_mode gives a piecewise constant quotient: its gradient is zero, checked "
        "against torch's by the forward-only samples"),
    _binary("pow", _pow, dtypes=NO_BOOL, domain=(0.5, 2.0), gen_skip=_negative_int_power),
    _binary("maximum", _with_kwargs(binary(bools=True), _ties)),
    _binary("minimum", _with_kwargs(binary(bools=True), _ties)),
    Row("hg.lerp", lambda m, x, y, w: m.lerp(x, y, w), _lerp, also=("Tensor.lerp",)),
    Row("hg.clamp", _clamp_fn, _clamp, also=("hg.clip", "Tensor.clamp", "Tensor.clip")),
    Row("Tensor.clamp_min", lambda m, x: x.clamp_min(0.25),
        lambda rng: [Sample((uniform(rng, (3, 4), (0.3, 2), signed=True),), {}, "random"),
                     Sample((EDGES,), {}, "edge ±0 ±inf nan", grad=False)]),
    Row("Tensor.clamp_max", lambda m, x: x.clamp_max(-0.25),
        lambda rng: [Sample((uniform(rng, (3, 4), (0.3, 2), signed=True),), {}, "random"),
                     Sample((EDGES,), {}, "edge ±0 ±inf nan", grad=False)]),
    Row("hg.where", lambda m, c, x, y: m.where(c, x, y), _where),
    Row("hg.where", lambda m, c: m.where(c),
        lambda rng: [Sample((Bool(BOOLS),), {}, "condition alone"), Sample((Int(INTS),), {}, "int condition"),
                     Sample((Bool(np.zeros((0, 3), bool)),), {}, "empty")], grad=False,
        why="int64 positions (nonzero(condition, as_tuple=True))"),
    *[_compare(n) for n in ("eq", "ne", "lt", "le", "gt", "ge")],
    _compare("greater", ("hg.gt",)), _compare("greater_equal"), _compare("less"), _compare("less_equal"),
    _compare("not_equal"),
    *[_logical(n) for n in ("logical_and", "logical_or", "logical_xor")],
]
