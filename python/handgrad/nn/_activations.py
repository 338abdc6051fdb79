"""softmin, glu, hardswish, hardsigmoid, threshold: PyTorch's activations as compositions of the
library's ops (softmax, narrow, sigmoid, where, mul), so the tape differentiates them.

The piecewise ones are written with where so that their gradients at the kinks are PyTorch's:
hardswish's is 0 at x = −3 and 1 at x = 3 (its middle piece x/3 + 1/2 only strictly between),
hardsigmoid's 0 at both, threshold's 0 at the threshold; NaN gives NaN, as in PyTorch.
"""
import math
import numbers
import warnings

from .. import _args
from .._args import shape


def _activation(op, input, inplace=False):
    _args.tensor(f"hg.nn.functional.{op}", input)
    if inplace:
        raise ValueError(f"hg.nn.functional.{op}: inplace=True is not implemented; use the returned tensor")
    if input.dtype not in _args.FLOATS:
        raise TypeError(f"hg.nn.functional.{op}: input must be hg.float32 or hg.float64, got "
                        f"{_args.dtype_name(input.dtype)}")
    return _args.hg()


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmin(input, dim=None, dtype=None): softmax(−input) along dim, after casting to dtype when
    given. dim=None picks PyTorch's legacy dim (0 for 0-, 1- and 3-d inputs, else 1) with its
    warning; give dim."""
    _args.tensor("hg.nn.functional.softmin", input)
    x = input.to(dtype) if dtype is not None else input
    hg = _activation("softmin", x)
    if dim is None:
        warnings.warn("Implicit dimension choice for softmin has been deprecated. Change the call to include dim=X "
                      "as an argument.", UserWarning, stacklevel=_stacklevel)
        dim = 0 if x.dim() in (0, 1, 3) else 1
    d = _args.dim("hg.nn.functional.softmin", x, dim)
    return hg.softmax(-x, d)


def glu(input, dim=-1):
    """glu(input, dim=-1): a ∘ σ(b), with a the first half of input along dim and b the second
    (the gated linear unit); that dim's size must be even."""
    op = "hg.nn.functional.glu"
    hg = _activation("glu", input)
    if input.dim() == 0:
        raise hg.Error(f"{op}: a 0-d tensor cannot be halved; give a tensor with an even-sized dim")
    d = _args.dim(op, input, dim)
    size = input.shape[d]
    if size % 2:
        raise hg.Error(f"{op}: dim {dim} of input {shape(input)} must have an even size to be halved, got {size}")
    half = size // 2
    return input.narrow(d, 0, half) * hg.sigmoid(input.narrow(d, half, half))


def hardswish(input, inplace=False):
    """hardswish(input): x · min(max(x + 3, 0), 6) / 6 — 0 up to −3, x from 3 on, x (x + 3) / 6
    between. The gradient is PyTorch's: 0 at x ≤ −3, x/3 + 1/2 for −3 < x < 3, 1 from 3 on."""
    hg = _activation("hardswish", input, inplace)
    # the factor min(max(x + 3, 0), 6), with the kinks' gradient on the flat pieces
    factor = hg.where(input <= -3, 0.0, hg.where(input < 3, input + 3, 6.0))
    return input * factor / 6


def hardsigmoid(input, inplace=False):
    """hardsigmoid(input): min(max(x + 3, 0), 6) / 6 — 0 up to −3, 1 from 3 on, linear between.
    The gradient is PyTorch's: 1/6 strictly between −3 and 3, else 0 (0 at NaN too)."""
    hg = _activation("hardsigmoid", input, inplace)
    middle = hg.where(hg.isnan(input), math.nan, input + 3)  # NaN stays NaN, with no gradient
    return hg.where(input <= -3, 0.0, hg.where(input >= 3, 6.0, middle)) / 6


def threshold(input, threshold, value, inplace=False):
    """threshold(input, threshold, value): value where input ≤ threshold, input elsewhere (NaN
    stays NaN); the gradient passes where input > threshold. An integer input takes value
    truncated to an int, as in PyTorch."""
    op = "hg.nn.functional.threshold"
    _args.tensor(op, input)
    if inplace:
        raise ValueError(f"{op}: inplace=True is not implemented; use the returned tensor")
    for name, v in (("threshold", threshold), ("value", value)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{op}: {name} must be a number, got {v!r}")
    hg = _args.hg()
    if input.dtype not in _args.FLOATS:
        value = math.trunc(value)
    return hg.where(input <= threshold, value, input)
