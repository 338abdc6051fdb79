"""Shapes, splits and flat reads, as torch spells them: broadcast_shapes, broadcast_tensors,
tensor_split, take, rot90. Each result is a view (expand, narrow, flip, transpose) or a gather of
the input, so the gradient is theirs: an expanded tensor's gradient sums back, a split's piece
sends its slice back, take's entries add into the positions they read.
"""
import numpy as np

from . import _args
from ._args import shape


def _shape_of(op, s):
    if isinstance(s, bool):
        raise TypeError(f"{op}(): a shape must be an int or a sequence of ints, got {s!r}")
    if hasattr(s, "__index__"):
        s = (s,)
    try:
        sizes = tuple(_args.integer(op, "a size", v) for v in s)
    except TypeError:
        raise TypeError(f"{op}(): a shape must be an int or a sequence of ints, got {s!r}") from None
    if any(v < 0 for v in sizes):
        raise ValueError(f"{op}(): sizes must be 0 or more, got {sizes}")
    return sizes


def broadcast_shapes(*shapes):
    """broadcast_shapes(*shapes): the shape the given shapes (each a sequence of ints, or an int
    for a 1-d shape) broadcast to — sizes aligned from the right, each pair equal or one of them
    1 — as a tuple; the tensors are not made."""
    hg = _args.hg()
    shapes = [_shape_of("broadcast_shapes", s) for s in shapes]
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for k, s in enumerate(shapes):
        for i, size in enumerate(s, start=rank - len(s)):
            if size != out[i] and out[i] != 1 and size != 1:
                raise hg.Error(f"broadcast_shapes(): shape {k}, {s}, does not broadcast with "
                               f"{tuple(shapes[j] for j in range(k))}: size {size} against {out[i]} at dim "
                               f"{i - rank} (sizes must match or be 1, aligned from the right)")
            out[i] = size if out[i] == 1 else out[i]
    return tuple(out)


def broadcast_tensors(*tensors):
    """broadcast_tensors(*tensors): the tensors expanded to their common shape (views; the
    gradient of each sums back over the dims it was expanded along)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for k, t in enumerate(tensors):
        _args.tensor("broadcast_tensors", t, f"tensor {k}")
    try:
        target = broadcast_shapes(*(shape(t) for t in tensors))
    except _args.hg().Error:
        raise _args.hg().Error(f"broadcast_tensors(): shapes {[shape(t) for t in tensors]} do not broadcast to one "
                               "shape (sizes must match or be 1, aligned from the right)") from None
    return tuple(t if shape(t) == target else t.expand(*target) for t in tensors)


MAX_PIECES = 2**20  # sections past the dim's size give empty pieces; more than this many is refused


def _split_points(op, indices_or_sections, n):
    """The (start, stop) of each piece of a dim of size n."""
    hg = _args.hg()
    spec = indices_or_sections
    if isinstance(spec, hg.Tensor):
        if spec.dtype != hg.int64 or spec.dim() > 1:
            raise TypeError(f"{op}(): a tensor of indices or sections must be int64 and 0-d or 1-d, got "
                            f"{_args.dtype_name(spec.dtype)} "
                            f"{shape(spec)}")
        spec = spec.item() if spec.dim() == 0 else spec.tolist()
    if isinstance(spec, (list, tuple)):
        cuts = [_args.integer(op, "an index", i) for i in spec]
        bounds = [0, *cuts, n]
        return [slice(a, b).indices(n)[:2] for a, b in zip(bounds[:-1], bounds[1:])]
    sections = _args.integer(op, "sections", spec)
    if sections <= 0:
        raise ValueError(f"{op}(): the number of sections must be 1 or more, got {sections}")
    if sections > max(n, MAX_PIECES):  # every piece past the n-th is empty: refuse before making them
        raise ValueError(f"{op}(): {sections} sections of a dim of size {n} would make {sections} views, all but {n} "
                         f"of them empty; give at most {max(n, MAX_PIECES)} sections")
    size, extra = divmod(n, sections)
    starts = [k * size + min(k, extra) for k in range(sections + 1)]
    return list(zip(starts[:-1], starts[1:]))


def tensor_split(input, indices_or_sections, dim=0):
    """tensor_split(input, indices_or_sections, dim=0): input cut along dim into views. An int
    (or 0-d int64 tensor) s gives s pieces, the first n % s of them one longer; a list (or 1-d
    int64 tensor) of indices cuts before each, read as Python slices are (negative from the end,
    past the end empty). More sections than the dim's size give empty pieces at the end; more
    than max(size, 2**20) sections is refused (a ValueError) before any is made."""
    op = "tensor_split"
    _args.tensor(op, input)
    if input.dim() == 0:
        raise _args.hg().Error(f"{op}(): input must have at least one dim, got a 0-d tensor")
    d = _args.dim(op, input, dim)
    return tuple(input.narrow(d, start, max(stop - start, 0))
                 for start, stop in _split_points(op, indices_or_sections, input.shape[d]))


def take(input, index):
    """take(input, index): input's entries at index (int64, any shape) as if input were flattened
    (row-major); negative positions count from the end. The result has index's shape; the
    gradient adds into the entries read."""
    hg = _args.hg()
    _args.tensor("take", input), _args.tensor("take", index, "index")
    if index.dtype != hg.int64:
        raise TypeError(f"take(): index must be an int64 tensor, got {_args.dtype_name(index.dtype)}")
    n = input.numel()
    positions = _args.host(index)
    if positions.size and (positions.min() < -n or positions.max() >= n):
        bad = positions[(positions < -n) | (positions >= n)].flat[0]
        raise IndexError(f"take(): index {bad} is out of range for a tensor of {n} entries (shape {shape(input)}); "
                         f"accepted: {-n} to {n - 1}")
    flat = input.reshape(-1)
    wrapped = _args.index_tensor(np.where(positions < 0, positions + n, positions).reshape(-1), input)
    return flat.gather(0, wrapped).reshape(*shape(index))


def rot90(input, k=1, dims=(0, 1)):
    """rot90(input, k=1, dims=(0, 1)): input turned by k quarter turns in the plane of dims, from
    the first dim's direction towards the second's (negative k turns back): k = 1 flips dims[1]
    then swaps the two, as PyTorch's."""
    hg = _args.hg()
    op = "rot90"
    _args.tensor(op, input)
    k = _args.integer(op, "k", k)
    if not isinstance(dims, (list, tuple)) or len(dims) != 2:
        raise hg.Error(f"{op}(): dims must be two dims, got {dims!r}")
    if input.dim() < 2:
        raise hg.Error(f"{op}(): input must have at least two dims, got shape {shape(input)}")
    a, b = (_args.dim(op, input, d) for d in dims)
    if a == b:
        raise hg.Error(f"{op}(): the two dims must differ, got {tuple(dims)}")
    turns = k % 4
    if turns == 1:
        return input.flip(b).transpose(a, b)
    if turns == 2:
        return input.flip(a, b)
    if turns == 3:
        return input.flip(a).transpose(a, b)
    return input.clone()


FUNCTIONS = ["tensor_split", "take", "rot90"]


def attach():
    """x.tensor_split(...), x.take(...), x.rot90(...) as Tensor methods (broadcast_shapes and
    broadcast_tensors are functions only, as in PyTorch)."""
    from ._C import Tensor
    for name in FUNCTIONS:
        setattr(Tensor, name, globals()[name])
