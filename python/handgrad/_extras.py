"""PyTorch's smaller conveniences over the library's ops: sorting (sort, argsort, topk), kron,
trace, cross, cdist, the paired reductions (std_mean, var_mean, aminmax), closeness (isclose,
allclose, equal), the new_* and *_as forms, the in-place forms and a few elementwise compositions.
Each is written with recorded ops (or computes positions on the host and reads with gather), so
its gradient is theirs; nothing here has a backward of its own. The products are
_contractions.py's, the joins _joins.py's, the indexed writes _indexed.py's.
"""
import math
import numbers

import numpy as np

from . import _C, _args
from ._C import Tensor


def _number(op, name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{op}(): {name} must be a number, not {type(v).__name__}")
    return float(v)


def _error(message):
    return _C.Error(message)


# ---------------------------------------------------------------- sorting (positions on the host, values by gather)

_SortOut = _args.result("sort")
_TopkOut = _args.result("topk")


def _dim_arg(op, dim):
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"{op}(): dim must be an int, not {dim!r}")
    return int(dim)


def sort(input, dim=-1, descending=False, stable=False):
    """sort(x, dim=-1, descending=False) → (values, indices), one op of the C++ library
    (ops/sort.cpp): ties keep their order (stable), NaN sorts as the largest; values are
    gather(x, dim, indices), so the gradient goes back where each value came from."""
    _args.tensor("sort", input)
    values, indices = _C._sort(input, _dim_arg("sort", dim), bool(descending))
    return _SortOut(values, indices)


def argsort(input, dim=-1, descending=False, stable=False):
    """argsort(x, dim=-1, descending=False): the indices that sort x along dim."""
    return sort(input, dim, descending).indices


def msort(input):
    """msort(input): input sorted along dim 0 (the values of sort(input, 0))."""
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002 (torch's name)
    """topk(x, k, dim=-1, largest=True) → (values, indices): the k largest (smallest) along dim,
    in sorted order (ops/sort.cpp: sort's first k)."""
    _args.tensor("topk", input)
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"topk(): k must be an int, not {k!r}")
    values, indices = _C._topk(input, int(k), _dim_arg("topk", dim), bool(largest))
    return _TopkOut(values, indices)


def kron(input, other):
    """kron(a, b) of two matrices: each a_ij times all of b, tiled."""
    _args.tensor("kron", input), _args.tensor("kron", other)
    if input.dim() != 2 or other.dim() != 2:
        raise _error("kron(): only two matrices (2-d) are supported")
    (n, m), (p, q) = input.shape, other.shape
    return (input.reshape(n, 1, m, 1) * other.reshape(1, p, 1, q)).reshape(n * p, m * q)


def trace(input):
    """trace(a): the sum of a matrix's diagonal."""
    _args.tensor("trace", input)
    if _args.tensor("trace", input).dim() != 2:
        raise _error(f"trace(): expected a matrix, got shape {tuple(input.shape)}")
    return input.diagonal().sum()


def cross(input, other, dim=-1):
    """cross(a, b, dim): the 3-vector cross product along dim (of size 3)."""
    _args.tensor("cross", input), _args.tensor("cross", other)
    if input.shape[dim] != 3:
        raise _error(f"cross(): dim {dim} must have size 3, got shape {tuple(input.shape)}")
    a = [input.select(dim, i) for i in range(3)]
    b = [other.select(dim, i) for i in range(3)]
    c = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    return _args.hg().stack(c, dim if dim >= 0 else dim + input.dim())


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """cdist(a, b, p=2): the p-norm distance between every row of a (.., n, d) and of b (.., m, d).
    Every compute_mode computes the differences themselves (never ‖a‖² + ‖b‖² − 2ab, torch's matrix
    product form for large inputs), so each distance is exact to rounding, 0 between equal rows."""
    _args.tensor("cdist", x1), _args.tensor("cdist", x2)
    if compute_mode not in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"cdist(): {compute_mode!r} is not a compute_mode")
    if x1.dim() < 2 or x2.dim() < 2 or x1.shape[-1] != x2.shape[-1] or _number("cdist", "p", p) < 0:
        raise _error(f"cdist(): expected x1 (..., n, d) and x2 (..., m, d) with one d and p ≥ 0, got shapes "
                     f"{tuple(x1.shape)} and {tuple(x2.shape)}, p = {p}")
    return _args.hg().linalg.vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, dim=-1)


# ---------------------------------------------------------------- reductions and elementwise

