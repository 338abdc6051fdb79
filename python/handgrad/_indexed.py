"""Indexed writes and reads with PyTorch's forms: scatter (with reduce='add' or 'multiply'),
index_fill, index_add, take_along_dim and repeat_interleave (an int or a tensor of counts).

Positions are worked out on the host from the index's values; the values move through the
library's recorded ops (scatter, scatter_add, index_select, gather, where, mul), so each gradient
is theirs: a scattered product sends each factor the product of the others, index_add's source
gets the gradient at the places it was added, index_fill's tensor value the sum over the filled
places.
"""
import numbers

import numpy as np

from . import _C, _args, _factories
from ._C import Tensor

_INTEGRAL = (_C.dtype.int64, _C.dtype.bool)


def _index(op, index, name="index"):
    if not isinstance(index, Tensor) or index.dtype != _C.dtype.int64:
        what = _args.dtype_name(index.dtype) if isinstance(index, Tensor) else type(index).__name__
        raise TypeError(f"{op}(): {name} must be an int64 tensor, not {what}")
    return index


def _filler(op, value, like, name="value"):
    """A number (bool included) or a 0-d tensor, as a 0-d tensor of like's dtype and device (a
    number is cast as PyTorch casts it: 2.7 is 2 in an int64 tensor, nonzero is True in a bool one)."""
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise _C.Error(f"{op}(): {name} must be a number or a 0-d tensor, got a tensor of shape "
                           f"{tuple(value.shape)}")
        value = value if value.dtype == like.dtype else value.to(like.dtype)
        return value if value.device == like.device else value.to(like.device)
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{op}(): {name} must be a number or a 0-d tensor, not {type(value).__name__}")
    return _C._full([], float(value), like.dtype, like.device)


# ---------------------------------------------------------------- scatter

def _scatter_targets(op, input, dim, index, src):
    """Where each entry of index sends its src entry: (flat positions in input, flat positions in
    src), both in index's row-major order, after PyTorch's checks."""
    if not input.dim() == index.dim() == src.dim():
        raise _C.Error(f"{op}(): input {tuple(input.shape)}, index {tuple(index.shape)} and src "
                       f"{tuple(src.shape)} must have as many dims")
    for k in range(index.dim()):
        if index.shape[k] > src.shape[k] or (k != dim and index.shape[k] > input.shape[k]):
            raise _C.Error(f"{op}(): index {tuple(index.shape)} is larger than src {tuple(src.shape)} or than input "
                           f"{tuple(input.shape)} outside dim {dim}")
    where = _args.host(index)
    n = input.shape[dim]
    if where.size and (where.min() < 0 or where.max() >= n):
        bad = where[(where < 0) | (where >= n)].flat[0]
        raise IndexError(f"{op}(): index {bad} is out of range for dim {dim} of input {tuple(input.shape)} "
                         f"(from 0 to {n - 1})")
    grid = np.indices(where.shape).reshape(where.ndim, -1)
    to = grid.copy()
    to[dim] = where.reshape(-1)
    return np.ravel_multi_index(tuple(to), tuple(input.shape)), np.ravel_multi_index(tuple(grid), tuple(src.shape))


