"""handgrad: a tape-based autograd engine whose every backward is derived by hand.

PyTorch's names and semantics over the C++ library (handgrad._C), so that one lambda runs on
both::

    import handgrad as hg
    x = hg.tensor([[1., 2.], [3., 4.]], dtype=hg.float64, requires_grad=True)
    (x @ x).sum().backward()
    x.grad

This module only spells the library's calls the way PyTorch users expect (varargs shapes,
indexing, repr, NumPy input); every computation happens in C++.
"""

import builtins as _builtins
import os as _os
from collections import namedtuple as _namedtuple

import numpy as _np

from . import _C
from . import _indexing
from ._C import Error, Generator, IndexError, Tensor, cuda_is_available, is_grad_enabled  # noqa: A004
from ._C import cat, exp, log, log_softmax, matmul, mean, relu, softmax, sum, tanh, where  # noqa: A004
from ._C import (abs, acos, acosh, asin, asinh, atan, atanh, ceil, cos, cosh, exp2, expm1, floor,  # noqa: A004
                 log1p, log2, reciprocal, round, rsqrt, sigmoid, sign, silu, sin, sinh, square, tan, trunc)

__version__ = _C.__version__

float32 = _C.dtype.float32
float64 = _C.dtype.float64
int64 = _C.dtype.int64
bool = _C.dtype.bool  # noqa: A001 (PyTorch's name: torch.bool)
float = float32  # noqa: A001
double = float64
long = int64
dtype = _C.dtype

_NUMPY_OF = {float32: _np.float32, float64: _np.float64, int64: _np.int64, bool: _np.bool_}
_DTYPE_OF = {_np.dtype(v): k for k, v in _NUMPY_OF.items()}