_Pair = _args.result("aminmax", ("min", "max"))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over dim, with std's arguments (std_mean(x, False) is the unbiased=False form)."""
    _args.tensor("std_mean", input)
    hg = _args.hg()
    return hg.std(input, dim, unbiased, keepdim, correction=correction), _mean(input, dim, keepdim)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over dim, with var's arguments (var_mean(x, False) is the unbiased=False form)."""
    _args.tensor("var_mean", input)
    hg = _args.hg()
    return hg.var(input, dim, unbiased, keepdim, correction=correction), _mean(input, dim, keepdim)


def _mean(x, dim, keepdim):
    if isinstance(dim, bool):  # var_mean(x, False): PyTorch's overload whose first argument is unbiased
        dim = None
    return x.mean() if dim is None and not keepdim else x.mean(dim, keepdim)


def aminmax(input, *, dim=None, keepdim=False):
    """aminmax(input, *, dim=None, keepdim=False): (min, max) of input, over every element or along dim."""
    _args.tensor("aminmax", input)
    hg = _args.hg()
    dims = () if dim is None else dim
    return _Pair(hg.amin(input, dims, keepdim), hg.amax(input, dims, keepdim))


def cumprod(input, dim, *, dtype=None):
    """cumprod(x, dim, dtype=None): running products along dim, one op of the C++ library
    (ops/scan.cpp): its gradient is derived there, exact where x has zeros (bool input gives int64,
    as PyTorch)."""
    _args.tensor("cumprod", input)
    hg = _args.hg()
    if isinstance(dim, bool) or not hasattr(dim, "__index__"):
        raise TypeError(f"cumprod(): dim must be an int, not {type(dim).__name__}")
    x = input.to(dtype) if dtype is not None else input.to(hg.int64) if input.dtype == hg.bool else input
    return _C._cumprod(x, int(dim))


def count_nonzero(input, dim=None):
    """count_nonzero(input, dim=None): the number of nonzero elements, in all or along dim (int64)."""
    hg = _args.hg()
    nz = hg.ne(_args.tensor("count_nonzero", input), 0)
    return nz.sum() if dim is None else nz.sum(dim)


def nonzero(input, *, as_tuple=False):
    """nonzero(x): the (n, x.dim()) int64 positions of x's nonzero entries, row-major."""
    hg = _args.hg()
    pos = np.argwhere(_args.tensor("nonzero", input).detach().cpu().numpy() != 0).astype(np.int64)
    if as_tuple:  # a 0-d input counts as 1-d here, as in PyTorch
        return tuple(hg.tensor(pos[:, i].copy()).to(input.device) for i in range(input.dim())) if input.dim() else \
            (hg.tensor(np.zeros(len(pos), np.int64)).to(input.device),)
    return hg.tensor(pos).to(input.device)  # (n, x.dim()): (1, 0) or (0, 0) for a 0-d input


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False): whether isclose holds everywhere (a bool)."""
    _args.tensor("allclose", input), _args.tensor("allclose", other)
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a − b| ≤ atol + rtol |b|, elementwise (NaNs equal when equal_nan). int64 and bool operands
    are compared as numbers (False 0, True 1), as PyTorch's."""
    hg = _args.hg()
    _args.tensor("isclose", input), _args.tensor("isclose", other)
    rtol, atol = _number("isclose", "rtol", rtol), _number("isclose", "atol", atol)
    with hg.no_grad():
        if input.dtype == hg.bool and other.dtype == hg.bool:  # no arithmetic on bools: as the numbers 0 and 1
            input, other = input.to(hg.int64), other.to(hg.int64)
        close = (input - other).abs() <= atol + rtol * other.abs()
        close = close | (input == other)
        if equal_nan:
            close = close | (hg.isnan(input) & hg.isnan(other))
    return close


