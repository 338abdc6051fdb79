"""Rows for the pointwise ops of ops/pointwise.cpp (atan2, fmod, remainder, floor_divide, xlogy,
copysign, fmax, fmin, logaddexp, logaddexp2, hypot) and the error function and log10 of
ops/elementwise_math.cpp: gradient samples away from each op's jumps and kinks, forward-only samples
at the edges where a composed formula goes wrong (a quotient that rounds to a whole number, signed
zeros, infinities, NaN, tiny and huge magnitudes)."""
import numpy as np

from . import Bool, Const, Int, Row, Sample  # noqa: F401

INF, NAN = np.inf, np.nan
HUGE_QUOTIENT = ("1e300 mod 1e-300 is C's fmod, exactly 4.89e-301 (the quotient 1e600 is past float64's range; "
                 "PyTorch's vectorised CPU kernel divides first and gives nan)")


def _away_from_jumps(rng, shape_a, shape_b):
    """a (shape_a, which b broadcasts to) and b with a / b at least 0.1 from a whole number and b
    away from 0: the quotient's jumps are out of the finite differences' reach."""
    b = rng.uniform(0.6, 1.6, shape_b) * rng.choice([-1.0, 1.0], shape_b)
    q = rng.integers(-4, 5, shape_a) + rng.uniform(0.1, 0.9, shape_a)
    return q * b, b


def _division(rng):
    a, b = _away_from_jumps(rng, (3, 4), (3, 4))
    a2, b2 = _away_from_jumps(rng, (2, 3), (3,))
    return [
        Sample((a, b), label="(3, 4), signs mixed"),
        Sample((a2, b2), label="broadcast (2, 3) and (3,)"),
        Sample((np.array(1.7), np.array(-0.6)), label="0-d"),
        Sample((np.array([-0.25, 0.25, -0.25, 7.5, 5.0, -0.0, 3.0, 2.0, 1e-300]),
                np.array([-0.001, -0.001, 0.001, -2.0, INF, 3.0, -INF, 0.0, 1e300])),
               label="edge: a quotient rounding to a whole number, ±0, ±inf, tiny, a zero divisor",
               grad=False),
        Sample((np.full(16, 1e300), np.full(16, 1e-300)), label="edge: a quotient past float64's range", grad=False,
               differs=HUGE_QUOTIENT),
        Sample((np.zeros((0, 3)), np.ones(3)), label="empty", grad=False),
        Sample((Int(np.array([7, -7, 7, -7])), Int(np.array([3, 3, -3, -3]))), label="int64 operands"),
        Sample((np.array([-0.25, 7.5]), -0.001), label="a number divisor", grad=False),
    ]


def _binary(rng, low=-2.0, high=2.0):
    return [
        Sample((rng.uniform(low, high, (3, 4)), rng.uniform(low, high, (3, 4))), label="(3, 4)"),
        Sample((rng.uniform(low, high, (2, 3, 4)), rng.uniform(low, high, (3, 1))), label="broadcast (2, 3, 4) and (3, 1)"),
        Sample((np.array(rng.uniform(low, high)), np.array(rng.uniform(low, high))), label="0-d"),
        Sample((np.zeros((0, 2)), np.zeros(2)), label="empty", grad=False),
        Sample((Int(np.array([1, -2, 3])), np.array([0.5, 1.5, -2.5])), label="an int64 operand beside float64", grad=False),
    ]


def _edges(*pairs, label):
    a, b = zip(*pairs)
    return Sample((np.array(a, dtype=float), np.array(b, dtype=float)), label=label, grad=False)


SIGNED_EDGES = [(0.0, 0.0), (0.0, -0.0), (-0.0, 0.0), (-0.0, -0.0), (INF, INF), (INF, -INF), (-INF, INF), (1.0, -INF),
                (-1.0, -INF), (NAN, 1.0), (1.0, NAN), (1e-300, 1e300), (1e300, 1e-300), (2.0, 0.0)]


def _atan2(rng):
    return _binary(rng) + [_edges(*SIGNED_EDGES, label="edge: ±0, ±inf, nan, tiny and huge")]


def _xlogy(rng):
    x, y = rng.uniform(-2, 2, (3, 4)), rng.uniform(0.3, 3, (3, 4))
    return [
        Sample((x, y), label="(3, 4), y > 0"),
        Sample((rng.uniform(-2, 2, (2, 3)), rng.uniform(0.3, 3, (3,))), label="broadcast (2, 3) and (3,)"),
        Sample((np.array([0.0, 0.0, 1.5]), np.array([2.0, 0.5, 3.0])), label="x = 0 with y > 0: the x-gradient is ln y"),
        _edges((0.0, 0.0), (0.0, -1.0), (0.0, NAN), (0.0, INF), (2.0, 0.0), (-0.0, 2.0), (1e-300, 1e300), (INF, 1.0),
               label="edge: x = 0 beside y ≤ 0, nan, inf"),
        Sample((np.array([0.0, 2.0]), 3.0), label="a number y", grad=False),
        Sample((2.0, np.array([0.5, 3.0])), label="a number x", grad=False),
    ]


