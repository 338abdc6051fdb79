"""handgrad: a tape-based autograd engine whose every backward is derived by hand.

PyTorch's names and semantics over the C++ library (handgrad._C), so that one lambda runs on
both::

    import handgrad as hg
    x = hg.tensor([[1., 2.], [3., 4.]], dtype=hg.float64, requires_grad=True)
    (x @ x).sum().backward()
    x.grad

This module only imports and exports: the topic modules (_factories, _syntax, _rearrange, _compare,
_arith, _extras, _joins, _contractions, _indexed, _forms, _functions, ...) spell the library's calls
the way PyTorch users expect (varargs shapes, indexing, repr, NumPy input), each attaching its
Tensor methods in the order below (a later module may build on an earlier one's); _args holds the
checks they share. Every computation happens in C++.
"""

from . import _C
from ._C import Error, Generator, IndexError, Tensor, __version__, cuda_is_available, is_grad_enabled  # noqa: A004,F401
from ._C import exp, log, matmul, relu, tanh  # noqa: A004
from ._C import (abs, acos, acosh, asin, asinh, atan, atanh, ceil, cos, cosh, exp2, expm1, floor,  # noqa: A004
                 log1p, log2, reciprocal, rsqrt, sigmoid, sign, silu, sin, sinh, square, tan, trunc)
from ._C import dtype
from ._dtypes import bool, double, float, float32, float64, int64, long  # noqa: A004

from . import autograd
from . import nn
from .graph import draw, to_dot
from .page import live_page, live_page_available, to_html
from . import _rearrange
from ._rearrange import (amax, amin, argmin, cumsum, diag, diag_embed, diagonal, flatten, flip, gather,  # noqa: A004
                         index_select, lerp, logsumexp, masked_select, maximum, min, minimum, movedim, moveaxis,
                         narrow, prod, roll, scatter_add, stack, std, tile, tril, triu, unflatten, var)
_rearrange.attach()
from . import _compare
from ._compare import (all, any, clamp, clip, eq, ge, greater, greater_equal, gt, isfinite, isinf, isnan,  # noqa: A004
                       le, less, less_equal, logical_and, logical_not, logical_or, logical_xor, lt, masked_fill, ne,
                       not_equal, where)
_compare.attach()
from . import _arith
from ._arith import (add, div, divide, floor_divide, mul, multiply, neg, negative, pow, remainder, sub,  # noqa: A004
                     subtract, true_divide)
_arith.attach()
from . import linalg
from . import _functions
from ._functions import (argmax, chunk, clone, norm, numel, permute, reshape, round, split, sqrt, squeeze,  # noqa: A004
                         sum, t, transpose, unsqueeze)
_functions.attach()
from . import _extras
from ._extras import (aminmax, allclose, argsort, bernoulli, cdist, count_nonzero, cross, cumprod,
                      equal, isclose, kron, logit, msort, nan_to_num, nonzero, sinc, sort, std_mean, topk, trace,
                      var_mean)
_extras.attach()
from . import _methods
_methods.attach()
from . import _pointwise
from ._pointwise import (arctan2, atan2, copysign, fmax, fmin, fmod, hypot, logaddexp, logaddexp2,
                         xlogy)
from ._C import erf, erfc, erfinv, log10
_pointwise.attach()
from . import _contractions, _indexed, _joins
from ._contractions import bmm, dot, einsum, mm, outer, tensordot
from ._indexed import index_add, index_fill, repeat_interleave, scatter, take_along_dim
from ._joins import (atleast_1d, atleast_2d, atleast_3d, broadcast_to, cartesian_prod, cat, column_stack,
                     dstack, hstack, meshgrid, unbind, vstack)
from . import _creation, _order_stats, _products, _scans, _search, _shapes
from ._creation import arange, rand_like, randint_like, randn_like, tril_indices, triu_indices
from ._order_stats import median, nanmean, nanmedian, nanquantile, nansum, quantile
from ._products import addcdiv, addcmul, addmm, addmv, baddbmm, inner, mv, vdot
from ._scans import cummax, cummin, diff, logcumsumexp
from ._search import bucketize, searchsorted, unique, unique_consecutive
from ._shapes import broadcast_shapes, broadcast_tensors, rot90, take, tensor_split
_contractions.attach()
_indexed.attach()
_joins.attach()
_order_stats.attach()
_products.attach()
_scans.attach()
_search.attach()
_shapes.attach()
# PyTorch's argument forms: device= on the *_like factories, x.max(y), the mean over an empty dim, dtype= on
# softmax, memory_format= on the casts
from . import _forms
from ._forms import (empty_like, full_like, linspace, log_softmax, max, mean, ones_like, softmax,  # noqa: A004
                     zeros_like)
_forms.attach()
_extras.attach_inplace()
from . import optim
from .autograd import enable_grad, no_grad, set_grad_enabled
from . import _factories, _syntax
from ._factories import (as_tensor, empty, eye, from_dlpack, from_numpy, full, manual_seed, multinomial, ones, rand,
                         randint, randn, randperm, tensor, zeros)
_syntax.attach()
from . import func  # hg.func.jvp, as torch.func.jvp
from . import _names
from ._names import (Size, bfloat16, cdouble, cfloat, complex64, complex128, device, float16, get_default_dtype, half,
                     int8, int16, int32, set_default_dtype, short, uint8)
_names.attach()
from . import cuda
from ._serialize import load, save


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
