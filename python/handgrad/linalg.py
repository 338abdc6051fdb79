"""hg.linalg: torch.linalg's vector_norm, matrix_norm, norm, svdvals and matrix_rank over the
library's ops (ops/linalg.h): the vector norms and the matrix norms 'fro', ±1, ±inf are composed of
recorded ops (their gradient is theirs, 0 where the norm is 0, as PyTorch's); singular values come
from one-sided Jacobi rotations in float64 and carry no gradient (svdvals, and the matrix norms ±2
and 'nuc' built on it, refuse a tensor that requires grad; the rank is piecewise constant)."""
import math as _math
import operator as _operator

import numpy as _np

from . import _C, _args
from ._C import Tensor as _Tensor
from ._extrema import _reduced

__all__ = ["vector_norm", "matrix_norm", "norm", "svdvals", "matrix_rank"]

_FLOATS = (_C.dtype.float32, _C.dtype.float64)


def _dims(op, dim):
    if dim is None:
        return []
    if isinstance(dim, (list, tuple)):
        return [_int(op, d) for d in dim]
    return [_int(op, dim)]


def _int(op, v):
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError(f"{op}(): dim must be an int or a tuple of ints, not {type(v).__name__}")
    return _operator.index(v)


def _ord(op, ord):
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"{op}(): ord must be a number (inf and -inf included), not {ord!r}")
    return float(ord)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """vector_norm(x, ord=2, dim=None, keepdim=False): (Σ |x|^ord)^(1/ord) over dim (every entry
    when None); ord inf is max |x|, -inf min |x|, 0 the count of nonzeros (its gradient is 0).
    As PyTorch's, the gradient is 0 where the norm is 0, and at an entry 0 for 0 < ord < 1."""
    _args.tensor("vector_norm", x)
    if dtype is not None:
        x = x.to(dtype)
    ord = _ord("vector_norm", ord)
    dims = _reduced("vector_norm", x, _dims("vector_norm", dim))  # dim 0 of a 0-d tensor: no dim (PyTorch's)
    if ord < 0 and not _math.isinf(ord) and x.dtype in _FLOATS:
        return _negative_order(x, ord, dims, bool(keepdim))
    return _C._vector_norm(x, ord, dims, bool(keepdim))


def _negative_order(x, ord, dims, keepdim):
    """ord < 0: a slice that holds a 0 has |0|^ord = inf in its sum and norm inf^(1/ord) = 0; its
    gradient is 0 (PyTorch's: sgn(x) |x|^(ord−1) · norm^(1−ord), and norm^(1−ord) is 0), where the
    chain rule through inf would give inf · 0 = NaN. So such slices read the norm of x with each 0
    replaced by 1, which has no inf in it, and take the value 0 (NaN where the slice holds a NaN)."""
    hg = _args.hg()
    if 0 in (tuple(x.shape) if not dims else tuple(x.shape[d] for d in dims)):
        raise _C.Error(f"vector_norm(): ord {ord} over an empty dim of shape {tuple(x.shape)} has no value (Σ of no "
                       "|x|^ord is 0, and 0^(1/ord) is not defined), as in PyTorch")
    at_zero = x == 0
    norm = _C._vector_norm(hg.where(at_zero, 1.0, x), ord, dims, keepdim)
    has_zero = at_zero.any(dims if dims else None, keepdim) if x.dim() else at_zero
    return hg.where(has_zero & (norm == norm), 0.0, norm)


def _matrix_dims(op, A, dim):
    if A.dim() < 2:
        raise _C.Error(f"{op}(): A must have at least 2 dimensions (a matrix, or a batch of them), got shape "
                       f"{tuple(A.shape)}")
    dims = _dims(op, dim)
    if not isinstance(dim, (list, tuple)) or len(dims) != 2:
        raise _C.Error(f"{op}(): dim must be a 2-tuple of dims, got {dim!r}")
    for d in dims:
        if not -A.dim() <= d < A.dim():
            raise IndexError(f"{op}(): dim {d} is out of range for A of shape {tuple(A.shape)} "
                             f"(accepted: {-A.dim()} to {A.dim() - 1})")
    d0, d1 = (d % A.dim() for d in dims)
    if d0 == d1:
        raise _C.Error(f"{op}(): the dims must be different, got {tuple(dims)} for A of shape {tuple(A.shape)}")
    return d0, d1


