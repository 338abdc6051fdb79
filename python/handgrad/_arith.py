"""Arithmetic as functions and methods, PyTorch's names and forms: add, sub, mul, div (with
``rounding_mode``), floor_divide, remainder, pow, neg and their aliases.

The operators (``+ - * / // % **``) are bound in C++ (python/src/arith.cpp); these forms read
PyTorch's keyword arguments (``alpha``, ``rounding_mode``) and a number on either side, and call
the same library ops. Integer and bool tensors follow PyTorch's promotion (docs/python.md).
"""
import numbers

from . import _C
from ._C import Tensor


def _operand(op, v, name):
    if isinstance(v, Tensor):
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{op}(): {name} must be a handgrad Tensor or a number, not {type(v).__name__}")
    return v


def _pair(op, input, other):
    """The two operands, at least one a tensor: numbers go through the operators' own rules."""
    _operand(op, input, "input")
    _operand(op, other, "other")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{op}(): one of input and other must be a handgrad Tensor")
    return input, other


def _floating(v):
    """Whether an operand makes a division floating-point: a float tensor or a Python float."""
    if isinstance(v, Tensor):
        return v.dtype in (_C.dtype.float32, _C.dtype.float64)
    return isinstance(v, float)


def add(input, other, *, alpha=1):
    """add(input, other, alpha=1): input + alpha · other."""
    input, other = _pair("add", input, other)
    if alpha != 1:
        other = other * alpha
    return input + other


def sub(input, other, *, alpha=1):
    """sub(input, other, alpha=1): input − alpha · other."""
    input, other = _pair("sub", input, other)
    if alpha != 1:
        other = other * alpha
    return input - other


def mul(input, other):
    """mul(input, other): the elementwise product, broadcasting."""
    input, other = _pair("mul", input, other)
    return input * other


def div(input, other, *, rounding_mode=None):
    """div(input, other, rounding_mode=None): true division; 'floor' rounds the quotient towards
    −∞ (floor_divide), 'trunc' towards 0."""
    input, other = _pair("div", input, other)
    if rounding_mode is None:
        return input / other
    if rounding_mode == "floor":
        return input // other
    if rounding_mode == "trunc":
        if _floating(input) or _floating(other):  # PyTorch's rule for floats: trunc(a / b), so inf / 2 is inf
            return _C.trunc(input / other)
        q = input // other
        r = input % other
        # floor and trunc differ where the quotient is negative and not whole: add one back there
        fix = (r != 0) & ((input < 0) != (other < 0)) if isinstance(q, Tensor) else False
        return _C.where(fix, q + 1, q) if isinstance(fix, Tensor) else q
    raise ValueError(f"div(): rounding_mode must be None, 'trunc' or 'floor', not {rounding_mode!r}")


def true_divide(input, other):
    """true_divide(input, other): div without rounding."""
    return div(input, other)


def floor_divide(input, other):
    """floor_divide(input, other): input / other rounded towards −∞ (no gradient flows)."""
    input, other = _pair("floor_divide", input, other)
    return input // other


def remainder(input, other):
    """remainder(input, other): input − floor_divide(input, other) · other, with other's sign."""
    input, other = _pair("remainder", input, other)
    return input % other


def pow(input, exponent):  # noqa: A001 (torch.pow's name)
    """pow(input, exponent): input ** exponent; either may be a number, the other a tensor."""
    input, exponent = _pair("pow", input, exponent)
    return input ** exponent


def neg(input):
    """neg(input): −input."""
    if not isinstance(input, Tensor):
        raise TypeError(f"neg(): input must be a handgrad Tensor, not {type(input).__name__}")
    return -input


subtract, multiply, divide, negative = sub, mul, div, neg
FUNCTIONS = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "pow", "neg",
             "subtract", "multiply", "divide", "negative"]


def attach():
    """The same calls as Tensor methods (x.add(y), x.pow(2), ...)."""
    for name in FUNCTIONS:
        setattr(Tensor, name, globals()[name])
