"""Order statistics and the NaN-skipping reductions, as torch spells them: nansum, nanmean, median,
nanmedian, quantile, nanquantile.

The positions are found on the host (a stable sort, NaN last, PyTorch's ranks); the values are read
from the input with recorded ops (gather, index_select, amax, mean, where, mul, add), so the
gradient flows to the selected and interpolated entries by the chain rule and nothing here has a
backward of its own. A whole-tensor median shares its gradient evenly among the entries equal to
it, as PyTorch's does; a median along a dim sends it to the entry its index names.
"""
import functools

import numpy as np

from . import _args
from ._args import shape

_Median = _args.result("median")
_NanMedian = _args.result("nanmedian")
_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _dims(op, x, dim):
    if dim is None:
        return None
    return tuple(_args.dim(op, x, d) for d in (dim if isinstance(dim, (list, tuple)) else (dim,)))


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """nansum(input, dim=None, keepdim=False, *, dtype=None): the sum over dim (every entry when
    None) with NaN counted as zero; NaN entries get a zero gradient."""
    hg = _args.hg()
    _args.tensor("nansum", input)
    dims = _dims("nansum", input, dim)
    x = input.to(dtype) if dtype is not None else input
    if x.dtype in _args.FLOATS:
        x = hg.where(hg.isnan(x), 0.0, x)
    return x.sum(dims, _args.boolean("nansum", "keepdim", keepdim))


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """nanmean(input, dim=None, keepdim=False, *, dtype=None): the mean of the entries that are not
    NaN over dim (every entry when None); NaN where all are NaN. Floating inputs only, as in
    PyTorch."""
    hg = _args.hg()
    _args.floating("nanmean", _args.tensor("nanmean", input))
    dims = _dims("nanmean", input, dim)
    x = input.to(dtype) if dtype is not None else input
    keepdim = _args.boolean("nanmean", "keepdim", keepdim)
    count = hg.logical_not(hg.isnan(x)).sum(dims, keepdim).to(x.dtype)
    return nansum(x, dim, keepdim) / count


def _nan_mask(a):
    return np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, dtype=bool)


def _check_sortable(op, input):
    _args.tensor(op, input)
    if input.dtype == _args.hg().bool:
        raise TypeError(f"{op}(): bool tensors have no median; convert with .long() or .double() first")