def _singular_values(op, A, d0, d1, ord):
    """The singular values of A's (d0, d1) matrices, as the last dim; refused when A's gradient is
    wanted (the library's singular values carry none)."""
    if A.requires_grad and _C.is_grad_enabled():
        raise _C.Error(f"{op}(): ord={ord!r} comes from singular values, which carry no gradient here, and A "
                       f"{tuple(A.shape)} requires grad. The orders 'fro', 1, -1, inf and -inf carry gradients; "
                       f"for {ord!r} call it on A.detach() or under hg.no_grad()")
    rest = [d for d in range(A.dim()) if d not in (d0, d1)]
    return _C._svdvals(A.permute(*rest, d0, d1))


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """matrix_norm(A, ord='fro', dim=(-2, -1), keepdim=False): a norm of each matrix that the two
    dims of A span. 'fro': √Σ a²; 1 / -1: the largest / smallest column sum of |a|; inf / -inf: the
    largest / smallest row sum; 2 / -2: the largest / smallest singular value; 'nuc': their sum.
    'fro', ±1 and ±inf are built from recorded ops (their gradient is theirs, ties shared as in
    amax); 2, -2 and 'nuc' use hg.linalg.svdvals and refuse an A that requires grad."""
    op = "matrix_norm"
    _args.tensor(op, A)
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise _C.Error(f"{op}(): ord {ord!r} is not a matrix norm: give 'fro', 'nuc', 1, -1, 2, -2, inf or -inf")
    elif isinstance(ord, bool) or not isinstance(ord, (int, float)) or abs(ord) not in (1, 2, _math.inf):
        raise _C.Error(f"{op}(): ord {ord!r} is not a matrix norm: give 'fro', 'nuc', 1, -1, 2, -2, inf or -inf")
    d0, d1 = _matrix_dims(op, A, dim)
    if dtype is not None:
        A = A.to(dtype)
    if A.dtype not in _FLOATS:
        raise TypeError(f"{op}(): A must be hg.float32 or hg.float64, got {A.dtype}; convert with .to(dtype)")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord == "nuc" or abs(ord) == 2:
        values = _singular_values(op, A, d0, d1, ord)
        if ord == "nuc" or (ord > 0 and values.shape[-1] == 0):  # σ ≥ 0: the largest of none is 0, as PyTorch's
            out = values.sum(-1)
        else:
            _nonempty(op, A, (d0, d1), ord)
            out = _C._amax(values, [-1], False) if ord > 0 else _C._amin(values, [-1], False)
        return out.reshape(*[1 if d in (d0, d1) else n for d, n in enumerate(A.shape)]) if keepdim else out
    # ±1: the extreme column sum of |a| (sum over d0, then over d1); ±inf: rows, the same on Aᵀ
    summed, across = (d1, d0) if _math.isinf(ord) else (d0, d1)
    if ord < 0:
        _nonempty(op, A, (across,), ord)
    sums = vector_norm(A, 1, summed, keepdim)
    across = across - 1 if not keepdim and summed < across else across
    if sums.shape[across] == 0 and ord > 0:  # every sum is ≥ 0: the largest of none is 0, as PyTorch's
        return sums.sum(across, keepdim)
    return _C._amax(sums, [across], keepdim) if ord > 0 else _C._amin(sums, [across], keepdim)


