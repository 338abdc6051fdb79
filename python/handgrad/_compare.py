"""Comparisons, logic, clamp and where with PyTorch's forms: operators (x > 0, a == b, m & n, ~m),
methods and functions, a tensor or a number on the other side. The library does the work
(ops/compare.h); a comparison's result is a bool tensor, with no gradient through it.
"""
import builtins
import numbers

from . import _C, _args
from ._C import Tensor


def _is_number(v):
    return isinstance(v, numbers.Real)


def _comparison(op):
    with_tensor, with_number = getattr(_C, "_" + op), getattr(_C, "_" + op + "_number")

    def compare(input, other):
        _args.tensor(op, input)
        if isinstance(other, Tensor):
            return with_tensor(input, other)
        if _is_number(other):
            return with_number(input, float(other))
        raise TypeError(f"{op}(): other must be a handgrad Tensor or a number, not {type(other).__name__}")
    compare.__name__ = op
    compare.__doc__ = f"{op}(input, other): input {op} other elementwise (broadcast), as a bool tensor."
    return compare


eq, ne, lt, le, gt, ge = (_comparison(op) for op in ("eq", "ne", "lt", "le", "gt", "ge"))
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def _logic(op):
    fn = getattr(_C, "_" + op)

    def logic(input, other):
        _args.tensor(op, input)
        if not isinstance(other, Tensor):
            raise TypeError(f"{op}(): other must be a handgrad Tensor, not {type(other).__name__}")
        return fn(input, other)
    logic.__name__ = op
    logic.__doc__ = f"{op}(input, other): the elementwise {op[len('logical_'):]} of the two read as bools (broadcast)."
    return logic


logical_and, logical_or, logical_xor = (_logic(op) for op in ("logical_and", "logical_or", "logical_xor"))


def logical_not(input):
    """logical_not(input): True where input is 0 (False), as a bool tensor."""
    return _C._logical_not(_args.tensor("logical_not", input))


def isnan(input):
    """isnan(input): True where input is NaN, as a bool tensor."""
    return _C._isnan(_args.tensor("isnan", input))


def isinf(input):
    """isinf(input): True where input is +inf or -inf, as a bool tensor."""
    return _C._isinf(_args.tensor("isinf", input))


def isfinite(input):
    """isfinite(input): True where input is neither NaN nor ±inf, as a bool tensor."""
    return _C._isfinite(_args.tensor("isfinite", input))


def _dims(op, dim):
    if dim is None:
        return []
    items = dim if isinstance(dim, (list, tuple)) else [dim]
    for d in items:
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise TypeError(f"{op}(): dim must be an int or a tuple of ints, not {type(d).__name__}")
    return [int(d) for d in items]


def _reduction(op):
    fn = getattr(_C, "_" + op)

    def reduce(input, dim=None, keepdim=False):
        _args.tensor(op, input)
        if not isinstance(keepdim, bool):
            raise TypeError(f"{op}(): keepdim must be a bool, not {type(keepdim).__name__}")
        return fn(input, _dims(op, dim), keepdim)
    reduce.__name__ = op
    reduce.__doc__ = f"{op}(input, dim=None, keepdim=False): whether {op} entries over dim are nonzero, as bool."
    return reduce


any, all = _reduction("any"), _reduction("all")  # noqa: A001 (PyTorch's names)


def clamp(input, min=None, max=None):  # noqa: A002 (PyTorch's names)
    """input limited to [min, max] (either may be None, a number or a tensor); the gradient passes
    where min <= input <= max, and to a tensor bound where it is chosen."""
    _args.tensor("clamp", input)
    if min is None and max is None:
        raise TypeError("clamp(): give min or max (or both)")
    for name, v in (("min", min), ("max", max)):
        if v is not None and not isinstance(v, Tensor) and (isinstance(v, bool) or not _is_number(v)):
            raise TypeError(f"clamp(): {name} must be a number or a handgrad Tensor, not {type(v).__name__}")
    if builtins.any(v is not None and not isinstance(v, Tensor) and v != v for v in (min, max)):
        # PyTorch's rule: a nan bound makes every entry nan (and no gradient reaches input)
        nan = _C._full([], float(min if min is not None and min != min else max), input.dtype, input.device)
        return _C.where(_C._isnan(nan), nan, input)
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        def as_tensor(v):
            return v if v is None or isinstance(v, Tensor) else _C._full([], float(v), input.dtype, input.device)
        return _C._clamp_tensors(input, as_tensor(min), as_tensor(max))
    return _C._clamp(input, None if min is None else float(min), None if max is None else float(max))


