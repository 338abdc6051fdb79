"""handgrad: a tape-based autograd engine whose every backward is derived by hand.

PyTorch's names and semantics over the C++ library (handgrad._C), so that one lambda runs on
both::

    import handgrad as hg
    x = hg.tensor([[1., 2.], [3., 4.]], dtype=hg.float64, requires_grad=True)
    (x @ x).sum().backward()
    x.grad

This module imports and exports: the topic modules (_factories, _syntax, _rearrange, _compare,
_arith, _extras, _joins, _contractions, _indexed, _forms, ...) spell the library's calls the way
PyTorch users expect (varargs shapes, indexing, repr, NumPy input); every computation happens in
C++.
"""

from . import _C
from ._C import Error, Generator, IndexError, Tensor, cuda_is_available, is_grad_enabled  # noqa: A004
from ._C import exp, log, matmul, relu, tanh  # noqa: A004
from ._C import (abs, acos, acosh, asin, asinh, atan, atanh, ceil, cos, cosh, exp2, expm1, floor,  # noqa: A004
                 log1p, log2, reciprocal, rsqrt, sigmoid, sign, silu, sin, sinh, square, tan, trunc)

__version__ = _C.__version__

float32 = _C.dtype.float32
float64 = _C.dtype.float64
int64 = _C.dtype.int64
bool = _C.dtype.bool  # noqa: A001 (PyTorch's name: torch.bool)
float = float32  # noqa: A001
double = float64
long = int64
dtype = _C.dtype

from ._factories import _require_dtype, _require_tensor  # noqa: E402,F401 (the other modules' checks)
from . import autograd  # noqa: E402  (needs the names above)
from . import nn  # noqa: E402
from .graph import draw, to_dot  # noqa: E402
from .page import live_page, live_page_available, to_html  # noqa: E402
from . import _rearrange  # noqa: E402
from ._rearrange import (amax, amin, argmin, cumsum, diag, diag_embed, diagonal, flatten, flip, gather, index_select,  # noqa: E402
                         lerp, logsumexp, masked_select, maximum, min, minimum, movedim, moveaxis, narrow, prod,  # noqa: A004
                         roll, scatter_add, stack, std, tile, tril, triu, unflatten, var)

_rearrange.attach()
from . import _compare  # noqa: E402
from ._compare import (all, any, clamp, clip, eq, ge, greater, greater_equal, gt, isfinite, isinf, isnan,  # noqa: E402,A004
                       le, less, less_equal, logical_and, logical_not, logical_or, logical_xor, lt, masked_fill, ne,
                       not_equal, where)

_compare.attach()
from . import _arith  # noqa: E402
from ._arith import (add, div, divide, floor_divide, mul, multiply, neg, negative, pow, remainder, sub,  # noqa: E402,A004
                     subtract, true_divide)

_arith.attach()
from . import linalg  # noqa: E402


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """norm(input, p='fro', dim=None, keepdim=False): torch.norm. A number p (None: 2) is the vector
    p-norm of the entries over dim (hg.linalg.vector_norm); 'fro' over dim None, one dim or two is
    the 2-norm of those entries; 'nuc' (or 'fro' over more dims) is hg.linalg.matrix_norm over dim
    (every dim when None: a 2-d input)."""
    _require_tensor(input, "hg.norm")
    if isinstance(p, str):
        if p == "fro" and (dim is None or not isinstance(dim, (list, tuple)) or len(dim) <= 2):
            return linalg.vector_norm(input, 2, dim, keepdim, dtype=dtype)
        dim = tuple(range(input.dim())) if dim is None else dim
        return linalg.matrix_norm(input, p, dim, keepdim, dtype=dtype)
    return linalg.vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype)


Tensor.norm = norm
from . import _extras  # noqa: E402
from ._extras import (aminmax, allclose, argsort, bernoulli, cdist, count_nonzero, cross, cumprod,  # noqa: E402
                      equal, isclose, kron, logit, msort, nan_to_num, nonzero, sinc, sort, std_mean, topk, trace,
                      var_mean)

_extras.attach()
from . import _pointwise  # noqa: E402
from ._pointwise import (arctan2, atan2, copysign, fmax, fmin, fmod, hypot, logaddexp, logaddexp2,  # noqa: E402
                         xlogy)
