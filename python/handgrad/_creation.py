"""New tensors, as torch spells them: arange, tril_indices, triu_indices (the positions of a
triangle), and rand_like, randn_like, randint_like (draws of another tensor's shape, from
hg.manual_seed's generator unless one is given, the same numbers as hg.rand, hg.randn, hg.randint
of that shape). Every size is worked out in Python ints and refused when it would not fit, before
anything is made.
"""
import math
import numbers

import numpy as np

from . import _C, _args, _factories, _names
from ._C import Tensor
from ._args import shape


def _bound(name, v):
    """An arange bound: a number (a bool reads as 0 or 1, a 0-d tensor as its number), finite."""
    if isinstance(v, _args.hg().Tensor):
        if v.dim() != 0:
            raise TypeError(f"arange(): {name} must be a number or a 0-d tensor, got a tensor of shape {shape(v)}")
        v = v.item()
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if not isinstance(v, numbers.Real):
        raise TypeError(f"arange(): {name} must be a number, got {v!r}")
    if not math.isfinite(v):
        raise ValueError(f"arange(): {name} must be finite, got {v!r}")
    return int(v) if isinstance(v, numbers.Integral) else float(v)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, layout=None) -> Tensor:
    """arange(end) or arange(start, end, step=1, *, dtype=None, device=None, requires_grad=False):
    start, start + step, ... up to end (excluded); ceil((end − start) / step) numbers. int64 when
    every argument is an integer (a bool is 0 or 1), else float32. As PyTorch's: the step is
    nonzero and points from start towards end (an empty range is fine), and an integer dtype with
    float arguments counts as the floats do but steps by the step truncated, from start
    truncated (arange(-0.9, 2.1, 2.0, dtype=hg.int64) is [0, 2])."""
    hg = _args.hg()
    if end is None:
        start, end = 0, start
    start, end, step = _bound("start", start), _bound("end", end), _bound("step", step)
    if step == 0:
        raise ValueError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange(): the step {step} points away from end {end} (start {start})")
    integral = all(isinstance(v, int) for v in (start, end, step))
    count = -((start - end) // step) if integral else math.ceil((end - start) / step)  # ceil, exact for ints
    dtype = (hg.int64 if integral else _names.get_default_dtype()) if dtype is None else dtype
    _args.known_dtype("hg.arange", dtype)
    if dtype == hg.bool:
        raise TypeError("arange(): dtype must be a number type, not hg.bool (as PyTorch's)")
    if dtype == hg.int64:
        first, stride = int(start), int(step)  # truncated towards 0, as PyTorch's
        if count and not -2**63 <= first + (count - 1) * stride < 2**63:
            raise hg.Error(f"arange(): the values from {start} by {step} leave int64 within {count} steps")
    if count >= 2**62:
        raise hg.Error(f"arange(): {count} numbers from {start} to {end} by {step} are more than a tensor holds")
    _factories._fits_in_memory("hg.arange", count, 8)
    if integral and start == 0 and step == 1:
        out = _C._arange(count, dtype)
    elif dtype == hg.int64:  # (a lone value's step may be past int64: it is never taken)
        out = hg.tensor(first + np.arange(count, dtype=np.int64) * (stride if count > 1 else 0))
    else:  # start + i · step in float64, as PyTorch's kernel, then rounded to dtype
        out = hg.tensor(start + np.arange(count, dtype=np.float64) * step, dtype=dtype)
    out = out if device in (None, "cpu") else out.to(device)
    return out.requires_grad_() if requires_grad else out


def _count_below(row, col, offset):
    """How many positions of a row × col matrix lie on or below the offset diagonal (j ≤ i +
    offset): row i holds min(col, max(0, i + offset + 1)) of them. Python ints, so no size
    overflows: the count is known before anything is made."""
    first = max(0, -offset)  # the first row that holds any: i + offset + 1 ≥ 1
    if first >= row or col == 0:
        return 0
    a, b = first + offset + 1, row + offset  # row i holds min(col, s) for s = i + offset + 1 from a to b
    below = min(b, col)  # s from a to min(b, col) holds s each; the rest col each
    return (below - a + 1) * (a + below) // 2 + (b - below) * col if below >= a else (b - a + 1) * col


def _triangle(op, row, col, offset, dtype, device, lower):
    hg = _args.hg()
    row, col = _args.integer(op, "row", row), _args.integer(op, "col", col)
    offset = _args.integer(op, "offset", offset)
    for name, v in (("row", row), ("col", col)):
        if v < 0:
            raise ValueError(f"{op}(): {name} must be 0 or more, got {v}")
    for name, v in (("row", row), ("col", col), ("offset", offset)):
        if not -2**63 <= v < 2**63:
            raise ValueError(f"{op}(): {name} {v} does not fit in int64 (as PyTorch's arguments)")
    offset = max(-row, min(offset, col))  # past either end every row is full or empty: the same positions
    if dtype != hg.int64:
        raise TypeError(f"{op}(): dtype must be hg.int64, got {dtype!r}")
    # tril: column j ≤ i + offset; triu: j ≥ i + offset, the complement of tril at offset − 1
    count = _count_below(row, col, offset) if lower else row * col - _count_below(row, col, offset - 1)
    if count >= 2**62:
        raise hg.Error(f"{op}(): a {row} × {col} matrix has {count} positions in that triangle, past what an "
                       "int64 tensor can hold; give smaller sizes")
    _factories._fits_in_memory(f"hg.{op}", 2 * count, 8, copies=4)  # the (2, count) result, its rows and columns
    if count == 0:
        out = hg.tensor(np.zeros((2, 0), np.int64))
    else:
        # only the rows that hold a position (each holds one or more, so there are at most count)
        rows = np.arange(max(0, -offset), row) if lower else np.arange(0, min(row, col - offset))
        starts = np.zeros_like(rows) if lower else np.maximum(rows + offset, 0)
        stops = np.minimum(rows + offset + 1, col) if lower else np.full_like(rows, col)
        lengths = stops - starts
        first = np.cumsum(lengths) - lengths  # where each row's run begins in the result
        cols = np.arange(count, dtype=np.int64) - np.repeat(first - starts, lengths)
        out = hg.tensor(np.stack([np.repeat(rows, lengths), cols]).astype(np.int64))
    return out if device in (None, "cpu") else out.to(device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """tril_indices(row, col, offset=0, *, dtype=hg.int64, device='cpu'): the (2, N) int64 row
    and column positions of the lower triangle of a row × col matrix — on and below the offset
    diagonal (positive above the main one) — row by row."""
    return _triangle("tril_indices", row, col, offset, _args.hg().int64 if dtype is None else dtype, device, True)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """triu_indices(row, col, offset=0, *, dtype=hg.int64, device='cpu'): the (2, N) int64 row
    and column positions of the upper triangle of a row × col matrix — on and above the offset
    diagonal — row by row."""
    return _triangle("triu_indices", row, col, offset, _args.hg().int64 if dtype is None else dtype, device, False)


def _like(op, input, dtype, device, floating_only=True):
    _args.tensor(op, input)
    dtype = input.dtype if dtype is None else dtype
    _args.known_dtype(f"hg.{op}", dtype)
    if floating_only and dtype not in _args.FLOATS:
        raise TypeError(f"{op}(): draws are hg.float32 or hg.float64, got {_args.dtype_name(dtype)}; give dtype=")
    return dtype, input.device if device is None else device


def rand_like(input, *, generator=None, dtype=None, device=None, requires_grad=False):
    """rand_like(input, *, generator=None, dtype=None, device=None, requires_grad=False): uniform
    draws in [0, 1) of input's shape, dtype and device unless given: hg.rand(input.shape, ...)."""
    dtype, device = _like("rand_like", input, dtype, device)
    return _args.hg().rand(shape(input), generator=generator, dtype=dtype, device=device, requires_grad=requires_grad)


def randn_like(input, *, generator=None, dtype=None, device=None, requires_grad=False):
    """randn_like(input, *, generator=None, dtype=None, device=None, requires_grad=False): standard
    normal draws of input's shape, dtype and device unless given: hg.randn(input.shape, ...)."""
    hg = _args.hg()
    dtype, device = _like("randn_like", input, dtype, device)
    return hg.randn(shape(input), generator=generator, dtype=dtype, device=device, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """randint_like(input, high) or randint_like(input, low, high, *, generator=None, dtype=None,
    device=None, requires_grad=False): integers uniform in [low, high) of input's shape, in
    input's dtype unless given (a float tensor holds whole numbers): hg.randint's draws."""
    hg = _args.hg()
    op = "randint_like"
    if high is None:
        low, high = 0, low
    dtype, device = _like(op, input, dtype, device, floating_only=False)
    if dtype == hg.bool:
        raise TypeError(f"{op}(): dtype must be a number type, got hg.bool")
    out = hg.randint(_args.integer(op, "low", low), _args.integer(op, "high", high), shape(input),
                     generator=generator, device=device)
    out = out if dtype == hg.int64 else out.to(dtype)
    return out.requires_grad_() if requires_grad else out