clip = clamp


def where(condition, input=None, other=None):
    """input where condition is true, other elsewhere (broadcast); either may be a number.
    where(condition) alone is nonzero(condition, as_tuple=True), as in PyTorch."""
    if input is None and other is None and isinstance(condition, Tensor):
        from ._extras import nonzero
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where(): give condition, input and other (or the condition alone)")
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): condition must be a handgrad bool Tensor, not {type(condition).__name__}")
    like = input if isinstance(input, Tensor) else other if isinstance(other, Tensor) else None

    def operand(name, v):
        if isinstance(v, Tensor):
            return v
        if isinstance(v, bool) or not _is_number(v):
            raise TypeError(f"where(): {name} must be a handgrad Tensor or a number, not {type(v).__name__}")
        if like is None:
            return _C._full([], float(v), _C.dtype.float32, condition.device)
        return _C._full([], float(v), like.dtype, like.device)
    return _C.where(condition, operand("input", input), operand("other", other))


def masked_fill(input, mask, value):
    """masked_fill(input, mask, value): value where the bool mask is true, input elsewhere (the two
    broadcast, as torch's out-of-place form). value is a number or a 0-d tensor, cast to input's
    dtype; a tensor value that requires grad gets the sum of the output's gradient over the filled
    places, input the gradient elsewhere."""
    _args.tensor("masked_fill", input)
    if not isinstance(mask, Tensor) or mask.dtype != _C.dtype.bool:
        what = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise TypeError(f"masked_fill(): mask must be a bool tensor, not {what}; compare into one (x > 0)")
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise _C.Error(f"masked_fill(): value must be a number or a 0-d tensor, got a tensor of shape "
                           f"{tuple(value.shape)}")
        fill = value.to(input.dtype)
        fill = fill if fill.device == input.device else fill.to(input.device)
    elif _is_number(value):
        if input.dtype in (_C.dtype.float32, _C.dtype.float64) and _fits(mask, input):
            return _C.Tensor._masked_fill(input, mask, float(value))  # the library's op: same numbers, one pass
        fill = _C._full([], float(value), input.dtype, input.device)
    else:
        raise TypeError(f"masked_fill(): value must be a number or a 0-d tensor, not {type(value).__name__}")
    return _C.where(mask, fill, input)


def _fits(mask, input):
    """Whether mask broadcasts to input's shape without growing it."""
    if mask.dim() > input.dim():
        return False
    return builtins.all(m in (1, n) for m, n in zip(reversed(tuple(mask.shape)), reversed(tuple(input.shape))))


FUNCTIONS = ["eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal",
             "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "isfinite", "any", "all",
             "clamp", "clip", "masked_fill"]


def _operator(fn):
    def op(self, other):
        if not isinstance(other, Tensor) and not _is_number(other):
            return NotImplemented
        return fn(self, other)
    return op


def _bitwise(fn, name):
    def op(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        if self.dtype != _C.dtype.bool or other.dtype != _C.dtype.bool:
            raise TypeError(f"'{name}' takes bool tensors here (logical_and/or/xor read any tensor as truth values), "
                            f"not {self.dtype} and {other.dtype}")
        return fn(self, other)
    return op


def _invert(self):
    if self.dtype != _C.dtype.bool:
        raise TypeError(f"'~' takes a bool tensor here (logical_not reads any tensor as truth values), not {self.dtype}")
    return logical_not(self)


def attach():
    """The same calls as Tensor methods (x.gt(0), m.any()) and operators (x > 0, m & n, ~m)."""
    if not hasattr(Tensor, "_masked_fill"):  # the library's op (a number value) stays reachable
        Tensor._masked_fill = Tensor.masked_fill
    for name in FUNCTIONS:
        setattr(Tensor, name, globals()[name])
    for dunder, fn in (("__eq__", eq), ("__ne__", ne), ("__lt__", lt), ("__le__", le), ("__gt__", gt), ("__ge__", ge)):
        setattr(Tensor, dunder, _operator(fn))
    Tensor.__and__ = Tensor.__rand__ = _bitwise(logical_and, "&")
    Tensor.__or__ = Tensor.__ror__ = _bitwise(logical_or, "|")
    Tensor.__xor__ = Tensor.__rxor__ = _bitwise(logical_xor, "^")
    Tensor.__invert__ = _invert
    Tensor.__hash__ = object.__hash__  # __eq__ is elementwise: a tensor hashes by identity, as in PyTorch