def _scatter_multiply(input, dim, index, src):
    """input with each place that index names multiplied by the src entries sent there. Places
    named k times take k rounds: in round r every place's r-th factor is scattered into ones (no
    place twice in a round), and the rounds' products multiply input."""
    targets, sources = _scatter_targets("scatter", input, dim, index, src)
    if not targets.size:
        return input.clone()
    order = np.argsort(targets, kind="stable")
    first = np.searchsorted(targets[order], targets[order])  # where each place's run starts
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size) - first  # which of its place's factors each entry is
    flat, values = input.reshape(-1), src.reshape(-1)
    out = flat
    for r in range(int(rank.max()) + 1):
        sel = rank == r
        factors = _C._index_select(values, 0, _args.index_tensor(sources[sel], input))
        ones = _C._full([flat.numel()], 1.0, input.dtype, input.device)
        spread = _C._scatter(ones, 0, _args.index_tensor(targets[sel], input), factors)
        out = _C._logical_and(out, spread) if input.dtype == _C.dtype.bool else out * spread
    return out.reshape(*input.shape)


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """scatter(input, dim, index, src, *, reduce=None) or scatter(input, dim, index, value): a copy
    of input with out[i][index[i][j][k]][k] = src[i][j][k] (dim 1; src may be a number, cast to
    input's dtype); where index names a place twice the last write is kept. reduce='add' adds the
    src entries into input's places instead (scatter_add), 'multiply' multiplies them in."""
    _args.tensor("scatter", input)
    dim, index = _args.integer("scatter", "dim", dim), _index("scatter", index)
    if src is not None and value is not None:
        raise TypeError("scatter(): give src or value, not both")
    if reduce not in (None, "add", "multiply"):
        raise ValueError(f"scatter(): reduce must be 'add' or 'multiply' (or None), not {reduce!r}")
    v = value if src is None else src
    if not isinstance(v, Tensor) and (v is None or not isinstance(v, numbers.Real)):
        raise TypeError(f"scatter(): src must be a handgrad Tensor or value a number, not {type(v).__name__}")
    if reduce is None:
        return _C._scatter(input, dim, index, v) if isinstance(v, Tensor) else \
            _C._scatter_value(input, dim, index, float(v))
    if not isinstance(v, Tensor):  # a number: the same value sent from every entry of index
        v = _C._full(list(index.shape), float(v), input.dtype, input.device)
    elif v.dtype != input.dtype:
        raise TypeError(f"scatter(): src is {_args.dtype_name(v.dtype)} but input is {_args.dtype_name(input.dtype)}; "
                        "with reduce= they must be one dtype (convert with .to(dtype))")
    if reduce == "add":
        return _C._scatter_add(input, dim, index, v)
    d = _args.dim("scatter", input, dim)
    if input.dim() == 0:  # PyTorch's rule: the 0-d tensor is one entry along dim 0
        return _scatter_multiply(input.reshape(1), 0, index.reshape(1), v.reshape(1)).reshape(())
    return _scatter_multiply(input, d, index, v)


# ---------------------------------------------------------------- index_fill, index_add

def _along(op, self, dim, index):
    """The wrapped dim and the flat positions (NumPy) of a 1-d (or 0-d) index along it."""
    d = _args.dim(op, self, dim)
    if index.dim() > 1:
        raise _C.Error(f"{op}(): index must be 0-d or 1-d, got shape {tuple(index.shape)}")
    return d, _args.host(index).reshape(-1)


def index_fill(self, dim, index, value):
    """x.index_fill(dim, index, value): a copy of x with the slices that index (int64, 0-d or 1-d;
    negative from the end) names along dim set to value — a number (cast to x's dtype) or a 0-d
    tensor, whose gradient is the sum of the output's over the filled places."""
    _args.tensor("index_fill", self)
    index = _index("index_fill", index)
    fill = _filler("index_fill", value, self)
    d, where = _along("index_fill", self, dim, index)
    n = self.shape[d] if self.dim() else 1
    if where.size and (where.min() < -n or where.max() >= n):
        bad = where[(where < -n) | (where >= n)][0]
        raise IndexError(f"index_fill(): index {bad} is out of range for dim {d} of x {tuple(self.shape)} "
                         f"(from {-n} to {n - 1})")
    mask = np.zeros(n, bool)
    mask[where] = True
    shape = [n if k == d else 1 for k in range(self.dim())]
    return _C.where(_args.from_host(mask.reshape(shape), self), fill, self)


def index_add(self, dim, index, source, *, alpha=1):
    """x.index_add(dim, index, source, *, alpha=1): a copy of x with alpha · source's slices added
    at the positions index (int64, 0-d or 1-d) names along dim; repeated positions add up. For
    int64 x, alpha is truncated to an integer; for bool x the adds are ors (as PyTorch's)."""
    op = "index_add"
    _args.tensor(op, self), _args.tensor(op, source, "source")
    index = _index(op, index)
    if isinstance(alpha, Tensor) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"{op}(): alpha must be a number, not {type(alpha).__name__}")
    d, where = _along(op, self, dim, index)
    if source.dim() != self.dim() or where.size != (source.shape[d] if source.dim() else 1) or any(
            source.shape[k] != self.shape[k] for k in range(self.dim()) if k != d):
        raise _C.Error(f"{op}(): index {tuple(index.shape)} and source {tuple(source.shape)} do not fit x "
                       f"{tuple(self.shape)} along dim {d}: source has x's shape but along dim, where it has one "
                       "slice per index")
    if self.dim() == 0:  # PyTorch's rule: the 0-d tensor is one entry along dim 0
        return index_add(self.reshape(1), 0, index.reshape(1), source.reshape(1), alpha=alpha).reshape(())
    if self.dtype == _C.dtype.bool:
        return self.clone() if not alpha else _C._scatter_add(self, d, _spread(index, source, d), source)
    alpha = int(alpha) if self.dtype == _C.dtype.int64 else float(alpha)
    scaled = source if alpha == 1 else source * alpha
    return _C._scatter_add(self, d, _spread(index, source, d), scaled)


