"""The reductions to an extreme with PyTorch's argument forms: amax, amin, min, argmin and
logsumexp. The library does the work (ops/extrema.h); this file reads a dim or a tuple of dims,
PyTorch's rank-0 rule (dim 0 or -1 of a 0-d tensor names no dim), min(x, other) as minimum, and
logsumexp's cases the library refuses (an int64 or bool input, read as float32; a reduction over
an empty dim, log 0 = -inf).
"""
import builtins
import math

from . import _C, _args
from ._C import Tensor


def _dims(op, dim):
    """An int or a sequence of ints, as a list."""
    items = dim if isinstance(dim, (list, tuple)) else [dim]
    return [_args.integer(op, "dim", d) for d in items]


def _reduced(op, input, dim):
    """The dims a reduction names, as a list. A 0-d tensor has one dim to PyTorch's reductions, 0
    (or -1): reducing it over that dim is reducing it over nothing, so the list is empty."""
    dims = [] if dim is None else _dims(op, dim)
    if input.dim() == 0 and dims:
        for d in dims:
            if d not in (0, -1):
                raise IndexError(f"{op}(): dim {d} is out of range for a 0-d tensor (accepted: -1 and 0)")
        if len(dims) > 1:
            raise _C.Error(f"{op}(): dim 0 appears more than once in {tuple(dims)}")
        return []
    return dims


def _over_nothing(input, dims):
    """Whether the reduction over dims (every dim when empty) reads no entry; False for a dim out of
    range (the library's op then says so)."""
    if not dims:
        return input.numel() == 0
    return builtins.all(-input.dim() <= d < input.dim() for d in dims) and 0 in [input.shape[d] for d in dims]


def amax(input, dim=(), keepdim=False):
    """The largest entry over dim (every dim when empty); tied entries share the gradient evenly."""
    _args.tensor("amax", input)
    return _C._amax(input, _reduced("amax", input, dim), _args.boolean("amax", "keepdim", keepdim))


def amin(input, dim=(), keepdim=False):
    """The smallest entry over dim (every dim when empty); tied entries share the gradient evenly."""
    _args.tensor("amin", input)
    return _C._amin(input, _reduced("amin", input, dim), _args.boolean("amin", "keepdim", keepdim))


_MinResult = _args.result("min")


def min(input, dim=None, keepdim=False):  # noqa: A001 (PyTorch's name)
    """min() is the smallest entry; min(dim) is (values, indices), the first minimum, as torch.min;
    min(other), with a tensor, is minimum(input, other)."""
    _args.tensor("min", input)
    if isinstance(dim, Tensor):
        from ._rearrange import minimum
        return minimum(input, dim)
    if dim is None:
        return _C._amin(input, [], False)
    d = _args.integer("min", "dim", dim)
    keepdim = _args.boolean("min", "keepdim", keepdim)
    return _MinResult(_C._min(input, d, keepdim), _C._argmin(input, d, keepdim))


def argmin(input, dim=None, keepdim=False):
    """The index of the first smallest entry along dim (of input flattened when dim is None)."""
    _args.tensor("argmin", input)
    if dim is None:
        return _C._argmin(input.reshape(-1), 0, False)
    return _C._argmin(input, _args.integer("argmin", "dim", dim), _args.boolean("argmin", "keepdim", keepdim))


def logsumexp(input, dim, keepdim=False):
    """log Σ exp(input) over dim, without overflow; its gradient is the softmax over dim."""
    _args.tensor("logsumexp", input)
    dims, keepdim = _reduced("logsumexp", input, dim), _args.boolean("logsumexp", "keepdim", keepdim)
    if input.dtype in (_C.dtype.int64, _C.dtype.bool):  # PyTorch's: an int64 or bool input is read as float32
        input = input.to(_C.dtype.float32)
    if _over_nothing(input, dims):
        return _C.sum(input, dims, keepdim) - math.inf  # log Σ of nothing: log 0 = −inf (PyTorch's)
    return _C._logsumexp(input, dims, keepdim)