def _nonempty(op, A, dims, ord):
    for d in dims:
        if A.shape[d] == 0:
            raise IndexError(f"{op}(): ord={ord!r} takes the smallest (largest) of dim {d}, which is empty in A of "
                             f"shape {tuple(A.shape)}; the norm of an empty matrix is only defined for 'fro', 'nuc', "
                             "1, inf and 2")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """norm(A, ord=None, dim=None, keepdim=False): torch.linalg.norm. A vector norm (vector_norm)
    when dim is an int, or when dim is None and A is 1-d (ord None: the 2-norm of every entry); a
    matrix norm (matrix_norm) when dim is a 2-tuple, or when dim is None, ord given and A 2-d."""
    op = "norm"
    _args.tensor(op, A)
    dims = _dims(op, dim)
    if dim is not None and len(dims) not in (1, 2):
        raise _C.Error(f"{op}(): dim must be an int or a tuple of 1 or 2 ints, got {dim!r}")
    if dim is None and ord is not None and A.dim() not in (1, 2):
        raise _C.Error(f"{op}(): with ord given and dim None, A must be 1-d or 2-d, got shape {tuple(A.shape)}; "
                       "give dim")
    if isinstance(ord, str) or (ord is not None and (len(dims) == 2 if dim is not None else A.dim() == 2)):
        return matrix_norm(A, ord, tuple(dims) if dim is not None else (0, 1), keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def svdvals(A):
    """svdvals(A): the singular values of each matrix of A (..., m, n), largest first. No gradient:
    call it on A.detach()."""
    _args.tensor("svdvals", A)
    return _C._svdvals(A)


def _tolerance(name, v):
    """atol or rtol: None, a number, or a tensor (broadcast against A's batch), as float64 on the host."""
    if v is None:
        return None
    if isinstance(v, _Tensor):
        if v.dtype not in _FLOATS + (_C.dtype.int64, _C.dtype.bool):
            raise TypeError(f"matrix_rank(): {name} must be a number or a real tensor, not {v.dtype}")
        return _np.asarray(v.detach().cpu().numpy(), dtype=_np.float64)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or _math.isnan(v):
        raise TypeError(f"matrix_rank(): {name} must be a number or a tensor, not {v!r}")
    return _np.float64(v)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None):
    """matrix_rank(A, *, atol=None, rtol=None, hermitian=False): how many singular values of each
    matrix exceed max(atol, rtol · σ_max). atol and rtol are numbers or tensors broadcast against
    A's batch dims; rtol defaults to max(m, n) · ε of A's dtype, or to 0 where atol > 0 is given,
    as in PyTorch. hermitian=True reads each matrix as symmetric from its lower triangle (its
    singular values are then |eigenvalues|). tol is atol's old name."""
    _args.tensor("matrix_rank", A)
    if tol is not None:
        if atol is not None:
            raise TypeError("matrix_rank(): give tol or atol, not both")
        atol = tol
    if not isinstance(hermitian, bool):
        raise TypeError(f"matrix_rank(): hermitian must be a bool, not {type(hermitian).__name__}")
    atol, rtol = _tolerance("atol", atol), _tolerance("rtol", rtol)
    if A.dim() >= 2 and 0 in tuple(A.shape[-2:]):  # no row or no column: rank 0, as PyTorch's
        return _args.hg().zeros(tuple(A.shape[:-2]), dtype=_C.dtype.int64, device=A.device)
    plain = all(v is None or v.ndim == 0 for v in (atol, rtol))
    if plain and not hermitian:
        return _C._matrix_rank(A, None if atol is None else float(atol), None if rtol is None else float(rtol))
    if A.dim() < 2 or A.dtype not in _FLOATS:
        return _C._matrix_rank(A, None, None)  # the library's refusal, in its words
    m, n = A.shape[-2:]
    A = A.detach()
    if hermitian:
        if m != n:
            raise _C.Error(f"matrix_rank(): hermitian=True needs square matrices, got shape {tuple(A.shape)}")
        A = _C._tril(A, 0) + _C._tril(A, -1).transpose(-2, -1)  # the symmetric matrix of the lower triangle
    sigma = _np.asarray(_C._svdvals(A).cpu().numpy(), dtype=_np.float64)
    if rtol is None:
        default = _np.finfo(_np.float32 if A.dtype == _C.dtype.float32 else _np.float64).eps * max(m, n)
        rtol = _np.float64(default) if atol is None else _np.where(atol > 0, 0.0, default)
    atol = _np.float64(0.0) if atol is None else atol
    cutoff = _np.maximum(atol[..., None], rtol[..., None] * sigma.max(-1, keepdims=True))
    rank = (sigma > cutoff).sum(-1).astype(_np.int64)
    return _args.hg().tensor(_np.array(rank)).to(A.device)