from ._C import erf, erfc, erfinv, log10  # noqa: E402

_pointwise.attach()
from . import _contractions, _indexed, _joins  # noqa: E402
from ._contractions import bmm, dot, einsum, mm, outer, tensordot  # noqa: E402
from ._indexed import index_add, index_fill, repeat_interleave, scatter, take_along_dim  # noqa: E402
from ._joins import (atleast_1d, atleast_2d, atleast_3d, broadcast_to, cartesian_prod, cat, column_stack,  # noqa: E402
                     dstack, hstack, meshgrid, unbind, vstack)
from . import _creation, _order_stats, _products, _scans, _search, _shapes  # noqa: E402
from ._creation import arange, rand_like, randint_like, randn_like, tril_indices, triu_indices  # noqa: E402
from ._order_stats import median, nanmean, nanmedian, nanquantile, nansum, quantile  # noqa: E402
from ._products import addcdiv, addcmul, addmm, addmv, baddbmm, inner, mv, vdot  # noqa: E402
from ._scans import cummax, cummin, diff, logcumsumexp  # noqa: E402
from ._search import bucketize, searchsorted, unique, unique_consecutive  # noqa: E402
from ._shapes import broadcast_shapes, broadcast_tensors, rot90, take, tensor_split  # noqa: E402

for _module in (_contractions, _indexed, _joins, _order_stats, _products, _scans, _search, _shapes):
    _module.attach()
# PyTorch's argument forms: device= on the *_like factories, x.max(y), the mean over an empty dim, dtype= on
# softmax, memory_format= on the casts
from . import _forms  # noqa: E402
from ._forms import (empty_like, full_like, linspace, log_softmax, max, mean, ones_like, softmax,  # noqa: E402,A004
                     zeros_like)

_forms.attach()


def argmax(input, dim=None, keepdim=False):
    """argmax(x, dim=None, keepdim=False): the flat position of the largest entry, or per dim."""
    _require_tensor(input, "hg.argmax")
    return input.argmax(dim, keepdim)


def chunk(input, chunks, dim=0):
    """chunk(x, chunks, dim=0): x cut into chunks pieces of one size along dim (the last smaller), as views."""
    _require_tensor(input, "hg.chunk")
    return input.chunk(chunks, dim)


def split(tensor, split_size_or_sections, dim=0):
    """split(x, size_or_sizes, dim=0): x cut along dim into pieces of that size (or those sizes), as views."""
    _require_tensor(tensor, "hg.split")
    return tensor.split(split_size_or_sections, dim)


def sqrt(input):
    """sqrt(x): the square root, elementwise."""
    _require_tensor(input, "hg.sqrt")
    return input.sqrt()


def transpose(input, dim0, dim1):
    """transpose(x, dim0, dim1): x with the two dims swapped (a view)."""
    _require_tensor(input, "hg.transpose")
    return input.transpose(dim0, dim1)


def permute(input, dims):
    """permute(x, dims): x with its dims in the order dims names (a view)."""
    _require_tensor(input, "hg.permute")
    return input.permute(*dims)


def reshape(input, shape):
    """reshape(x, shape): x's entries in a new shape (a view where the layout allows, else a copy)."""
    _require_tensor(input, "hg.reshape")
    return input.reshape(*shape)


def squeeze(input, dim=None):
    """squeeze(x, dim=None): x without its size-1 dims (or without dim, when it has size 1)."""
    _require_tensor(input, "hg.squeeze")
    return input.squeeze() if dim is None else input.squeeze(dim)


def unsqueeze(input, dim):
    """unsqueeze(x, dim): x with a size-1 dim inserted at dim (a view)."""
    _require_tensor(input, "hg.unsqueeze")
    return input.unsqueeze(dim)


def t(input):
    """t(x): a matrix transposed (0-d and 1-d tensors as they are)."""
    _require_tensor(input, "hg.t")
    return input.t()


def numel(input):
    """numel(x): the number of entries."""
    _require_tensor(input, "hg.numel")
    return input.numel()


def clone(input):
    """clone(x): a copy, in the graph (its gradient passes through)."""
    _require_tensor(input, "hg.clone")
    return input.clone()


