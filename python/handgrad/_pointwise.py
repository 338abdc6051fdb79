"""Pointwise functions of two tensors, PyTorch's names and forms: atan2 (arctan2), fmod, xlogy,
copysign, fmax, fmin, logaddexp, logaddexp2 and hypot, each one op of the C++ library
(ops/pointwise.cpp: the value rules, and the partial derivatives that give its backward and its
tangent). The error function and log10 are unary ops, bound from C++ as functions and methods
(hg.erf, x.erf(); erfc, erfinv, log10) with the other elementwise functions.

Where PyTorch takes a Python number for an operand (fmod's divisor, xlogy's either side,
copysign's sign), a number becomes a 0-d tensor beside the other operand: an int beside an int64
or bool tensor stays an integer, a float takes a float tensor's dtype or float32.
"""
import numbers

from . import _C
from ._C import Tensor

__all__ = ["atan2", "arctan2", "fmod", "xlogy", "copysign", "fmax", "fmin", "logaddexp", "logaddexp2", "hypot"]

_FLOATS = (_C.dtype.float32, _C.dtype.float64)


def _number_beside(v, t):
    """A Python number as a 0-d tensor beside the tensor t, with PyTorch's promotion."""
    if isinstance(v, numbers.Integral) and not isinstance(v, bool) and t.dtype not in _FLOATS:
        return _C._full([], float(v), _C.dtype.int64, str(t.device))
    if isinstance(v, bool):
        v = float(v)
    return _C._full([], float(v), t.dtype if t.dtype in _FLOATS else _C.dtype.float32, str(t.device))


def _operands(op, input, other, numbers_on):
    """input and other as tensors; numbers_on says which sides may be Python numbers ('' for none,
    'other', or 'either'), as PyTorch's signature for op does."""
    def is_number(v):
        return isinstance(v, numbers.Real) and not isinstance(v, Tensor)

    for name, v in (("input", input), ("other", other)):
        if not isinstance(v, Tensor) and not is_number(v):
            raise TypeError(f"{op}(): {name} must be a handgrad Tensor or a number, not {type(v).__name__}")
    if is_number(input) and is_number(other):
        raise TypeError(f"{op}(): one of input and other must be a handgrad Tensor")
    if is_number(input):
        if numbers_on != "either":
            raise TypeError(f"{op}(): input must be a handgrad Tensor, not {type(input).__name__}")
        input = _number_beside(input, other)
    if is_number(other):
        if numbers_on == "":
            raise TypeError(f"{op}(): other must be a handgrad Tensor, not {type(other).__name__} "
                            f"(hg.tensor({other!r}) makes one)")
        other = _number_beside(other, input)
    return input, other


def atan2(input, other):
    """atan2(input, other): the angle of the point (other, input) in (−π, π], elementwise and
    broadcast, as C's atan2: atan2(0, 0) = 0, atan2(0, −0) = π, atan2(inf, inf) = π/4.
    Gradient: ∂/∂input = other / r², ∂/∂other = −input / r² (r² = input² + other²)."""
    return _C._atan2(*_operands("atan2", input, other, ""))


def fmod(input, other):
    """fmod(input, other): input − trunc(input / other) · other with the exact quotient, so the
    result has the dividend's sign (C's fmod): fmod(−0.25, −0.001) is −0.000999…. Integer operands
    stay integers (a zero divisor is an error); other may be a number.
    Gradient: 1 for input, −trunc(input / other) for other."""
    return _C._fmod(*_operands("fmod", input, other, "other"))


def xlogy(input, other):
    """xlogy(input, other): input · ln(other), 0 where input is 0 (unless other is NaN). Either
    side may be a number. Gradient: ln(other) for input (0 where input = 0 and other ≤ 0), and
    input / other for other."""
    return _C._xlogy(*_operands("xlogy", input, other, "either"))


def copysign(input, other):
    """copysign(input, other): |input| with the sign bit of other (so −0 and −nan count as
    negative); other may be a number. Gradient: sign(input) · s(other) for input (0 at input = 0),
    none for other."""
    return _C._copysign(*_operands("copysign", input, other, "other"))


def fmax(input, other):
    """fmax(input, other): the larger of the two, a NaN losing to a number (NaN only where both
    are). The gradient goes to the one chosen (to input where they are equal)."""
    return _C._fmax(*_operands("fmax", input, other, ""))


def fmin(input, other):
    """fmin(input, other): the smaller of the two, a NaN losing to a number (NaN only where both
    are). The gradient goes to the one chosen (to input where they are equal)."""
    return _C._fmin(*_operands("fmin", input, other, ""))


def logaddexp(input, other):
    """logaddexp(input, other): ln(e^input + e^other) without overflow. Gradient: the softmax
    weights of the pair, e^(input − out) and e^(other − out)."""
    return _C._logaddexp(*_operands("logaddexp", input, other, ""))


def logaddexp2(input, other):
    """logaddexp2(input, other): log₂(2^input + 2^other) without overflow. Gradient:
    2^(input − out) and 2^(other − out)."""
    return _C._logaddexp2(*_operands("logaddexp2", input, other, ""))


def hypot(input, other):
    """hypot(input, other): √(input² + other²) without overflow or underflow. Gradient:
    input / out and other / out."""
    return _C._hypot(*_operands("hypot", input, other, ""))


arctan2 = atan2


def attach():
    """The same calls as Tensor methods (x.atan2(y), x.fmod(2), x.erf(), ...)."""
    for name in ["atan2", "arctan2", "fmod", "xlogy", "copysign", "fmax", "fmin", "logaddexp", "logaddexp2",
                 "hypot"]:
        setattr(Tensor, name, globals()[name])
