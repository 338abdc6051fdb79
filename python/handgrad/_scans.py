"""Running reductions and differences along a dim, as torch spells them: cummax, cummin,
logcumsumexp, diff.

cummax and cummin find their indices on the host (PyTorch's rule: a tie or a NaN moves the index
to the newer entry, and once a NaN is met it stays) and read the values with gather, so the
gradient goes to the entry each index names. logcumsumexp is logsumexp over the entries up to each
position, in blocks whose running total is carried from block to block: each logsumexp subtracts
its own maximum, the running one, so nothing overflows or underflows, and the gradient is the
softmax of the entries so far. diff is narrow and sub (xor for bool). No backward of their own.
"""
import math

import numpy as np

from . import _args
from ._args import shape

_CumMax = _args.result("cummax")
_CumMin = _args.result("cummin")
_BLOCK = 64  # logcumsumexp's block: n·_BLOCK entries of work per row, n / _BLOCK steps on the tape


def _running_extreme(op, input, dim, larger):
    hg = _args.hg()
    _args.tensor(op, input)
    d = _args.dim(op, input, dim)
    result = _CumMax if larger else _CumMin
    if input.dim() == 0:
        return result(input.clone(), hg.zeros((), dtype=hg.int64, device=input.device))
    a = np.moveaxis(_args.host(input), d, -1)
    if a.shape[-1] == 0:
        return result(input.clone(), hg.zeros(shape(input), dtype=hg.int64, device=input.device))
    running = (np.maximum if larger else np.minimum).accumulate(a, axis=-1)  # NaN stays once met
    with np.errstate(invalid="ignore"):
        # where the entry is the running extreme, it is (or ties, or is a NaN) the newest: take it
        takes = a == running
        if a.dtype.kind == "f":
            takes |= np.isnan(a) & np.isnan(running)
    positions = np.where(takes, np.arange(a.shape[-1]), -1)
    indices = _args.index_tensor(np.moveaxis(np.maximum.accumulate(positions, axis=-1), -1, d), input)
    return result(input.gather(d, indices), indices)


def cummax(input, dim):
    """cummax(input, dim) → (values, indices): the largest entry so far along dim and where it is
    (the newest of equal ones; a NaN, once met, is the maximum from then on). The gradient goes
    to the entry each index names."""
    return _running_extreme("cummax", input, dim, larger=True)


def cummin(input, dim):
    """cummin(input, dim) → (values, indices): the smallest entry so far along dim and where it
    is, with cummax's rules for ties and NaN."""
    return _running_extreme("cummin", input, dim, larger=False)


def logcumsumexp(input, dim):
    """logcumsumexp(input, dim): log Σ_{j ≤ i} exp(input_j) along dim, without overflow or
    underflow (each position's logsumexp subtracts the running maximum); the gradient of
    position i is the softmax of the entries up to i. Floating inputs only."""
    hg = _args.hg()
    op = "logcumsumexp"
    _args.floating(op, _args.tensor(op, input))
    d = _args.dim(op, input, dim)
    if input.dim() == 0:
        return input.clone()
    x = input.movedim(d, -1)
    n, rows = x.shape[-1], shape(x)[:-1]
    if n == 0:
        return input.clone()
    blocks, carry = [], None
    for start in range(0, n, _BLOCK):
        b = min(_BLOCK, n - start)
        block = x.narrow(-1, start, b)
        # row i of (b, b): the block's entries up to i, -inf after
        upto = _args.from_host(np.tril(np.ones((b, b), dtype=bool)), input)
        table = hg.where(upto, block.unsqueeze(-2).expand(*rows, b, b), -math.inf)
        if carry is not None:  # the log-sum of everything before the block, a first column
            table = hg.cat([carry.unsqueeze(-1).unsqueeze(-1).expand(*rows, b, 1), table], -1)
        sums = hg.logsumexp(table, -1)
        carry = sums.select(-1, b - 1)
        blocks.append(sums)
    return hg.cat(blocks, -1).movedim(-1, d)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """diff(input, n=1, dim=-1, prepend=None, append=None): the n-th forward difference along dim,
    out[i] = x[i+1] − x[i] applied n times (logical xor for bool), after prepend and append
    (tensors of input's rank, its sizes except along dim) are joined on either side. Each
    difference shortens dim by one; past its length the result is empty. n=0 gives a copy of
    input, as PyTorch: prepend and append are checked but not joined."""
    hg = _args.hg()
    op = "diff"
    _args.tensor(op, input)
    n = _args.integer(op, "n", n)
    if input.dim() == 0:
        raise hg.Error(f"{op}(): input must have at least one dim, got a 0-d tensor")
    if n < 0:
        raise ValueError(f"{op}(): n (the order) must be 0 or more, got {n}")
    if n == 0 and prepend is None and append is None:
        _args.integer(op, "dim", dim)  # PyTorch does not range-check dim here: nothing is taken along it
        return input.clone()
    d = _args.dim(op, input, dim)
    parts = [input]
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is None:
            continue
        _args.tensor(op, extra, name)
        others = [s for k, s in enumerate(shape(input)) if k != d]
        if extra.dim() != input.dim() or [s for k, s in enumerate(shape(extra)) if k != d] != others:
            raise hg.Error(f"{op}(): {name} {shape(extra)} must have input's rank and sizes {shape(input)} except "
                           f"along dim {dim}")
        parts.insert(0 if name == "prepend" else len(parts), extra)
    if n == 0:  # PyTorch checks prepend and append, then returns input as it is
        return input.clone()
    if len(parts) > 1:
        dtype = _args.promoted(*parts)
        x = hg.cat([p.to(dtype) if p.dtype != dtype else p for p in parts], d)
    else:
        x = input
    for _ in range(n):
        length = x.shape[d]
        if length == 0:
            break
        later, earlier = x.narrow(d, 1, length - 1), x.narrow(d, 0, length - 1)
        x = hg.logical_xor(later, earlier) if x.dtype == hg.bool else later - earlier
    return x


FUNCTIONS = ["cummax", "cummin", "logcumsumexp", "diff"]


def attach():
    """The same calls as Tensor methods: x.cummax(0), x.logcumsumexp(-1), x.diff(), ..."""
    from ._C import Tensor
    for name in FUNCTIONS:
        setattr(Tensor, name, globals()[name])