def _require_tensor(x, op, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {name} must be a handgrad Tensor, got {type(x).__name__}")


def _require_dtype(dtype, op):
    if dtype not in _NUMPY_OF:
        raise TypeError(f"{op}: dtype must be one of hg.float32, hg.float64, hg.int64, hg.bool, got {dtype!r}")


from . import autograd  # noqa: E402  (needs the names above)
from . import nn  # noqa: E402
from .graph import draw, to_dot  # noqa: E402
from .page import live_page, live_page_available, to_html  # noqa: E402
from . import _rearrange  # noqa: E402
from ._rearrange import (amax, amin, argmin, cumsum, diag, diag_embed, diagonal, flatten, flip, gather, index_select,  # noqa: E402
                         lerp, logsumexp, masked_select, maximum, min, minimum, movedim, moveaxis, narrow, prod,  # noqa: A004
                         repeat_interleave, roll, scatter, scatter_add, stack, std, tile, tril, triu, unflatten, var)

_rearrange.attach()
from . import _compare  # noqa: E402
from ._compare import (all, any, clamp, clip, eq, ge, greater, greater_equal, gt, isfinite, isinf, isnan,  # noqa: E402,A004
                       le, less, less_equal, logical_and, logical_not, logical_or, logical_xor, lt, ne, not_equal, where)

_compare.attach()
from . import _arith  # noqa: E402
from ._arith import (add, div, divide, floor_divide, mul, multiply, neg, negative, pow, remainder, sub,  # noqa: E402,A004
                     subtract, true_divide)

_arith.attach()
from . import linalg  # noqa: E402


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """norm(input, p='fro', dim=None, keepdim=False): torch.norm, the vector p-norm of the entries
    over dim ('fro' is 2), hg.linalg.vector_norm's; other matrix norms ('nuc') are not implemented."""
    if isinstance(p, str) and p != "fro":
        raise Error(f"hg.norm: p={p!r} is not implemented; numbers, inf and 'fro' are")
    return linalg.vector_norm(input, 2 if p == "fro" else p, dim, keepdim, dtype=dtype)


Tensor.norm = norm
from . import _extras  # noqa: E402
from ._extras import (aminmax, allclose, argsort, atan2, atleast_1d, atleast_2d, atleast_3d, bernoulli,  # noqa: E402
                      bmm, broadcast_to, cartesian_prod, cdist, column_stack, count_nonzero, cross, cumprod, dot,
                      dstack, einsum, equal, fmod, hstack, hypot, index_add, index_fill, isclose, kron, logit,
                      meshgrid, mm, msort, nan_to_num, nonzero, outer, sinc, sort, std_mean, take_along_dim,
                      tensordot, topk, trace, unbind, var_mean, vstack, xlogy)

_extras.attach()


def argmax(input, dim=None, keepdim=False):
    """argmax(x, dim=None, keepdim=False): the flat position of the largest entry, or per dim."""
    _require_tensor(input, "hg.argmax")
    return input.argmax(dim, keepdim)


def chunk(input, chunks, dim=0):
    _require_tensor(input, "hg.chunk")
    return input.chunk(chunks, dim)


def split(tensor, split_size_or_sections, dim=0):
    _require_tensor(tensor, "hg.split")
    return tensor.split(split_size_or_sections, dim)


def sqrt(input):
    _require_tensor(input, "hg.sqrt")
    return input.sqrt()


def transpose(input, dim0, dim1):
    _require_tensor(input, "hg.transpose")
    return input.transpose(dim0, dim1)


def permute(input, dims):
    _require_tensor(input, "hg.permute")
    return input.permute(*dims)


def reshape(input, shape):
    _require_tensor(input, "hg.reshape")
    return input.reshape(*shape)


def squeeze(input, dim=None):
    _require_tensor(input, "hg.squeeze")
    return input.squeeze() if dim is None else input.squeeze(dim)


def unsqueeze(input, dim):
    _require_tensor(input, "hg.unsqueeze")
    return input.unsqueeze(dim)


def t(input):
    _require_tensor(input, "hg.t")
    return input.t()


def numel(input):
    _require_tensor(input, "hg.numel")
    return input.numel()


def clone(input):
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

_default_generator = Generator(0)


def manual_seed(seed):
    """Reseeds the generator randn uses when given none (torch.manual_seed)."""
    _default_generator.manual_seed(seed)
    return _default_generator


def _infer_dtype(data, arr):
    """PyTorch's rule: bools stay bool, integers become int64, Python floats float32, and a
    NumPy array keeps its float dtype."""
    if arr.dtype == _np.bool_:
        return bool
    if arr.dtype.kind in "iu":
        return int64
    if isinstance(data, _np.ndarray) and arr.dtype == _np.float64:
        return float64
    return float32


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of data: a number, nested lists, a NumPy array or a Tensor."""
    if isinstance(data, Tensor):
        data = data.detach().numpy() if data.device == "cpu" else data.detach().cpu().numpy()
    arr = _np.asarray(data)
    if dtype is None:
        dtype = _infer_dtype(data, arr)
    _require_dtype(dtype, "hg.tensor")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"hg.tensor: cannot make a tensor from {type(data).__name__} (NumPy dtype {arr.dtype})")
    out = _C._from_numpy(_np.asarray(arr, dtype=_NUMPY_OF[dtype], order="C"))
    if device is not None and device != "cpu":
        out = out.to(device)
    if requires_grad:
        out.requires_grad_()
    return out


def as_tensor(data, dtype=None, device=None):
    return data if isinstance(data, Tensor) and dtype in (None, data.dtype) else tensor(data, dtype, device)


def from_numpy(array):
    """A tensor over the NumPy array's memory, as torch.from_numpy: no copy, writes through either
    are seen by the other, and the tensor keeps the array alive."""
    if not isinstance(array, _np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    return _C._from_dlpack(array)


def from_dlpack(x):
    """A tensor over the memory of ``x`` (a PyTorch tensor, a NumPy array, anything with
    ``__dlpack__``), without a copy: writes through either are seen by the other. A write from the
    other side does not bump the tensor's version counter, so a backward that saved it would use
    the new values without a word; call ``t._bump_version()`` after such a write to have the
    backward refuse instead, as it does after handgrad's own in-place writes."""
    if isinstance(x, Tensor):
        return x
    return _C._from_dlpack(x)


def _size(size, op="size"):
    """zeros(2, 3) and zeros((2, 3)) both mean the shape (2, 3); each size an integer, as in PyTorch."""
    if len(size) == 1 and not isinstance(size[0], (int, _np.integer)):
        size = size[0]
    try:
        size = list(size)
    except TypeError:
        raise TypeError(f"hg.{op}: a size must be a sequence of integers, got {size!r}") from None
    for s in size:
        if isinstance(s, _builtins.bool) or not isinstance(s, (int, _np.integer)):
            raise TypeError(f"hg.{op}: sizes must be integers, got {s!r} in {tuple(size)!r}")
    return [int(s) for s in size]



def _factory(make, size, dtype, device, requires_grad):
    if dtype is not None:
        _require_dtype(dtype, "hg." + make.__name__.lstrip("_"))
    out = make(_size(size, make.__name__.lstrip("_")), float32 if dtype is None else dtype, device or "cpu")
    return out.requires_grad_() if requires_grad else out


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return _factory(_C._zeros, size, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _factory(_C._ones, size, dtype, device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    out = _C._full(_size([size], "full"), fill_value, float32 if dtype is None else dtype, device or "cpu")
    return out.requires_grad_() if requires_grad else out


def zeros_like(x, dtype=None, requires_grad=False):
    _require_tensor(x, "hg.zeros_like")
    return zeros(x.shape, dtype=dtype or x.dtype, device=x.device, requires_grad=requires_grad)


def ones_like(x, dtype=None, requires_grad=False):
    _require_tensor(x, "hg.ones_like")
    return ones(x.shape, dtype=dtype or x.dtype, device=x.device, requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """arange(end) or arange(start, end, step): int64 for integer arguments, else float32. As in
    PyTorch, the step is nonzero and points from start towards end (an empty range is fine)."""
    if end is None:
        start, end = 0, start
    for v in (start, end, step):
        if isinstance(v, _builtins.bool) or not isinstance(v, (int, _builtins.float, _np.integer, _np.floating)):
            raise TypeError(f"hg.arange: start, end and step must be numbers, got {v!r}")
        if not _np.isfinite(v):
            raise ValueError(f"hg.arange: start, end and step must be finite, got {v!r}")
    if step == 0:
        raise ValueError("hg.arange: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"hg.arange: the step {step} points away from end {end} (start {start})")
    count = _np.ceil((end - start) / step)
    if count > 2**40:
        raise ValueError(f"hg.arange: {count:.0f} elements from {start} to {end} by {step} is too many")
    if dtype is not None:
        _require_dtype(dtype, "hg.arange")
    integral = _builtins.all(isinstance(v, (int, _np.integer)) for v in (start, end, step))
    if dtype is None:
        dtype = int64 if integral else float32
    if integral and start == 0 and step == 1:
        out = _C._arange(int(end), dtype)
    else:
        out = tensor(_np.arange(start, end, step), dtype=dtype)
    out = out.to(device) if device not in (None, "cpu") else out
    return out.requires_grad_() if requires_grad else out


def randn(*size, generator=None, seed=None, dtype=None, device=None, requires_grad=False):
    """Standard normal draws; the same numbers for a seed on every run and platform."""
    if generator is None:
        generator = Generator(seed) if seed is not None else _default_generator
    out = _C._randn(_size(size, "randn"), generator, float32 if dtype is None else dtype)
    out = out.to(device) if device not in (None, "cpu") else out
    return out.requires_grad_() if requires_grad else out


def empty(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of the given size to be written over: handgrad fills it with zeros (PyTorch leaves
    whatever memory held), so reading it before writing is defined here."""
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(x, dtype=None, requires_grad=False):
    """empty(x.shape), on x's device, x's dtype unless given (zeros: see hg.empty)."""
    return zeros_like(x, dtype=dtype, requires_grad=requires_grad)


def randperm(n, generator=None, dtype=None, device=None):
    """A random permutation of 0 .. n-1 (int64), from hg.manual_seed's generator unless one is
    given: the order of n uniform draws (ops/sampling.cpp)."""
    if isinstance(n, _builtins.bool) or not isinstance(n, (int, _np.integer)) or n < 0:
        raise TypeError(f"hg.randperm: n must be an int ≥ 0, got {n!r}")
    out = _C._randperm(int(n), generator or _default_generator)
    out = out.to(dtype) if dtype is not None else out
    return out.to(device) if device not in (None, "cpu") else out


def multinomial(input, num_samples, replacement=False, generator=None):
    """Draws num_samples category indices from each row of input (weights ≥ 0, not necessarily
    summing to 1), with or without replacement, as torch.multinomial: int64, (num_samples,) for a
    1-d input, (rows, num_samples) for a 2-d one, each draw inverting the running sum of the
    weights left (ops/sampling.cpp), from hg.manual_seed's generator unless one is given."""
    _require_tensor(input, "hg.multinomial")
    if isinstance(num_samples, _builtins.bool) or not isinstance(num_samples, (int, _np.integer)):
        raise TypeError(f"hg.multinomial: num_samples must be an int, got {num_samples!r}")
    if not isinstance(replacement, _builtins.bool):
        raise TypeError(f"hg.multinomial: replacement must be a bool, got {replacement!r}")
    return _C._multinomial(input, int(num_samples), replacement, generator or _default_generator)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform draws in [0, 1), from hg.manual_seed's generator unless one is given."""
    out = _C._rand(_size(size, "rand"), generator or _default_generator, float32 if dtype is None else dtype)
    out = out.to(device) if device not in (None, "cpu") else out
    return out.requires_grad_() if requires_grad else out


def randint(*args, size=None, generator=None, dtype=None, device=None):
    """randint(high, size) or randint(low, high, size): integers uniform in [low, high), int64."""
    if size is not None:
        args = args + (size,)
    if len(args) == 2:
        args = (0,) + args
    if len(args) != 3:
        raise TypeError("hg.randint: give randint(high, size) or randint(low, high, size)")
    low, high, shape = args
    for name, v in (("low", low), ("high", high)):
        if isinstance(v, _builtins.bool) or not isinstance(v, (int, _np.integer)):
            raise TypeError(f"hg.randint: {name} must be an int, got {v!r}")
    if low >= high:
        raise ValueError(f"hg.randint: low {low} must be below high {high}")
    out = _C._randint(_size([shape], "randint"), generator or _default_generator, int(low), int(high))
    if dtype is not None and dtype != int64:
        out = out.to(dtype)
    return out.to(device) if device not in (None, "cpu") else out


def _fits_in_memory(op, count, itemsize):
    """An hg.Error before any work when count entries of itemsize bytes, twice (a NumPy float64 array
    first, then the tensor), exceed this machine's memory."""
    try:
        memory = _os.sysconf("SC_PAGE_SIZE") * _os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return
    if 2 * count * itemsize > memory:
        raise Error(f"{op}: {count} entries ({count * itemsize / 2**30:.3g} GiB, and a copy) do not fit in this "
                    f"machine's {memory / 2**30:.3g} GiB; give smaller sizes")


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    """The (n, m) identity: ones on the diagonal."""
    m = n if m is None else m
    for name, v in (("n", n), ("m", m)):
        if isinstance(v, _builtins.bool) or not isinstance(v, (int, _np.integer)) or v < 0:
            raise TypeError(f"hg.eye: {name} must be an int of 0 or more, got {v!r}")
    dtype = float32 if dtype is None else dtype
    _require_dtype(dtype, "hg.eye")
    _fits_in_memory("hg.eye", int(n) * int(m), 8)
    out = tensor(_np.eye(int(n), int(m)), dtype=dtype)
    out = out.to(device) if device not in (None, "cpu") else out
    return out.requires_grad_() if requires_grad else out


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """steps numbers from start to end, evenly spaced (both ends included)."""
    if isinstance(steps, _builtins.bool) or not isinstance(steps, (int, _np.integer)) or steps < 0:
        raise TypeError(f"hg.linspace: steps must be an int of 0 or more, got {steps!r}")
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, _builtins.bool) or not isinstance(v, (int, _builtins.float, _np.integer, _np.floating)):
            raise TypeError(f"hg.linspace: {name} must be a number, got {v!r}")
    _fits_in_memory("hg.linspace", int(steps), 8)
    out = tensor(_np.linspace(start, end, int(steps)), dtype=float32 if dtype is None else dtype)
    out = out.to(device) if device not in (None, "cpu") else out
    return out.requires_grad_() if requires_grad else out


def full_like(x, fill_value, dtype=None, requires_grad=False):
    _require_tensor(x, "hg.full_like")
    return full(x.shape, fill_value, dtype=dtype or x.dtype, device=x.device, requires_grad=requires_grad)


# ---------------------------------------------------------------- Tensor, spelled as in PyTorch

_max = _namedtuple("max", ["values", "indices"])


def _tensor_max(self, dim=None, keepdim=False):
    """max() is the largest element; max(dim) is (values, indices), as torch.max."""
    out = self._max(dim, keepdim)
    return out if dim is None else _max(*out)


def _getitem(self, index):
    """Integers select (and drop the dimension), slices view, None adds a dimension and ...
    skips dimensions: PyTorch's basic indexing, every step a differentiable view."""
    if isinstance(index, Tensor):  # x[mask]: the entries where mask is true; x[ids]: rows ids (int64, 1-d)
        if index.dtype == bool and tuple(index.shape) == tuple(self.shape):
            return _rearrange.masked_select(self, index)
        if index.dtype == int64 and index.dim() == 1:
            return _rearrange.index_select(self, 0, index)
    if _indexing.is_advanced(index):  # lists, int64 and bool tensors: NumPy's rules (_indexing.py)
        return _indexing.read(self, index)
    if not isinstance(index, tuple):
        index = (index,)
    out, d, source = self, 0, 0  # d: the dimension of `out` the next index reads; source: the same in self
    for pos, i in enumerate(index):
        if i is Ellipsis:  # the indices after it take the last dimensions
            after = len([j for j in index[pos + 1:] if j is not None and j is not Ellipsis])
            source += out.dim() - after - d
            d = out.dim() - after
        elif i is None:
            out = out.unsqueeze(d)
            d += 1
        elif isinstance(i, slice):
            if i.step is not None and i.step <= 0:
                raise ValueError("hg.Tensor: slice step must be positive")
            if out.dim() <= d:
                raise IndexError(f"too many indices for a tensor of dimension {self.dim()} (shape {tuple(self.shape)})")
            start, stop, step = i.indices(out.shape[d])
            out = out._slice(d, start, stop, step)
            d += 1
            source += 1
        elif isinstance(i, (int, _np.integer)) and not isinstance(i, _builtins.bool):
            if out.dim() <= d:
                raise IndexError(f"too many indices for a tensor of dimension {self.dim()} (shape {tuple(self.shape)})")
            n = out.shape[d]
            if not -n <= int(i) < n:
                raise IndexError(f"index {int(i)} is out of range for dim {source} of size {n} (tensor of shape "
                                 f"{tuple(self.shape)}; accepted: {-n} to {n - 1})" if n else
                                 f"index {int(i)} is out of range for dim {source}, which is empty (tensor of shape "
                                 f"{tuple(self.shape)})")
            out = out.select(d, int(i))
            source += 1
        else:
            raise TypeError(f"hg.Tensor: unsupported index {i!r}")
    return out


def _setitem(self, index, value):
    if _indexing.is_advanced(index):
        return _indexing.write(self, index, value)
    target = self[index]
    if isinstance(value, Tensor):
        target.copy_(value)
    else:
        target.fill_(value)


def _iter(self):
    for i in range(len(self)):
        yield self[i]


def _tolist(self):
    return self.detach().cpu().numpy().tolist()


def _array(self, dtype=None, copy=None):
    arr = self.numpy()
    return arr if dtype is None else arr.astype(dtype, copy=False)


def _repr(self):
    arr = self.detach().cpu().numpy()
    # PyTorch's style: "1., 2." when every value is whole, else four decimals throughout
    finite = arr[_np.isfinite(arr)] if arr.dtype.kind == "f" else arr
    whole = arr.dtype.kind != "f" or _builtins.bool(_np.all(finite == _np.round(finite)))
    body = _np.array2string(arr, separator=", ", prefix="tensor(", precision=4,
                            floatmode="maxprec" if whole else "fixed")
    extras = []
    if self.dtype not in (float32, int64, bool):
        extras.append(f"dtype={self.dtype!r}")
    if self.device != "cpu":
        extras.append(f"device='{self.device}'")
    if self.grad_fn is not None:
        extras.append(f"grad_fn=<{self.grad_fn.name()}>")
    elif self.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"


Tensor.max = _tensor_max
Tensor.__getitem__ = _getitem
Tensor.__setitem__ = _setitem
Tensor.__iter__ = _iter
Tensor.tolist = _tolist
Tensor.__array__ = _array
Tensor.__repr__ = _repr


def _format(self, spec):
    """f"{t:.2f}" formats a one-element tensor's number, as PyTorch's."""
    if self.dim() == 0 or (spec and self.numel() == 1):
        return format(self.item(), spec)
    return format(repr(self), spec)


Tensor.__format__ = _format


def _int(self):
    """x.int(): int64 — handgrad's one integer dtype (PyTorch's is int32; the values are the same
    where int32 holds them)."""
    return self.to(int64)


def _half(self):
    raise Error("Tensor.half(): handgrad has no float16; use .float() (float32) or .double()")


Tensor.int = _int
Tensor.half = _half
Tensor.__str__ = _repr
Tensor.__hash__ = object.__hash__
Tensor.T = property(lambda self: self.permute(*range(self.dim() - 1, -1, -1)))


def max(input, dim=None, keepdim=False):  # noqa: A001
    """max(x), max(x, dim, keepdim) → (values, indices), or max(x, y): the elementwise maximum."""
    _require_tensor(input, "hg.max")
    if isinstance(dim, Tensor):
        return maximum(input, dim)
    return input.max(dim, keepdim)


_tensor_sum, _tensor_mean = Tensor.sum, Tensor.mean


def _reduction(method, name):
    def reduce(self, dim=None, keepdim=False, *, axis=None, dtype=None):
        if axis is not None:  # NumPy's spelling, which PyTorch accepts too
            if dim is not None:
                raise TypeError(f"{name}(): give dim or axis, not both")
            dim = axis
        x = self.to(dtype) if dtype is not None else self
        return method(x, dim, keepdim)
    reduce.__name__ = name
    reduce.__doc__ = f"{name}(dim=None, keepdim=False, *, dtype=None): over dim (an int or a tuple; axis= too)."
    return reduce


Tensor.sum, Tensor.mean = _reduction(_tensor_sum, "sum"), _reduction(_tensor_mean, "mean")


def sum(input, dim=None, keepdim=False, *, axis=None, dtype=None):  # noqa: A001
    _require_tensor(input, "hg.sum")
    return input.sum(dim, keepdim, axis=axis, dtype=dtype)


def mean(input, dim=None, keepdim=False, *, axis=None, dtype=None):
    _require_tensor(input, "hg.mean")
    return input.mean(dim, keepdim, axis=axis, dtype=dtype)


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
    "stack", "tile", "repeat_interleave", "maximum", "minimum", "lerp", "rand", "randint", "eye", "linspace", "full_like",
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
    "cuda_is_available", "__version__",
]
