"""Joins and the shapes around them, as torch spells them: cat (with PyTorch's promotion and its
legacy rule for 1-d empty tensors), hstack, vstack, dstack, column_stack, atleast_1d/2d/3d (of one
tensor or several), broadcast_to, unbind, meshgrid, cartesian_prod. Each is the library's cat or
a view (reshape, unsqueeze, expand, select), so the gradient is theirs.
"""
from . import _C, _args
from ._C import Tensor


def _tensors(op, xs):
    """A sequence of tensors (or tensors given one by one), each checked."""
    if len(xs) == 1 and isinstance(xs[0], (list, tuple)):
        xs = tuple(xs[0])
    if not xs:
        raise TypeError(f"{op}(): give at least one tensor")
    return tuple(_args.tensor(op, x, f"tensor {k}") for k, x in enumerate(xs))


def _skipped(t):
    """PyTorch's legacy rule: a 1-d tensor of size 0 takes no part in cat, whatever its shape."""
    return t.dim() == 1 and t.shape[0] == 0


def cat(tensors, dim=0):
    """cat(tensors, dim=0): the tensors joined along dim; every other size must match. The result
    has the tensors' promoted dtype (bool < int64 < float32 < float64, as PyTorch's). As in
    PyTorch, a 1-d empty tensor (shape (0,)) is left out whatever the others' shapes (it still
    counts for the dtype); a 0-d tensor cannot be joined."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"cat(): tensors must be a list or tuple of handgrad Tensors, not {type(tensors).__name__}")
    tensors = _tensors("cat", (tuple(tensors),)) if tensors else ()
    if not tensors:
        raise ValueError("cat(): expected a non-empty list of tensors")
    d = _args.integer("cat", "dim", dim)
    dtype = _args.promoted(*tensors)
    kept = [t for t in tensors if not _skipped(t)]
    for k, t in enumerate(tensors):
        if t.dim() == 0:
            raise _C.Error(f"cat(): tensor {k} is 0-d and cannot be joined; make it 1-d with .reshape(1) "
                           "(or join with hg.stack)")
    cast = [t if t.dtype == dtype else t.to(dtype) for t in (kept or tensors)]
    if not kept:  # only (0,) tensors: their join is (0,), whatever dim
        return _C.cat(cast, 0)
    out = _C.cat(cast, d)  # the library wraps and checks dim against the tensors it joins
    left_out = [t.to(dtype) for t in tensors if _skipped(t) and t.requires_grad]
    if left_out and _C.is_grad_enabled():  # in the graph too (an empty gradient, as PyTorch's), values unchanged
        out = _C.cat([out.reshape(-1), *left_out], 0).reshape(*out.shape)
    return out


def atleast_1d(*tensors):
    """atleast_1d(x): x, or x as (1,) when 0-d (a view). Given several tensors (or a list), the
    tuple of each one's atleast_1d."""
    return _each("atleast_1d", tensors, lambda x: x.reshape(1) if x.dim() == 0 else x)


def atleast_2d(*tensors):
    """atleast_2d(x): x with 1s in front up to two dims ((1, 1) from 0-d, (1, n) from (n,)).
    Given several tensors (or a list), the tuple of each one's."""
    return _each("atleast_2d", tensors,
                 lambda x: x.reshape(1, 1) if x.dim() == 0 else x.unsqueeze(0) if x.dim() == 1 else x)


def _3d(x):
    if x.dim() == 0:
        return x.reshape(1, 1, 1)
    if x.dim() == 1:
        return x.reshape(1, -1, 1)
    return x.unsqueeze(-1) if x.dim() == 2 else x


def atleast_3d(*tensors):
    """atleast_3d(x): (1, 1, 1) from 0-d, (1, n, 1) from (n,), (m, n, 1) from (m, n), x itself
    from 3 dims or more (NumPy's rule). Given several tensors (or a list), the tuple of each one's."""
    return _each("atleast_3d", tensors, _3d)


def _each(op, tensors, one):
    if len(tensors) == 1 and isinstance(tensors[0], Tensor):
        return one(tensors[0])
    return tuple(one(t) for t in _tensors(op, tensors))


def hstack(tensors):
    """hstack(tensors): joined along dim 1 (dim 0 for 1-d tensors), each atleast_1d first."""
    ts = atleast_1d(_tensors("hstack", (tensors,)))
    return cat(ts, 0 if ts[0].dim() == 1 else 1)


def vstack(tensors):
    """vstack(tensors): joined along dim 0, each atleast_2d first."""
    return cat(atleast_2d(_tensors("vstack", (tensors,))), 0)


def dstack(tensors):
    """dstack(tensors): joined along dim 2, each atleast_3d first."""
    return cat(atleast_3d(_tensors("dstack", (tensors,))), 2)


def column_stack(tensors):
    """column_stack(tensors): 0-d and 1-d tensors as columns (n, 1), joined along dim 1."""
    return cat([t.reshape(-1, 1) if t.dim() <= 1 else t for t in _tensors("column_stack", (tensors,))], 1)


def broadcast_to(input, size):
    """broadcast_to(x, size): x expanded to size (a view; -1 keeps a size)."""
    return _args.tensor("broadcast_to", input).expand(*size)


def unbind(input, dim=0):
    """unbind(x, dim=0): the tuple of x's slices along dim (each a view)."""
    _args.tensor("unbind", input)
    d = _args.dim("unbind", input, dim)
    return tuple(input.select(d, i) for i in range(input.shape[d]))


def meshgrid(*tensors, indexing="ij"):
    """meshgrid(a, b, ..., indexing='ij' | 'xy'): each 1-d tensor expanded along the others."""
    tensors = _tensors("meshgrid", tensors)
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid(): indexing must be 'ij' or 'xy', not {indexing!r}")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    sizes = [t.numel() for t in ts]
    grids = []
    for i, t in enumerate(ts):
        shape = [1] * len(ts)
        shape[i] = -1
        grids.append(t.reshape(*shape).expand(*sizes))
    if swap:  # 'xy': the grids of (b, a, ...) in 'ij', handed back as (a, b, ...)
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    """cartesian_prod(a, b, ...): every combination of the 1-d tensors' entries, one per row."""
    grids = meshgrid(*_tensors("cartesian_prod", tensors), indexing="ij")
    if len(grids) == 1:
        return grids[0]
    return _C._stack([g.reshape(-1) for g in grids], 1)


FUNCTIONS = ["cat", "hstack", "vstack", "dstack", "column_stack", "atleast_1d", "atleast_2d", "atleast_3d",
             "broadcast_to", "unbind", "meshgrid", "cartesian_prod"]


def attach():
    """x.broadcast_to(size), x.unbind(dim) as Tensor methods."""
    Tensor.broadcast_to = broadcast_to
    Tensor.unbind = unbind