def _median_all(op, input, keepdim, ignore_nan):
    """The lower median of every entry (NaN if any, for median); the gradient shared evenly by the
    entries equal to it, as PyTorch's."""
    hg = _args.hg()
    if keepdim is not False:
        raise TypeError(f"{op}(): keepdim goes with a dim: {op}(input, dim, keepdim=True)")
    flat = input.reshape(-1)
    a = _args.host(flat)
    if a.size == 0:
        if input.dtype not in _args.FLOATS:
            raise hg.Error(f"{op}(): an empty {_args.dtype_name(input.dtype)} tensor has no median (and no NaN to "
                           "say so)")
        return hg.full((), float("nan"), dtype=input.dtype, device=input.device)
    nan = _nan_mask(a)
    if nan.any() and (nan.all() or not ignore_nan):
        return hg.index_select(flat, 0, _args.index_tensor(np.flatnonzero(nan), flat)).mean()
    valid = np.sort(a[~nan], kind="stable")
    m = valid[(valid.size - 1) // 2]
    picked = hg.index_select(flat, 0, _args.index_tensor(np.flatnonzero(a == m), flat))
    return picked.amax(0) if input.dtype in _args.FLOATS else picked[0]


@functools.lru_cache(maxsize=256)
def _index_in_all_nan(n):
    """The index nanmedian reports for a slice of n NaN: PyTorch's CPU kernel partially sorts the
    positions with std::nth_element (libstdc++'s introselect) for position 0, and NaN compare
    equivalent, so the answer is wherever its partitions leave the first position's entry: each
    round swaps the first and middle entries, then reverses the rest pairwise from both ends, and
    keeps the part before the cut, until 3 or fewer remain (insertion sort moves none)."""
    positions, first, last = list(range(n)), 0, n
    while last - first > 3:
        mid = first + (last - first) // 2
        positions[first], positions[mid] = positions[mid], positions[first]
        low, high = first + 1, last
        while True:
            high -= 1
            if not low < high:
                break
            positions[low], positions[high] = positions[high], positions[low]
            low += 1
        last = low
    return positions[0]


def _median_dim(op, input, dim, keepdim, ignore_nan):
    """(values, indices) along dim: the lower median, the first NaN for median where a slice has
    one, PyTorch's index for ties (the stable order's)."""
    hg = _args.hg()
    d = _args.dim(op, input, dim)
    keepdim = _args.boolean(op, "keepdim", keepdim)
    out = _Median if op == "median" else _NanMedian
    if input.dim() == 0:
        return out(input.clone(), hg.zeros((), dtype=hg.int64, device=input.device))
    n = input.shape[d]
    if n == 0:
        raise IndexError(f"{op}(): dim {dim} of the tensor of shape {shape(input)} is empty: there is no median")
    a = np.moveaxis(_args.host(input), d, -1)
    order = np.argsort(a, axis=-1, kind="stable")  # NaN sorts last
    nans = _nan_mask(a).sum(-1)
    if ignore_nan:
        k = np.maximum(n - nans - 1, 0) // 2
    else:
        k = np.where(nans > 0, n - nans, (n - 1) // 2)
    positions = np.take_along_axis(order, k[..., None], -1)
    if ignore_nan:
        positions[nans == n] = _index_in_all_nan(n)
    indices = _args.index_tensor(np.moveaxis(positions, -1, d), input)
    values = input.gather(d, indices)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return out(values, indices)


def median(input, dim=None, keepdim=False):
    """median(input): the lower of the two middle entries (NaN if any entry is NaN), the gradient
    shared evenly by the entries equal to it. median(input, dim, keepdim=False) → (values,
    indices) along dim, the first NaN where a slice has one, the gradient to the entry indices
    names."""
    _check_sortable("median", input)
    if dim is None:
        return _median_all("median", input, keepdim, ignore_nan=False)
    return _median_dim("median", input, dim, keepdim, ignore_nan=False)


def nanmedian(input, dim=None, keepdim=False):
    """nanmedian(input[, dim, keepdim]): median of the entries that are not NaN (NaN where all
    are), with median's forms, indices and gradients; a slice of NaN only reports the index
    PyTorch's CPU kernel does (whichever NaN its partial sort leaves first)."""
    _check_sortable("nanmedian", input)
    if dim is None:
        return _median_all("nanmedian", input, keepdim, ignore_nan=True)
    return _median_dim("nanmedian", input, dim, keepdim, ignore_nan=True)


def _quantiles(op, input, q):
    """q as a NumPy array in input's dtype (0-d or 1-d), each in [0, 1]."""
    hg = _args.hg()
    npdt = np.float32 if input.dtype == hg.float32 else np.float64
    if isinstance(q, hg.Tensor):
        if q.dim() > 1:
            raise hg.Error(f"{op}(): q must be a number, a 0-d or a 1-d tensor, got shape {shape(q)}")
        if q.dtype != input.dtype:
            raise TypeError(f"{op}(): q ({_args.dtype_name(q.dtype)}) must have the input's dtype "
                            f"({_args.dtype_name(input.dtype)})")
        qs = _args.host(q).astype(npdt)
    else:
        qs = np.asarray(_args.number(op, "q", q), dtype=npdt)
    if not np.all((qs >= 0) & (qs <= 1)):
        raise hg.Error(f"{op}(): q must be in [0, 1], got {qs.tolist()}")
    return qs, npdt


def _lerp(below, above, w, small):
    """PyTorch's lerp, two-sided for accuracy: below + w·(above − below) where |w| < 0.5 (small),
    else above − (above − below)·(1 − w)."""
    gap = above - below
    return _args.hg().where(small, below + w * gap, above - gap * (1 - w))


def _weights(q, qs, npdt, weights, scale, like):
    """The interpolation weights: their values from the host's float64 ranks, and for a q tensor
    the derivative of q·scale (scale is n − 1, or the count − 1 of entries that are not NaN, and 0
    where PyTorch masks the rank), as PyTorch's weights carry (reverse and forward mode)."""
    w = _args.from_host(weights.astype(npdt), like)
    if isinstance(q, _args.hg().Tensor):
        recorded = q.reshape(*qs.shape, *(1,) * scale.ndim) * _args.from_host(scale.astype(npdt), like)
        w = w + (recorded - recorded.detach())  # the value stays the host's; the gradient is q's
    return w


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):
    hg = _args.hg()
    _args.floating(op, _args.tensor(op, input))
    if interpolation not in _MODES:
        raise ValueError(f"{op}(): interpolation must be one of {', '.join(map(repr, _MODES))}, got {interpolation!r}")
    keepdim = _args.boolean(op, "keepdim", keepdim)
    qs, npdt = _quantiles(op, input, q)
    if input.numel() == 0:
        raise hg.Error(f"{op}(): input must be non-empty, got shape {shape(input)}")
    if dim is None:
        d, x = None, input.reshape(-1)
    else:
        d = _args.dim(op, input, dim)
        x = input.movedim(d, -1) if input.dim() else input.reshape(1)
    a = _args.host(x)  # rows S, each of n entries
    n, rows = a.shape[-1], a.shape[:-1]
    nan = _nan_mask(a)
    # PyTorch's ranks, in float64 whatever the dtype (as its CPU kernel, so that a float32 q near a
    # half rounds as there): q·(n − 1), or q·(count − 1) over the entries that are not NaN
    q64 = qs.astype(np.float64).reshape(qs.shape + (1,) * a.ndim)
    if ignore_nan:  # a row of NaN reads its first entry, NaN
        last = n - nan.sum(-1, keepdims=True) - 1
        scale, ranks = np.maximum(last, 0), np.maximum(q64 * last, 0.0)
    else:  # a row with a NaN reads its last entry, which is NaN
        scale = np.where(nan.any(-1, keepdims=True), 0, n - 1)
        ranks = np.where(scale == 0, float(n - 1), q64 * (n - 1))
    ranks = np.broadcast_to(ranks, qs.shape + rows + (1,))
    ranks = {"lower": np.floor, "higher": np.ceil, "nearest": np.round}.get(interpolation, np.asarray)(ranks)
    order = np.broadcast_to(np.argsort(a, axis=-1, kind="stable"), qs.shape + a.shape)
    source = x.reshape(*(1,) * qs.ndim, *a.shape).expand(*qs.shape, *a.shape) if qs.ndim else x

    def read(rank):  # the sorted entry at each rank, read from x itself
        return source.gather(-1, _args.index_tensor(np.take_along_axis(order, rank.astype(np.int64), -1), x))
    out = read(ranks)
    if interpolation in ("linear", "midpoint"):
        if interpolation == "midpoint":
            weights = _args.from_host(np.full(ranks.shape, 0.5, dtype=npdt), x)
            small = np.zeros(ranks.shape, dtype=bool)
        else:
            fractions = (ranks - np.floor(ranks)).astype(npdt)
            weights = _weights(q, qs, npdt, fractions, scale, x)
            small = np.abs(fractions) < 0.5
        out = _lerp(out, read(np.ceil(ranks)), weights, _args.from_host(small, x))
    out = out.squeeze(-1)
    if keepdim and input.dim():
        out = out.reshape(*qs.shape, *(1,) * input.dim()) if d is None else out.unsqueeze(qs.ndim + d)
    return out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile(input, q, dim=None, keepdim=False, *, interpolation='linear'): the q-th quantiles
    of input along dim (of every entry when None); q a number or a 0-d or 1-d tensor of input's
    dtype in [0, 1] (1-d: the quantiles along a new first dim). Between two sorted entries,
    'linear' interpolates, 'lower'/'higher' take one, 'nearest' the nearer (half to even),
    'midpoint' their mean. A slice with a NaN gives NaN. The gradient flows to the one or two
    entries read, and for 'linear' to a q tensor that requires grad, as PyTorch's. Floating
    inputs only."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """nanquantile(input, q, dim=None, keepdim=False, *, interpolation='linear'): quantile over
    the entries that are not NaN (NaN where all are)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


FUNCTIONS = ["nansum", "nanmean", "median", "nanmedian", "quantile", "nanquantile"]


def attach():
    """The same calls as Tensor methods: x.median(0), x.quantile(0.9, dim=1), x.nansum(), ..."""
    from ._C import Tensor
    for name in FUNCTIONS:
        setattr(Tensor, name, globals()[name])