def equal(input, other):
    """equal(input, other): whether the two have the same shape and the same elements (a bool)."""
    _args.tensor("equal", input), _args.tensor("equal", other)
    return tuple(input.shape) == tuple(other.shape) and bool((input == other).all().item())


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN → nan, +inf → posinf (the dtype's largest), −inf → neginf (its lowest)."""
    hg = _args.hg()
    _args.tensor("nan_to_num", input)
    nan = _number("nan_to_num", "nan", nan)
    posinf = None if posinf is None else _number("nan_to_num", "posinf", posinf)
    neginf = None if neginf is None else _number("nan_to_num", "neginf", neginf)
    if input.dtype not in (hg.float32, hg.float64):
        return input.clone()
    big = np.finfo(np.float64 if input.dtype == hg.float64 else np.float32).max
    out = hg.where(hg.isnan(input), float(nan), input)
    out = hg.where(out == math.inf, float(big if posinf is None else posinf), out)
    return hg.where(out == -math.inf, float(-big if neginf is None else neginf), out)






def logit(input, eps=None):
    """log(x / (1 − x)); with eps, x below eps reads eps and x above 1 − eps reads 1 − eps first,
    in that order (torch's rule: for eps > 0.5 it is not clamp's), with no gradient there."""
    _args.tensor("logit", input)
    x = input if input.dtype in (_C.dtype.float32, _C.dtype.float64) else input.to(_C.dtype.float32)
    if eps is not None:
        low, high = _number("logit", "eps", eps), 1.0 - float(eps)
        hg = _args.hg()
        x = hg.where(x < low, low, hg.where(x > high, high, x))
    return (x / (1 - x)).log()




def sinc(input):
    """sin(πx)/(πx), 1 at 0."""
    _args.tensor("sinc", input)
    hg = _args.hg()
    zero = input == 0
    safe = hg.where(zero, 1.0, input) * math.pi
    return hg.where(zero, 1.0, hg.sin(safe) / safe)




def bernoulli(input, p=None, generator=None):
    """1.0 where a uniform draw falls below p (input's entries, or the number p), else 0."""
    hg = _args.hg()
    _args.tensor("bernoulli", input)
    probs = input if p is None else hg.full_like(input, _number("bernoulli", "p", p))
    draws = hg.rand(*probs.shape, generator=generator, dtype=probs.dtype, device=probs.device)
    return (draws < probs).to(probs.dtype)


def round_(input, decimals=0):
    hg = _args.hg()
    if isinstance(decimals, bool) or not isinstance(decimals, numbers.Integral):
        raise TypeError(f"round(): decimals must be an int, not {decimals!r}")
    if decimals == 0:
        return hg._C.round(input)
    if abs(decimals) > 400:  # past float64's range: 10^d is 0 or inf
        raise ValueError(f"round(): decimals {decimals} is past float64's range (|decimals| ≤ 400)")
    s = 10.0 ** decimals
    return hg._C.round(input * s) / s


# ---------------------------------------------------------------- Tensor-only forms

def attach():
    T = Tensor
    T.sort = sort
    T.argsort = argsort
    T.msort = msort
    T.topk = topk
    T.cumprod = cumprod
    T.count_nonzero = count_nonzero
    T.nonzero = nonzero
    T.nan_to_num = nan_to_num
    T.logit = logit
    T.sinc = sinc
    T.allclose = allclose
    T.isclose = isclose
    T.equal = equal
    T.trace = trace
    T.cross = cross
    T.kron = kron
    T.bernoulli = bernoulli
    T.aminmax = aminmax


FUNCTIONS = ["sort", "argsort", "msort", "topk", "kron", "trace", "cross", "cdist", "std_mean", "var_mean", "aminmax",
             "cumprod", "count_nonzero", "nonzero", "allclose", "isclose", "equal", "nan_to_num", "logit", "sinc",
             "bernoulli"]


# ---------------------------------------------------------------- in-place forms
# x.add_(y) is x.copy_(x.add(y)): the out-of-place op, written back into x's memory. As every
# in-place write here, it is refused on a tensor that requires grad while grad mode is on (the
# library records no in-place ops), and the result is cast to x's dtype.

INPLACE = ["add", "sub", "mul", "div", "pow", "neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "clamp",
           "clamp_min", "clamp_max", "floor", "ceil", "round", "trunc", "sign", "reciprocal", "masked_fill", "scatter",
           "scatter_add", "index_fill", "index_add", "fmod", "remainder", "lerp", "square", "sin", "cos", "tril", "triu",
           "nan_to_num", "clip", "floor_divide", "t", "squeeze", "unsqueeze"]


def _inplace(name):
    def op(self, *args, **kwargs):
        out = getattr(self, name)(*args, **kwargs)
        if tuple(out.shape) != tuple(self.shape):
            raise _error(f"{name}_(): the result's shape {tuple(out.shape)} is not the tensor's {tuple(self.shape)}")
        if out.requires_grad and not self.requires_grad:  # copy_ records nothing: the gradient would be lost
            raise _error(f"{name}_(): an argument requires grad, and in-place writes are not recorded here, so its "
                         f"gradient would be lost; write x = x.{name}(...) instead")
        self.copy_(out)
        return self
    op.__name__ = name + "_"
    op.__doc__ = f"x.{name}_(...): x.{name}(...) written into x (refused on a tensor that requires grad)."
    return op


def attach_inplace():
    for name in INPLACE:
        if name in ("t", "squeeze", "unsqueeze"):
            continue  # these change the shape: not in place here
        if not hasattr(Tensor, name + "_"):
            setattr(Tensor, name + "_", _inplace(name))
