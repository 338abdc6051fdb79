"""hg.linalg: torch.linalg's vector_norm, norm (vectors), svdvals and matrix_rank over the
library's ops (ops/linalg.h): the norm is composed of recorded ops (its gradient is theirs, 0 where
the norm is 0, as PyTorch's); singular values come from one-sided Jacobi rotations in float64 and
carry no gradient (svdvals refuses a tensor that requires grad; the rank is piecewise constant)."""
import math
import operator

from . import _C
from ._C import Tensor

__all__ = ["vector_norm", "norm", "svdvals", "matrix_rank"]


def _tensor(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): input must be a handgrad Tensor, not {type(x).__name__}")
    return x


def _dims(op, dim):
    if dim is None:
        return []
    if isinstance(dim, (list, tuple)):
        return [_int(op, d) for d in dim]
    return [_int(op, dim)]


def _int(op, v):
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError(f"{op}(): dim must be an int or a tuple of ints, not {type(v).__name__}")
    return operator.index(v)


def _ord(op, ord):
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"{op}(): ord must be a number (inf and -inf included), not {ord!r}")
    return float(ord)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """vector_norm(x, ord=2, dim=None, keepdim=False): (Σ |x|^ord)^(1/ord) over dim (every entry
    when None); ord inf is max |x|, -inf min |x|, 0 the count of nonzeros."""
    _tensor("vector_norm", x)
    if dtype is not None:
        x = x.to(dtype)
    return _C._vector_norm(x, _ord("vector_norm", ord), _dims("vector_norm", dim), bool(keepdim))


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """norm(A, ord=None, dim=None, keepdim=False): the vector norm of every entry (ord None, or a
    1-d dim). Matrix norms ('fro', 'nuc', ...) are not implemented, except 'fro' over two dims
    (the 2-norm of their entries)."""
    _tensor("norm", A)
    dims = _dims("norm", dim)
    if ord == "fro" and (dim is None or len(dims) == 2):
        ord = 2
    elif isinstance(ord, str) or (ord is not None and len(dims) == 2):
        raise _C.Error(f"hg.linalg.norm: the matrix norm ord={ord!r} is not implemented; "
                                  "vector norms and 'fro' are")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def svdvals(A):
    """svdvals(A): the singular values of each matrix of A (..., m, n), largest first. No gradient:
    call it on A.detach()."""
    _tensor("svdvals", A)
    return _C._svdvals(A)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None):
    """matrix_rank(A, *, atol=None, rtol=None): how many singular values exceed
    max(atol, rtol · σ_max); by default rtol = max(m, n) · ε of A's dtype, as in PyTorch."""
    _tensor("matrix_rank", A)
    if tol is not None:
        if atol is not None:
            raise TypeError("matrix_rank(): give tol or atol, not both")
        atol = tol
    for name, v in (("atol", atol), ("rtol", rtol)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v)):
            raise TypeError(f"matrix_rank(): {name} must be a number, not {v!r}")
    return _C._matrix_rank(A, None if atol is None else float(atol), None if rtol is None else float(rtol))
