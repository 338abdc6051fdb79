"""Searching sorted values and finding the distinct ones, as torch spells them: searchsorted,
bucketize, unique, unique_consecutive. Their results are positions and counts (int64) or values
picked on the host: none of them is differentiable, and their results never require grad.

searchsorted runs PyTorch's own binary search (the first position whose value is not below the
query, or not at or below it for right=True), vectorized over the queries with NumPy, so that NaN
and unsorted input give PyTorch's answers too.
"""
import numpy as np

from . import _args
from ._args import shape


def _common(seq, values):
    """The arrays compared in PyTorch's promoted dtype (float64 over float32 over int64)."""
    kinds = [a.dtype for a in (seq, values)]
    if all(k.kind in "iu" for k in kinds):
        return seq.astype(np.int64), values.astype(np.int64)
    wide = np.float64 if np.float64 in kinds else np.float32
    return seq.astype(wide), values.astype(wide)


def _host_dtype(seq, number):
    hg = _args.hg()
    if seq.dtype in _args.FLOATS:
        return np.float32 if seq.dtype == hg.float32 else np.float64
    return np.int64 if isinstance(number, (bool, int, np.integer)) else np.float32


def _binary_search(seq, values, right):
    """For each row r of seq (R, n) and each value of values (R, m): PyTorch's lower bound
    (right=False: the first i with not seq[i] < v, written !(seq[i] >= v) → go right) or upper
    bound (right=True: !(seq[i] > v) → go right)."""
    rows, n = seq.shape
    start = np.zeros(values.shape, dtype=np.int64)
    end = np.full(values.shape, n, dtype=np.int64)
    row = np.arange(rows)[:, None]
    while True:
        active = start < end
        if not active.any():
            return start
        mid = start + ((end - start) >> 1)
        probe = seq[row, np.minimum(mid, max(n - 1, 0))]
        with np.errstate(invalid="ignore"):
            go_right = ~(probe > values) if right else ~(probe >= values)
        start = np.where(active & go_right, mid + 1, start)
        end = np.where(active & ~go_right, mid, end)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    for each value of input, the position in sorted_sequence's last dim where it would go to keep
    it sorted: the first position i with sorted_sequence[i] >= value (right=False, side='left'),
    or > value (right=True, side='right'). sorted_sequence is 1-d, or has input's leading dims;
    sorter (int64, sorted_sequence's shape) names the order when sorted_sequence is unsorted;
    input may be a number (1-d sorted_sequence only). The result is int64, input's shape; with
    out_int32=True too (handgrad has no int32; the values are the same). Not differentiable."""
    hg = _args.hg()
    op = "searchsorted"
    _args.tensor(op, sorted_sequence, "sorted_sequence")
    if side not in (None, "left", "right"):
        raise ValueError(f"{op}(): side must be 'left' or 'right', got {side!r}")
    _args.boolean(op, "right", right), _args.boolean(op, "out_int32", out_int32)
    if side == "left" and right:
        raise ValueError(f"{op}(): side='left' and right=True ask for opposite sides; give one of them")
    right = right or side == "right"
    if sorted_sequence.dim() == 0:
        raise hg.Error(f"{op}(): sorted_sequence must have at least one dim, got a 0-d tensor")
    scalar = not isinstance(input, hg.Tensor)
    if scalar:
        _args.number(op, "input", input)
        if sorted_sequence.dim() != 1:
            raise hg.Error(f"{op}(): input may be a number only with a 1-d sorted_sequence, got shape "
                           f"{shape(sorted_sequence)}")
        like = sorted_sequence  # a number is compared in sorted_sequence's dtype (float32 for an integer
        values = np.asarray(input, dtype=_host_dtype(sorted_sequence, input))  # one and a float number)
    else:
        values, like = _args.host(input), input
        if sorted_sequence.dim() > 1 and (input.dim() != sorted_sequence.dim()
                                          or shape(input)[:-1] != shape(sorted_sequence)[:-1]):
            raise hg.Error(f"{op}(): sorted_sequence {shape(sorted_sequence)} must be 1-d or share all but the last "
                           f"dim with input {shape(input)}")
    seq = _args.host(sorted_sequence)
    for name, a in (("sorted_sequence", seq), ("input", values)):
        if a.dtype == np.bool_:
            raise TypeError(f"{op}(): {name} is a bool tensor; convert with .long() or .double() first")
    if sorter is not None:
        _args.tensor(op, sorter, "sorter")
        if sorter.dtype != hg.int64 or shape(sorter) != shape(sorted_sequence):
            raise hg.Error(f"{op}(): sorter must be int64 of sorted_sequence's shape {shape(sorted_sequence)}, got "
                           f"{_args.dtype_name(sorter.dtype)} {shape(sorter)}")
        order = _args.host(sorter)
        if order.size and (order.min() < 0 or order.max() >= seq.shape[-1]):
            raise hg.Error(f"{op}(): sorter holds positions outside [0, {seq.shape[-1]}): "
                             f"{order.min()} to {order.max()}")
        seq = np.take_along_axis(seq, order, -1)
    seq, values = _common(seq, values)
    rows, n = int(np.prod(seq.shape[:-1])), seq.shape[-1]
    # one row of queries per row of seq; sizes spelled out, since reshape(-1, 0) of an empty array is ambiguous
    flat_values = values.reshape(rows, values.size // rows if rows else 0)
    out = _binary_search(seq.reshape(rows, n), flat_values, right).reshape(values.shape)
    return _args.index_tensor(out, like)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """bucketize(input, boundaries, *, out_int32=False, right=False): the bucket of each value of
    input (a tensor or a number) among the 1-d sorted boundaries: i with boundaries[i-1] < v <=
    boundaries[i] (right=False) or boundaries[i-1] <= v < boundaries[i] (right=True), that is
    searchsorted(boundaries, input, right=right). int64 (out_int32 too); not differentiable."""
    _args.tensor("bucketize", boundaries, "boundaries")
    if boundaries.dim() != 1:
        raise _args.hg().Error(f"bucketize(): boundaries must be 1-d, got shape {shape(boundaries)}")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def _slices(op, input, dim):
    """input as a host array of rows (n, m) whose distinct rows unique finds, and dim wrapped
    (None stays None): dim=None: the flattened entries, one per row; dim=d: the slices along d, each
    flattened to a row. PyTorch refuses a dim of a 0-d tensor, and (along a dim) any empty size but
    the one of dim itself."""
    hg = _args.hg()
    a = _args.host(input)
    if dim is None:
        return a.reshape(-1, 1), None
    if input.dim() == 0:
        _args.integer(op, "dim", dim)
        raise IndexError(f"{op}(): dim {dim} is out of range for a 0-d tensor; give dim=None")
    d = _args.dim(op, input, dim)
    empty = [k for k, s in enumerate(a.shape) if s == 0]
    if empty and empty != [d]:
        raise hg.Error(f"{op}(): shape {shape(input)} has a size 0 other than along dim {dim}: its slices are empty "
                       "and cannot be compared; give dim=None, or drop the other empty dims first")
    others = int(np.prod(np.delete(a.shape, d)))  # spelled out: reshape(0, -1) is ambiguous
    return np.moveaxis(a, d, 0).reshape(a.shape[d], others), d


def _distinct(op, input, dim, sort, return_inverse, return_counts):
    """unique and unique_consecutive: the distinct rows of _slices (sorted first when sort), where a
    row starts a new value when any entry differs from the row before (!=: NaN differs from
    everything, -0.0 equals 0.0, the first met is kept)."""
    for name, v in (("return_inverse", return_inverse), ("return_counts", return_counts)):
        _args.boolean(op, name, v)
    rows, d = _slices(op, input, dim)
    n = rows.shape[0]
    # a stable lexicographic sort of the rows (the first column is the most significant; NaN last)
    order = np.lexsort(rows.T[::-1]) if sort and rows.shape[1] else np.arange(n)
    ordered = rows[order]
    with np.errstate(invalid="ignore"):
        starts = np.ones(n, dtype=bool)
        starts[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    if d is None:
        values = ordered[starts].reshape(-1)
    else:
        kept = ordered[starts].reshape((-1,) + tuple(np.delete(shape(input), d)))
        values = np.moveaxis(kept, 0, d)
    out = [_args.from_host(values, input)]
    if return_inverse:
        inverse = np.empty(n, dtype=np.int64)
        inverse[order] = np.cumsum(starts) - 1
        out.append(_args.index_tensor(inverse.reshape(shape(input)) if d is None else inverse, input))
    if return_counts:
        out.append(_args.index_tensor(np.diff(np.append(np.flatnonzero(starts), n)), input))
    return out[0] if len(out) == 1 else tuple(out)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002 (torch's name)
    """unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None): the
    distinct values of input, flattened, in ascending order (NaN last, each NaN distinct, -0.0 and
    0.0 one value, the first met kept); with return_inverse, each entry's position among them
    (input's shape); with return_counts, how often each occurs. sorted=False gives the ascending
    order too, as PyTorch's CPU does. With dim=d: the distinct slices along d (input's shape with
    dim d shortened), in lexicographic order; the inverse then numbers each slice (shape
    (input.shape[d],)) and the counts count slices; a slice holding a NaN differs from every
    other. Where several NaN are met, each keeps its order of appearance (PyTorch's sort among
    NaN is not stable, so it may order them otherwise). Not differentiable: the values are read on
    the host and do not require grad."""
    op = "unique"
    _args.tensor(op, input)
    _args.boolean(op, "sorted", sorted)
    return _distinct(op, input, dim, True, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """unique_consecutive(input, return_inverse=False, return_counts=False, dim=None): input
    (flattened, or its slices along dim) with every run of equal consecutive values kept once, in
    their order; with return_inverse, the position of each entry's run (input's shape; with dim,
    one per slice); with return_counts, each run's length. NaN differs from everything, -0.0 and
    0.0 are equal (the first of a run is kept). Not differentiable: the values are read on the host
    and do not require grad."""
    op = "unique_consecutive"
    _args.tensor(op, input)
    return _distinct(op, input, dim, False, return_inverse, return_counts)


FUNCTIONS = ["unique", "unique_consecutive"]


def attach():
    """x.unique(...) and x.unique_consecutive(...) as Tensor methods (torch has no
    Tensor.searchsorted or Tensor.bucketize)."""
    from ._C import Tensor
    for name in FUNCTIONS:
        setattr(Tensor, name, globals()[name])