def _copysign(rng):
    a = rng.uniform(0.3, 2, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))
    b = rng.uniform(0.3, 2, (4,)) * rng.choice([-1.0, 1.0], (4,))
    return [
        Sample((a, b), label="broadcast (3, 4) and (4,), both away from 0"),
        _edges((1.5, -0.0), (1.5, 0.0), (-2.0, INF), (0.0, -1.0), (NAN, -1.0), (INF, -0.0), label="edge: signed zeros, inf, nan"),
        Sample((np.array([1.5, -2.0]), -1.0), label="a number for the sign", grad=False),
    ]


def _choice(rng):
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4,))
    return [
        Sample((a, b), label="broadcast (3, 4) and (4,)"),
        Sample((np.array(0.3), np.array(-0.7)), label="0-d"),
        _edges((NAN, 2.0), (1.0, NAN), (NAN, NAN), (-0.0, 0.0), (INF, -INF), (3.0, 3.0), label="edge: nan loses, ties, inf"),
    ]


def _logaddexp(rng):
    return _binary(rng, -3, 3) + [
        _edges((1000.0, 1000.0), (-INF, -INF), (INF, INF), (-INF, 1.0), (-1000.0, 1000.0), (NAN, 1.0), (1e-300, -1e-300),
               label="edge: far out, infinities, nan"),
    ]


def _hypot(rng):
    return _binary(rng) + [
        _edges((3e300, 4e300), (3e-300, 4e-300), (INF, NAN), (-0.0, 0.0), (NAN, 1.0), label="edge: huge, tiny, inf beside nan"),
    ]


def _unary(low, high, edges):
    def samples(rng):
        return [
            Sample((rng.uniform(low, high, (3, 4)),), label=f"(3, 4) in ({low}, {high})"),
            Sample((np.array(rng.uniform(low, high)),), label="0-d"),
            Sample((np.zeros((2, 0)),), label="empty", grad=False),
            Sample((np.array(edges, dtype=float),), label="edge: ±0, ±inf, nan, the domain's ends", grad=False),
            Sample((Int(np.array([0, 1, 2])),), label="int64 input (float32 result)", grad=False),
        ]
    return samples


def _binary_row(name, samples, **kw):
    return Row(f"hg.{name}", lambda m, a, b: getattr(m, name)(a, b), samples, also=(f"Tensor.{name}",), **kw)


ROWS = [
    _binary_row("atan2", _atan2),
    Row("hg.arctan2", lambda m, a, b: m.arctan2(a, b), _atan2, also=("Tensor.arctan2",)),
    _binary_row("fmod", _division),
    _binary_row("remainder", _division),
    Row("hg.floor_divide", lambda m, a, b: m.floor_divide(a, b),
        lambda rng: [x for x in _division(rng) if x.differs != HUGE_QUOTIENT], also=("Tensor.floor_divide",), grad=False,
        why="piecewise constant: PyTorch gives no gradient either; the C++ op's zero gradient is gradcheck's row"),
    _binary_row("xlogy", _xlogy),
    _binary_row("copysign", _copysign),
    _binary_row("fmax", _choice),
    _binary_row("fmin", _choice),
    _binary_row("logaddexp", _logaddexp),
    _binary_row("logaddexp2", _logaddexp),
    _binary_row("hypot", _hypot),
    Row("hg.erf", lambda m, x: m.erf(x), _unary(-2.5, 2.5, [0.0, -0.0, INF, -INF, NAN, 1e-300, 6.0, -6.0]),
        also=("Tensor.erf",)),
    Row("hg.erfc", lambda m, x: m.erfc(x), _unary(-2.5, 2.5, [0.0, -0.0, INF, -INF, NAN, 1e-300, 6.0, 27.0]),
        also=("Tensor.erfc",)),
    Row("hg.erfinv", lambda m, x: m.erfinv(x), _unary(-0.9, 0.9, [0.0, -0.0, 1.0, -1.0, 1.5, NAN, 1e-300, 0.999999]),
        also=("Tensor.erfinv",)),
    Row("hg.log10", lambda m, x: m.log10(x), _unary(0.3, 3.0, [0.0, -0.0, INF, -1.0, NAN, 1e-300, 1e300, 1000.0]),
        also=("Tensor.log10",)),
]
