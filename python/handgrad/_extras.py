"""PyTorch's smaller conveniences over the library's ops: matrix products (mm, bmm, dot, outer,
einsum, tensordot), sorting (sort, argsort, topk), joins (hstack, vstack, ...), the new_* and *_as
forms, and a few elementwise compositions. Each is written with recorded ops (or computes
positions on the host and reads with gather), so its gradient is theirs; nothing here has a
backward of its own.
"""
import math
import numbers
import string

import numpy as np

from . import _C
from ._C import Tensor


def _hg():
    import handgrad
    return handgrad


def _tensor(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): expected a handgrad Tensor, not {type(x).__name__}")
    return x


def _tensors(op, xs):
    """A sequence of tensors (or tensors given one by one), each checked."""
    if len(xs) == 1 and isinstance(xs[0], (list, tuple)):
        xs = tuple(xs[0])
    if not xs:
        raise TypeError(f"{op}(): give at least one tensor")
    return tuple(_tensor(op, x) for x in xs)


def _number(op, name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{op}(): {name} must be a number, not {type(v).__name__}")
    return float(v)


def _error(message):
    return _C.Error(message)


# ---------------------------------------------------------------- products

def _batched_product(op, input, mat2, rank, what):
    _tensor(op, input), _tensor(op, mat2)
    if input.dim() != rank or mat2.dim() != rank:
        raise _error(f"{op}(): expected {rank}-d {what}, got shapes {tuple(input.shape)} and {tuple(mat2.shape)}")
    return input @ mat2


def mm(input, mat2):
    """mm(a, b): the (n, m) × (m, p) matrix product; both must be 2-d."""
    return _batched_product("mm", input, mat2, 2, "matrices")


def bmm(input, mat2):
    """bmm(a, b): (B, n, m) × (B, m, p) batch by batch; both must be 3-d."""
    return _batched_product("bmm", input, mat2, 3, "batches")


def dot(input, other):
    """dot(a, b): Σ a_i b_i of two 1-d tensors."""
    _tensor("dot", input), _tensor("dot", other)
    if input.dim() != 1 or other.dim() != 1:
        raise _error(f"dot(): expected 1-d tensors, got shapes {tuple(input.shape)} and {tuple(other.shape)}")
    return (input * other).sum()


def outer(input, vec2):
    """outer(a, b): a_i b_j, (n, m) from 1-d tensors."""
    return _tensor("outer", input).reshape(-1, 1) * _tensor("outer", vec2).reshape(1, -1)


def tensordot(a, b, dims=2):
    """tensordot(a, b, dims): contracts a's last dims with b's first (an int) or the listed pairs."""
    _tensor("tensordot", a), _tensor("tensordot", b)
    if isinstance(dims, int):
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = [list(d) if isinstance(d, (list, tuple)) else [d] for d in dims]
    da, db = [d % a.dim() for d in da], [d % b.dim() for d in db]
    keep_a = [d for d in range(a.dim()) if d not in da]
    keep_b = [d for d in range(b.dim()) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    left = a.permute(*keep_a, *da).reshape(math.prod(a.shape[d] for d in keep_a), k)
    right = b.permute(*db, *keep_b).reshape(k, math.prod(b.shape[d] for d in keep_b))
    return (left @ right).reshape(*[a.shape[d] for d in keep_a], *[b.shape[d] for d in keep_b])


def einsum(equation, *operands):  # noqa: C901
    """einsum('ij,jk->ik', a, b): each operand's letters aligned on one set of axes (permute and
    unsqueeze), multiplied with broadcasting, summed over the letters the output leaves out.
    Repeated letters within one operand (a diagonal) and '...' are not supported."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): the equation must be a str, not {type(equation).__name__}")
    eq = equation.replace(" ", "")
    if "..." in eq:
        raise _error("einsum(): '...' is not supported; write the dims out")
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum(): {equation!r} names {len(ins)} operands, {len(operands)} given")
    for term, t in zip(ins, operands):
        _tensor("einsum", t)
        if len(term) != t.dim() or not all(c in string.ascii_letters for c in term):
            raise ValueError(f"einsum(): term {term!r} does not fit an operand of shape {tuple(t.shape)}")
        if len(set(term)) != len(term):
            raise _error(f"einsum(): a letter repeated within {term!r} (a diagonal) is not supported")
    if not arrow:  # implicit output: the letters that appear once, in alphabetical order
        counts = {c: lhs.count(c) for c in lhs if c != ","}
        rhs = "".join(sorted(c for c, n in counts.items() if n == 1))
    letters = list(dict.fromkeys(rhs + "".join(ins)))
    if any(c not in "".join(ins) for c in rhs):
        raise ValueError(f"einsum(): the output {rhs!r} names a letter no operand has")
    product = None
    for term, t in zip(ins, operands):
        order = [term.index(c) for c in letters if c in term]
        aligned = t.permute(*order) if t.dim() > 1 else t
        shape = [t.shape[term.index(c)] if c in term else 1 for c in letters]
        aligned = aligned.reshape(*shape) if shape else aligned
        product = aligned if product is None else product * aligned
    summed = [i for i, c in enumerate(letters) if c not in rhs]
    return product.sum(summed) if summed else product


# ---------------------------------------------------------------- sorting (positions on the host, values by gather)

_SortOut = __import__("collections").namedtuple("sort", ["values", "indices"])
_TopkOut = __import__("collections").namedtuple("topk", ["values", "indices"])


def _order(x, dim, descending):
    a = x.detach().cpu().to(_C.dtype.float64).numpy() if x.dtype != _C.dtype.int64 else x.detach().cpu().numpy()
    d = dim % max(x.dim(), 1)
    idx = np.argsort(-a if descending else a, axis=d, kind="stable") if x.dim() else np.zeros((), np.int64)
    if descending and a.dtype.kind == "f":  # NaN sorts as the largest, as PyTorch's
        nan_first = np.argsort(~np.isnan(np.take_along_axis(a, idx, d)), axis=d, kind="stable")
        idx = np.take_along_axis(idx, nan_first, d)
    out = _hg().tensor(idx.astype(np.int64))
    return (out.to(x.device) if x.device != "cpu" else out), d


def sort(input, dim=-1, descending=False, stable=False):
    """sort(x, dim=-1, descending=False) → (values, indices); ties keep their order (stable)."""
    _tensor("sort", input)
    if input.dim() == 0:
        return _SortOut(input.clone(), _hg().zeros((), dtype=_C.dtype.int64))
    idx, d = _order(input, dim, descending)
    return _SortOut(_hg().gather(input, d, idx), idx)


def argsort(input, dim=-1, descending=False, stable=False):
    """argsort(x, dim=-1, descending=False): the indices that sort x along dim."""
    return sort(input, dim, descending).indices


def msort(input):
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002 (torch's name)
    """topk(x, k, dim=-1, largest=True) → (values, indices): the k largest (smallest) along dim."""
    _tensor("topk", input)
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"topk(): k and dim must be ints, got {k!r} and {dim!r}")
    if input.dim() and not -input.dim() <= dim < input.dim():
        raise IndexError(f"topk(): dim {dim} is out of range for a tensor of shape {tuple(input.shape)}")
    n = input.shape[dim] if input.dim() else 1
    if not 0 <= k <= n:
        raise _error(f"topk(): k = {k} is out of range for dim {dim} of size {n}")
    values, indices = sort(input, dim, descending=largest)
    return _TopkOut(values.narrow(dim, 0, k), indices.narrow(dim, 0, k))


# ---------------------------------------------------------------- joins and shapes

def hstack(tensors):
    ts = [atleast_1d(t) for t in _tensors("hstack", (tensors,))]
    return _C.cat(ts, 0 if ts[0].dim() == 1 else 1)


def vstack(tensors):
    return _C.cat([atleast_2d(t) for t in _tensors("vstack", (tensors,))], 0)


def dstack(tensors):
    return _C.cat([atleast_3d(t) for t in _tensors("dstack", (tensors,))], 2)


def column_stack(tensors):
    return _C.cat([t.reshape(-1, 1) if t.dim() <= 1 else t for t in _tensors("column_stack", (tensors,))], 1)


def atleast_1d(x):
    _tensor("atleast_1d", x)
    return x.reshape(1) if x.dim() == 0 else x


def atleast_2d(x):
    _tensor("atleast_2d", x)
    return x.reshape(1, 1) if x.dim() == 0 else x.unsqueeze(0) if x.dim() == 1 else x


def atleast_3d(x):
    _tensor("atleast_3d", x)
    if x.dim() == 0:
        return x.reshape(1, 1, 1)
    if x.dim() == 1:
        return x.reshape(1, -1, 1)
    return x.unsqueeze(-1) if x.dim() == 2 else x


def broadcast_to(input, size):
    return _tensor("broadcast_to", input).expand(*size)


def unbind(input, dim=0):
    """unbind(x, dim=0): the tuple of x's slices along dim (each a view)."""
    _tensor("unbind", input)
    return tuple(input.select(dim, i) for i in range(input.shape[dim]))


def take_along_dim(input, indices, dim):
    return _hg().gather(input, dim, indices)


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
    grids = meshgrid(*_tensors("cartesian_prod", tensors), indexing="ij")
    if len(grids) == 1:
        return grids[0]
    return _hg().stack([g.reshape(-1) for g in grids], 1)


def kron(input, other):
    """kron(a, b) of two matrices: each a_ij times all of b, tiled."""
    _tensor("kron", input), _tensor("kron", other)
    if input.dim() != 2 or other.dim() != 2:
        raise _error("kron(): only two matrices (2-d) are supported")
    (n, m), (p, q) = input.shape, other.shape
    return (input.reshape(n, 1, m, 1) * other.reshape(1, p, 1, q)).reshape(n * p, m * q)


def trace(input):
    """trace(a): the sum of a matrix's diagonal."""
    _tensor("trace", input)
    if _tensor("trace", input).dim() != 2:
        raise _error(f"trace(): expected a matrix, got shape {tuple(input.shape)}")
    return input.diagonal().sum()


def cross(input, other, dim=-1):
    """cross(a, b, dim): the 3-vector cross product along dim (of size 3)."""
    _tensor("cross", input), _tensor("cross", other)
    if input.shape[dim] != 3:
        raise _error(f"cross(): dim {dim} must have size 3, got shape {tuple(input.shape)}")
    a = [input.select(dim, i) for i in range(3)]
    b = [other.select(dim, i) for i in range(3)]
    c = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    return _hg().stack(c, dim if dim >= 0 else dim + input.dim())


def cdist(x1, x2, p=2.0):
    """cdist(a, b, p=2): the p-norm distance between every row of a (.., n, d) and of b (.., m, d)."""
    diff = _tensor("cdist", x1).unsqueeze(-2) - _tensor("cdist", x2).unsqueeze(-3)
    return _hg().linalg.vector_norm(diff, p, dim=-1)


# ---------------------------------------------------------------- reductions and elementwise

_Pair = __import__("collections").namedtuple("aminmax", ["min", "max"])


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    _tensor("std_mean", input)
    hg = _hg()
    return hg.std(input, dim, unbiased, keepdim, correction=correction), _mean(input, dim, keepdim)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    _tensor("var_mean", input)
    hg = _hg()
    return hg.var(input, dim, unbiased, keepdim, correction=correction), _mean(input, dim, keepdim)


def _mean(x, dim, keepdim):
    return x.mean() if dim is None and not keepdim else x.mean(dim, keepdim)


def aminmax(input, *, dim=None, keepdim=False):
    _tensor("aminmax", input)
    hg = _hg()
    dims = () if dim is None else dim
    return _Pair(hg.amin(input, dims, keepdim), hg.amax(input, dims, keepdim))


def cumprod(input, dim, *, dtype=None):
    """cumprod(x, dim): running products, one recorded mul per step along dim (the gradient is
    the chain rule's, zeros included)."""
    _tensor("cumprod", input)
    x = input.to(dtype) if dtype is not None else input
    n = x.shape[dim] if x.dim() else 1
    if x.dim() == 0 or n == 0:
        return x.clone()
    d = dim % x.dim()
    run, parts = x.narrow(d, 0, 1), [x.narrow(d, 0, 1)]
    for i in range(1, n):
        run = run * x.narrow(d, i, 1)
        parts.append(run)
    return _C.cat(parts, d)


def count_nonzero(input, dim=None):
    hg = _hg()
    nz = hg.ne(_tensor("count_nonzero", input), 0)
    return nz.sum() if dim is None else nz.sum(dim)


def nonzero(input, *, as_tuple=False):
    """nonzero(x): the (n, x.dim()) int64 positions of x's nonzero entries, row-major."""
    hg = _hg()
    pos = np.argwhere(_tensor("nonzero", input).detach().cpu().numpy() != 0).astype(np.int64)
    if as_tuple:
        return tuple(hg.tensor(pos[:, i].copy()).to(input.device) for i in range(input.dim()))
    return hg.tensor(pos.reshape(-1, input.dim())).to(input.device)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    _tensor("allclose", input), _tensor("allclose", other)
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a − b| ≤ atol + rtol |b|, elementwise (NaNs equal when equal_nan)."""
    hg = _hg()
    _tensor("isclose", input), _tensor("isclose", other)
    rtol, atol = _number("isclose", "rtol", rtol), _number("isclose", "atol", atol)
    with hg.no_grad():
        close = (input - other).abs() <= atol + rtol * (other.abs() if isinstance(other, Tensor) else abs(other))
        close = close | (input == other)
        if equal_nan:
            close = close | (hg.isnan(input) & hg.isnan(other))
    return close


def equal(input, other):
    _tensor("equal", input), _tensor("equal", other)
    return tuple(input.shape) == tuple(other.shape) and bool((input == other).all().item())


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN → nan, +inf → posinf (the dtype's largest), −inf → neginf (its lowest)."""
    hg = _hg()
    _tensor("nan_to_num", input)
    nan = _number("nan_to_num", "nan", nan)
    posinf = None if posinf is None else _number("nan_to_num", "posinf", posinf)
    neginf = None if neginf is None else _number("nan_to_num", "neginf", neginf)
    if input.dtype not in (hg.float32, hg.float64):
        return input.clone()
    big = np.finfo(np.float64 if input.dtype == hg.float64 else np.float32).max
    out = hg.where(hg.isnan(input), float(nan), input)
    out = hg.where(out == math.inf, float(big if posinf is None else posinf), out)
    return hg.where(out == -math.inf, float(-big if neginf is None else neginf), out)


def atan2(input, other):
    """atan2(y, x): the angle of (x, y), in (−π, π]: atan(y/x) moved by ±π where x < 0."""
    _tensor("atan2", input), _tensor("atan2", other)
    hg = _hg()
    half_turn = hg.where(input >= 0, hg.ones_like(input), -1.0) * math.pi
    return hg.atan(input / other) + (other < 0) * half_turn


def hypot(input, other):
    _tensor("hypot", input), _tensor("hypot", other)
    return (input * input + other * other).sqrt()


def logit(input, eps=None):
    _tensor("logit", input)
    eps = None if eps is None else _number("logit", "eps", eps)
    x = input.clamp(eps, 1 - eps) if eps is not None else input
    return (x / (1 - x)).log()


def xlogy(input, other):
    _tensor("xlogy", input), _tensor("xlogy", other)
    """x · log y, 0 where x = 0 (whatever y is)."""
    hg = _hg()
    safe = hg.where(input == 0, 1.0, other)
    return hg.where(input == 0, 0.0, input * safe.log())


def sinc(input):
    """sin(πx)/(πx), 1 at 0."""
    _tensor("sinc", input)
    hg = _hg()
    zero = input == 0
    safe = hg.where(zero, 1.0, input) * math.pi
    return hg.where(zero, 1.0, hg.sin(safe) / safe)


def fmod(input, other):
    """fmod(a, b): a − trunc(a/b)·b, the dividend's sign (C's fmod)."""
    _tensor("fmod", input)
    if not isinstance(other, Tensor):
        _number("fmod", "other", other)
    hg = _hg()
    if input.dtype == hg.int64 and (not isinstance(other, Tensor) or other.dtype == hg.int64):
        r = input % other
        fix = (r != 0) & ((input < 0) != (other < 0) if isinstance(other, Tensor) else (input < 0) != (other < 0))
        return hg.where(fix, r - other, r)
    return input - hg.trunc(input / other) * other


def bernoulli(input, p=None, generator=None):
    """1.0 where a uniform draw falls below p (input's entries, or the number p), else 0."""
    hg = _hg()
    _tensor("bernoulli", input)
    probs = input if p is None else hg.full_like(input, _number("bernoulli", "p", p))
    draws = hg.rand(*probs.shape, generator=generator, dtype=probs.dtype, device=probs.device)
    return (draws < probs).to(probs.dtype)


def round_(input, decimals=0):
    hg = _hg()
    if isinstance(decimals, bool) or not isinstance(decimals, numbers.Integral):
        raise TypeError(f"round(): decimals must be an int, not {decimals!r}")
    if decimals == 0:
        return hg._C.round(input)
    if abs(decimals) > 400:  # past float64's range: 10^d is 0 or inf
        raise ValueError(f"round(): decimals {decimals} is past float64's range (|decimals| ≤ 400)")
    s = 10.0 ** decimals
    return hg._C.round(input * s) / s


# ---------------------------------------------------------------- Tensor-only forms

def _new(make):
    def new(self, *size, dtype=None, device=None, requires_grad=False, **kw):
        hg = _hg()
        out = make(hg, self, size, dtype or self.dtype, device or self.device, **kw)
        return out.requires_grad_() if requires_grad else out
    return new


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    return _hg().tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def _sizes(size):
    return size[0] if len(size) == 1 and isinstance(size[0], (list, tuple)) else size


def index_fill(self, dim, index, value):
    """x.index_fill(dim, index, value): a copy with the slices index names along dim set to value."""
    hg = _hg()
    _tensor("index_fill", self), _tensor("index_fill", index)
    if not isinstance(value, Tensor):
        value = _number("index_fill", "value", value)
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or not -max(self.dim(), 1) <= dim < max(self.dim(), 1):
        raise IndexError(f"index_fill(): dim {dim!r} is not a dim of a tensor of shape {tuple(self.shape)}")
    if self.dim() == 0:
        raise _error("index_fill(): the tensor is 0-d; there is no dim to fill along")
    mask_shape = [1] * self.dim()
    mask_shape[dim] = self.shape[dim]
    mask = hg.zeros(self.shape[dim], dtype=hg.bool)
    mask[index] = True
    return hg.where(mask.reshape(*mask_shape).to(self.device), float(value) if not isinstance(value, Tensor) else value, self)


def index_add(self, dim, index, source, *, alpha=1):
    """x.index_add(dim, index, source): a copy with source's slices added at the positions index
    names along dim (repeated positions add up)."""
    hg = _hg()
    _tensor("index_add", self), _tensor("index_add", index), _tensor("index_add", source)
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or not -max(self.dim(), 1) <= dim < max(self.dim(), 1):
        raise IndexError(f"index_add(): dim {dim!r} is not a dim of a tensor of shape {tuple(self.shape)}")
    if self.dim() == 0 or source.dim() != self.dim() or index.dim() != 1 or index.numel() != source.shape[dim]:
        raise _error(f"index_add(): index {tuple(index.shape)} and source {tuple(source.shape)} do not fit "
                     f"{tuple(self.shape)} along dim {dim}: one index per slice of source, source as many dims")
    d = dim % self.dim()
    shape = list(source.shape)
    idx = index.reshape(*[-1 if i == d else 1 for i in range(self.dim())]).expand(*shape)
    return hg.scatter_add(self, d, idx, source * alpha if alpha != 1 else source)


def attach():
    hg = _hg()
    T = Tensor
    T.t = lambda self: self.transpose(0, 1) if self.dim() == 2 else self
    T.mT = property(lambda self: self.transpose(-2, -1))
    T.mH = T.mT
    T.type_as = lambda self, other: self.to(_tensor("type_as", other).dtype)
    T.new_zeros = _new(lambda hg, s, size, dt, dev: hg.zeros(*_sizes(size), dtype=dt, device=dev))
    T.new_ones = _new(lambda hg, s, size, dt, dev: hg.ones(*_sizes(size), dtype=dt, device=dev))
    T.new_empty = T.new_zeros
    T.new_full = lambda self, size, fill_value, dtype=None, device=None, requires_grad=False: hg.full(
        size, fill_value, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
    T.new_tensor = _new_tensor
    T.view_as = lambda self, other: self.view(*_tensor("view_as", other).shape)
    T.reshape_as = lambda self, other: self.reshape(*_tensor("reshape_as", other).shape)
    T.expand_as = lambda self, other: self.expand(*_tensor("expand_as", other).shape)
    T.nelement = lambda self: self.numel()
    T.unbind = unbind
    T.swapaxes = T.swapdims = lambda self, a, b: self.transpose(a, b)
    T.clamp_min = lambda self, min: hg.clamp(self, min=min)  # noqa: A006
    T.clamp_max = lambda self, max: hg.clamp(self, max=max)  # noqa: A006
    T.fmod = fmod
    T.index_fill = index_fill
    T.index_add = index_add
    T.sort = sort
    T.argsort = argsort
    T.msort = msort
    T.topk = topk
    T.cumprod = cumprod
    T.count_nonzero = count_nonzero
    T.nonzero = nonzero
    T.nan_to_num = nan_to_num
    T.atan2 = atan2
    T.hypot = hypot
    T.logit = logit
    T.xlogy = xlogy
    T.sinc = sinc
    T.allclose = allclose
    T.isclose = isclose
    T.equal = equal
    T.broadcast_to = broadcast_to
    T.take_along_dim = take_along_dim
    T.outer = outer
    T.dot = dot
    T.mm = mm
    T.bmm = bmm
    T.trace = trace
    T.cross = cross
    T.kron = kron
    T.bernoulli = bernoulli
    T.aminmax = aminmax


FUNCTIONS = ["mm", "bmm", "dot", "outer", "tensordot", "einsum", "sort", "argsort", "msort", "topk", "hstack",
             "vstack", "dstack", "column_stack", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_to", "unbind",
             "take_along_dim", "meshgrid", "cartesian_prod", "kron", "trace", "cross", "cdist", "std_mean",
             "var_mean", "aminmax", "cumprod", "count_nonzero", "nonzero", "allclose", "isclose", "equal",
             "nan_to_num", "atan2", "hypot", "logit", "xlogy", "sinc", "fmod", "bernoulli", "index_fill",
             "index_add"]


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
