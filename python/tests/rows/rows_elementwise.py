"""Rows of the elementwise functions of one tensor: hg.exp ... hg.trunc, their Tensor methods and
aliases, the activations F.relu / F.tanh / F.sigmoid / F.silu, and the tests isnan, isinf, isfinite,
logical_not."""

import numpy as np

from . import Bool, Row, Sample
from .samples import away_from_integers, unary, uniform

ALL = ("float64", "float32", "int64", "bool")
FLOATS = ("float64", "float32")


def _unary(name, domain=(-2.0, 2.0), signed=False, ints=True, bools=True, draw=None, also=(), nan=None,
           kinks=(), extra=(), **row):
    """A row for hg.<name>(x) and x.<name>() (and the also names). ints, bools: True where PyTorch
    takes int64 (bool) tensors (the result dtype and values compared), False where it refuses them;
    "refused" where PyTorch takes them and hg refuses them (samples.INT_REFUSED)."""
    dtypes = FLOATS + (("int64",) if ints is True else ()) + (("bool",) if bools is True else ())

    def fn(m, x, **kw):  # torch has no torch.silu: its F.silu is the reference
        return (getattr(m, name) if hasattr(m, name) else getattr(m.nn.functional, name))(x, **kw)
    return Row(f"hg.{name}", fn,
               _plus(unary(domain, signed, ints=ints, bools=bools, draw=draw, nan=nan, kinks=kinks), extra),
               also=(f"Tensor.{name}",) + tuple(also), gen="unary", dtypes=dtypes, domain=domain, signed=signed,
               **row)


def _plus(make, extra):
    """make's samples and the fixed samples extra."""
    return (lambda rng: make(rng) + list(extra)) if extra else make


def _steps(rng, shape):
    return away_from_integers(rng, shape)


ROWS = [
    _unary("abs", (0.1, 2.0), signed=True, bools=False, kinks=(0.0, -0.0)),
    _unary("acos", (-0.9, 0.9)),
    _unary("acosh", (1.1, 3.0)),
    _unary("asin", (-0.9, 0.9)),
    _unary("asinh"),
    _unary("atan"),
    _unary("atanh", (-0.9, 0.9)),
    _unary("cos"),
    _unary("cosh"),
    _unary("sin"),
    _unary("sinh"),
    _unary("tan", (-1.2, 1.2)),
    _unary("tanh", also=("F.tanh",)),
    _unary("exp"),
    _unary("exp2"),
    _unary("expm1"),
    _unary("log", (0.1, 3.0)),
    _unary("log2", (0.1, 3.0)),
    _unary("log1p", (-0.9, 3.0)),
    _unary("sqrt", (0.1, 3.0), kinks=(0.0,)),
    _unary("rsqrt", (0.1, 3.0), kinks=(0.0,)),
    _unary("reciprocal", (0.2, 2.0), signed=True),
    _unary("sigmoid", also=("F.sigmoid",)),
    _unary("square"),
    # away from 0: sinc's gradient there is a difference of nearly equal terms (both libraries lose digits)
    _unary("sinc", (0.25, 2.0), signed=True, ints=True, bools=True),
    _unary("relu", (0.1, 2.0), signed=True, bools=False, also=("F.relu",), kinks=(0.0, -0.0)),
    _unary("silu", ints=False, bools=False, also=("F.silu",)),
    _unary("neg", ints=True, bools=False, also=("hg.negative", "Tensor.negative")),
    _unary("sign", (0.1, 2.0), signed=True, kinks=(0.0,), bools=False, extra=[
        Sample((Bool(np.array([True, False])),), {}, "bool operand (a bool's sign is itself)")]),
    _unary("ceil", bools=False, draw=_steps, kinks=(1.0, -2.0, 0.5, -1.5)),
    _unary("floor", bools=False, draw=_steps, kinks=(1.0, -2.0, 0.5, -1.5)),
    _unary("trunc", bools=False, draw=_steps, kinks=(1.0, -2.0, 0.5, -1.5)),
    _unary("round", bools=False, draw=_steps, kinks=(1.0, -2.0, 0.5, -1.5)),
    Row("hg.round", lambda m, x, **kw: m.round(x, **kw),
        lambda rng: [Sample((np.round(uniform(rng, (3, 4), (-3, 3)), 2) + 0.003,), {"decimals": 2}, "decimals 2"),
                     Sample((np.round(uniform(rng, (5,), (-300, 300)), -1) + 3.0,), {"decimals": -1},
                            "decimals -1"),
                     Sample((np.array([0.125, 0.135, -2.5e-3, np.inf, np.nan, 1e300]),), {"decimals": 2},
                            "decimals 2 at halves and edges", grad=False)],
        also=("Tensor.round",)),
    _unary("nan_to_num", ints=True, bools=True),
    Row("hg.nan_to_num", lambda m, x, **kw: m.nan_to_num(x, **kw),
        lambda rng: [Sample((np.array([np.nan, np.inf, -np.inf, 1.5, -0.0]),),
                            {"nan": 2.0, "posinf": 1e10, "neginf": -3.0}, "given values", grad=False),
                     Sample((uniform(rng, (3, 4)),), {"nan": 1.0}, "finite values")],
        also=("Tensor.nan_to_num",)),
    *[Row(f"hg.{name}", lambda m, x, name=name: getattr(m, name)(x), unary(ints=True, bools=True), grad=False,
          why="a bool result", also=(f"Tensor.{name}",), gen="unary", dtypes=ALL)
      for name in ("isnan", "isinf", "isfinite", "logical_not")],
]