def _spread(index, source, d):
    """index along dim d, expanded to source's shape (scatter_add's index)."""
    return index.reshape(*[-1 if k == d else 1 for k in range(source.dim())]).expand(*source.shape)


# ---------------------------------------------------------------- take_along_dim, repeat_interleave

def take_along_dim(input, indices, dim=None):
    """take_along_dim(x, indices, dim): gather along dim after input and indices broadcast in every
    other dim (as torch's); a negative index counts from the end of dim. dim None reads the
    flattened x at the flattened indices (each from 0 to x.numel() − 1)."""
    op = "take_along_dim"
    _args.tensor(op, input), _index(op, indices, "indices")
    if dim is None:
        return _C._gather(input.reshape(-1), 0, indices.reshape(-1))
    if input.dim() != indices.dim() or input.dim() == 0:
        raise IndexError(f"{op}(): input {tuple(input.shape)} and indices {tuple(indices.shape)} need the "
                         f"same number of dims (at least one) to take along dim {dim}")
    d = _args.dim(op, input, dim)
    shape = [a if b == 1 or a == b else b if a == 1 else -1 for a, b in zip(input.shape, indices.shape)]
    if -1 in shape[:d] + shape[d + 1:]:
        raise _C.Error(f"{op}(): input {tuple(input.shape)} and indices {tuple(indices.shape)} do not "
                       f"broadcast outside dim {dim}")
    n = input.shape[d]
    if indices.numel() and bool(_C._lt_number(indices, 0.0).any()):
        if bool(_C._lt_number(indices, float(-n)).any()):
            raise IndexError(f"{op}(): an index below {-n} is out of range for dim {d} of input "
                             f"{tuple(input.shape)} (from {-n} to {n - 1})")
        indices = _C.where(_C._lt_number(indices, 0.0), indices + n, indices)
    return _C._gather(input.expand(*shape[:d], n, *shape[d + 1:]), d,
                      indices.expand(*shape[:d], indices.shape[d], *shape[d + 1:]))


def _counts(op, repeats, n):
    """The repeat counts of a 0-d or 1-d int64 tensor, one per entry along the dim (a single count
    serves every entry)."""
    _index(op, repeats, "repeats")
    if repeats.dim() > 1:
        raise _C.Error(f"{op}(): repeats must be 0-d or 1-d, got shape {tuple(repeats.shape)}")
    counts = _args.host(repeats).reshape(-1)
    if counts.size == 1:
        counts = np.full(n, counts[0])
    if counts.size != n:
        raise _C.Error(f"{op}(): {counts.size} repeat counts for {n} entries along the dim; give one per entry "
                       "(or one)")
    if counts.size and counts.min() < 0:
        raise ValueError(f"{op}(): repeat counts must be 0 or more, got {int(counts.min())}")
    return counts


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """repeat_interleave(x, repeats, dim=None, *, output_size=None): each entry along dim taken
    repeats times in a row (x flattened when dim is None); repeats is an int, or an int64 tensor of
    one count per entry (or one count for all). output_size, when given, must be the result's
    length along dim. repeat_interleave(counts) alone is repeat_interleave(arange(len(counts)),
    counts). The result reads x by index_select, so each entry's gradient is the sum over its copies."""
    op = "repeat_interleave"
    _args.tensor(op, input)
    if repeats is None:
        counts = _counts(op, input, input.numel())
        return _args.index_tensor(np.repeat(np.arange(counts.size), counts), input)
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else _args.dim(op, x, dim)
    if x.dim() == 0:
        raise IndexError(f"{op}(): dim {dim} of a 0-d tensor: give dim=None (the tensor as one entry)")
    n = x.shape[d]
    if isinstance(repeats, Tensor):
        counts = _counts(op, repeats, n)
    else:
        r = _args.integer(op, "repeats", repeats)
        if r < 0:
            raise ValueError(f"{op}(): repeats must be 0 or more, got {r}")
        counts = None
    total = int(counts.sum()) if counts is not None else r * n
    if output_size is not None and _args.integer(op, "output_size", output_size) != total:
        raise _C.Error(f"{op}(): output_size {output_size} is not the result's length along dim, {total}")
    if counts is None:
        return _C._repeat_interleave(x, r, d)
    _factories._fits_in_memory(f"hg.{op}", total, 8)
    return _C._index_select(x, d, _args.index_tensor(np.repeat(np.arange(n), counts), x))


FUNCTIONS = ["scatter", "index_fill", "index_add", "take_along_dim", "repeat_interleave"]


def attach():
    """The same calls as Tensor methods (x.scatter(...), x.index_add(...), ...)."""
    for name in FUNCTIONS:
        setattr(Tensor, name, globals()[name])