def round(input, decimals=0):  # noqa: A001
    """round(x, decimals=0): half to even, as PyTorch's; with decimals, round(x · 10^d) / 10^d."""
    _require_tensor(input, "hg.round")
    return _extras.round_(input, decimals)


Tensor.round = lambda self, decimals=0: round(self, decimals)
_extras.attach_inplace()
from . import optim  # noqa: E402
from .autograd import enable_grad, no_grad, set_grad_enabled  # noqa: E402

from . import _factories, _syntax  # noqa: E402
from ._factories import (_default_generator, _fits_in_memory, as_tensor, empty, eye, from_dlpack,  # noqa: E402,F401
                         from_numpy, full, manual_seed, multinomial, ones, rand, randint, randn, randperm, tensor,
                         zeros)

_syntax.attach()


def sum(input, dim=None, keepdim=False, *, axis=None, dtype=None):  # noqa: A001
    """sum(x, dim=None, keepdim=False, *, dtype=None): the sum over dim (every dim when None; axis= too)."""
    _require_tensor(input, "hg.sum")
    return input.sum(dim, keepdim, axis=axis, dtype=dtype)


from . import func  # noqa: E402  (hg.func.jvp, as torch.func.jvp)

__all__ = [
    "Error", "Generator", "Tensor", "autograd", "func", "nn", "optim", "no_grad", "enable_grad", "set_grad_enabled",
    "is_grad_enabled", "tensor", "as_tensor", "from_numpy", "from_dlpack", "to_dot", "draw", "to_html", "live_page",
    "live_page_available", "zeros", "ones", "full",
    "zeros_like",
    "ones_like", "arange", "randn", "manual_seed", "float32", "float64", "int64", "bool", "dtype",
    "exp", "log", "tanh", "relu", "softmax", "where", "cat", "log_softmax", "matmul", "sum", "mean", "max",
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "exp2", "expm1", "floor",
    "log1p", "log2", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "silu", "sin", "sinh", "square", "tan",
    "trunc",
    "var", "std", "index_select", "flip", "roll", "diagonal", "diag", "tril", "triu", "flatten", "unflatten",
    "movedim", "moveaxis", "narrow", "masked_select", "amax", "amin", "min", "argmin", "logsumexp", "cumsum",
    "stack", "tile", "repeat_interleave", "maximum", "minimum", "lerp", "rand", "randint", "eye", "linspace",
    "full_like",
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "isfinite", "any", "all",
    "clamp", "clip",
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "pow", "neg", "subtract", "multiply",
    "divide", "negative", "gather", "scatter", "scatter_add", "prod", "diag_embed", "norm", "linalg",
    "randperm", "multinomial", "empty", "empty_like", "argmax", "chunk", "split", "sqrt", "transpose", "permute",
    "reshape", "squeeze", "unsqueeze", "t", "numel", "clone",
    "mm", "bmm", "dot", "outer", "tensordot", "einsum", "sort", "argsort", "msort", "topk", "hstack", "vstack",
    "dstack", "column_stack", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_to", "unbind", "take_along_dim",
    "meshgrid", "cartesian_prod", "kron", "trace", "cross", "cdist", "std_mean", "var_mean", "aminmax", "cumprod",
    "count_nonzero", "nonzero", "allclose", "isclose", "equal", "nan_to_num", "atan2", "hypot", "logit", "xlogy",
    "sinc", "fmod", "bernoulli", "index_fill", "index_add",
    "arctan2", "copysign", "fmax", "fmin", "logaddexp", "logaddexp2", "erf", "erfc", "erfinv", "log10",
    "cuda_is_available", "__version__", "masked_fill",
    "addmm", "addmv", "baddbmm", "addcmul", "addcdiv", "mv", "vdot", "inner", "nansum", "nanmean", "median",
    "nanmedian", "quantile", "nanquantile", "searchsorted", "bucketize", "unique", "unique_consecutive", "cummax",
    "cummin", "logcumsumexp", "diff", "broadcast_shapes", "broadcast_tensors", "tensor_split", "take", "rot90",
    "tril_indices", "triu_indices", "rand_like", "randn_like", "randint_like",
]
