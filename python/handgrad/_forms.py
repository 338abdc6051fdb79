"""PyTorch's argument forms for a few calls whose first spelling lacked them: the *_like factories
with device=, linspace between 0-d tensors, x.max(y) (maximum), the mean over an empty dim (NaN,
as PyTorch's), softmax and log_softmax with dtype= (the input cast first), and the casts
x.float(), x.double(), x.long(), x.int(), x.bool() with memory_format=. Each form only reads its
arguments and calls the library's op; nothing here computes on its own.
"""
import builtins

from . import _C, _args, _factories, _names
from ._C import Tensor

_FLOATS = (_C.dtype.float32, _C.dtype.float64)


def _device(op, device, default):
    """None: default (the input's device); 'cpu', 'cuda' or 'cuda:0' as the library spells it."""
    if device is None:
        return default
    if not isinstance(device, str):
        raise TypeError(f"{op}(): device must be 'cpu' or 'cuda' (a str), not {type(device).__name__}")
    return "cuda" if device == "cuda:0" else device


def _like(op, input, dtype, device):
    _args.tensor(op, input)
    return (input.dtype if dtype is None else dtype), _device(op, device, input.device)


def zeros_like(input, dtype=None, *, device=None, requires_grad=False, layout=None, memory_format=None):
    """zeros_like(x, dtype=None, *, device=None, requires_grad=False): zeros of x's shape, in x's
    dtype and on x's device unless given ('cpu', 'cuda')."""
    dtype, device = _like("zeros_like", input, dtype, device)
    return _args.hg().zeros(tuple(input.shape), dtype=dtype, device=device, requires_grad=requires_grad)


def ones_like(input, dtype=None, *, device=None, requires_grad=False, layout=None, memory_format=None):
    """ones_like(x, dtype=None, *, device=None, requires_grad=False): ones of x's shape, in x's
    dtype and on x's device unless given."""
    dtype, device = _like("ones_like", input, dtype, device)
    return _args.hg().ones(tuple(input.shape), dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(input, dtype=None, *, device=None, requires_grad=False, layout=None, memory_format=None):
    """empty_like(x, dtype=None, *, device=None, requires_grad=False): hg.empty of x's shape (zeros:
    handgrad fills what PyTorch leaves unwritten)."""
    dtype, device = _like("empty_like", input, dtype, device)
    return _args.hg().empty(tuple(input.shape), dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(input, fill_value, dtype=None, *, device=None, requires_grad=False, layout=None, memory_format=None):
    """full_like(x, fill_value, dtype=None, *, device=None, requires_grad=False): fill_value in x's
    shape, x's dtype (the value cast to it) and x's device unless given."""
    dtype, device = _like("full_like", input, dtype, device)
    return _args.hg().full(tuple(input.shape), fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


def _endpoint(name, v):
    """A number, or a 0-d tensor's number (as PyTorch's linspace reads them)."""
    if isinstance(v, Tensor):
        if v.dim() != 0:
            raise _C.Error(f"linspace(): {name} must be a number or a 0-d tensor, got a tensor of shape "
                           f"{tuple(v.shape)}")
        return v.item()
    return v


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False, *, layout=None):
    """linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False): steps numbers
    from start to end, evenly spaced, both ends included; start and end are numbers or 0-d tensors
    (read as numbers: the result is float32 unless dtype is given, as PyTorch's). PyTorch's rule:
    the first half counts up from start, the second down from end; for hg.int64 the ends are
    truncated to integers first and each value after."""
    hg = _args.hg()
    start, end = _endpoint("start", start), _endpoint("end", end)
    if isinstance(steps, builtins.bool) or not hasattr(steps, "__index__") or steps < 0:
        raise TypeError(f"linspace(): steps must be an int of 0 or more, got {steps!r}")
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, (builtins.bool, str)) or not hasattr(v, "__float__"):
            raise TypeError(f"linspace(): {name} must be a number, got {v!r}")
    dtype = _names.get_default_dtype() if dtype is None else dtype
    _args.known_dtype("hg.linspace", dtype)
    if dtype == hg.bool:
        raise TypeError("linspace(): dtype must be a number type, not hg.bool (as PyTorch's)")
    _factories._fits_in_memory("hg.linspace", int(steps), 8)
    import numpy as np
    n = int(steps)
    if dtype == hg.int64:
        if not all(np.isfinite(float(v)) for v in (start, end)):
            raise ValueError(f"linspace(): hg.int64 needs finite ends, got {start} and {end}")
        start, end = int(start), int(end)
    real = np.float32 if dtype == hg.float32 else np.float64  # the arithmetic of PyTorch's kernel
    first, last = real(start), real(end)
    step = (last - first) / real(builtins.max(n - 1, 1))
    i = np.arange(n, dtype=real)
    with np.errstate(invalid="ignore", over="ignore"):
        values = np.where(i < n // 2, first + step * i, last - step * (real(n - 1) - i)) if n > 1 else np.full(n, first)
    out = hg.tensor(np.trunc(values) if dtype == hg.int64 else values, dtype=dtype)
    out = out if device in (None, "cpu") else out.to(_device("linspace", device, "cpu"))
    return out.requires_grad_() if requires_grad else out


_MaxResult = _args.result("max")


def max(input, dim=None, keepdim=False):  # noqa: A001 (PyTorch's name)
    """max(x): the largest entry; max(x, dim, keepdim=False) → (values, indices), the first maximum;
    max(x, other), with a tensor, is maximum(x, other)."""
    _args.tensor("max", input)
    if isinstance(dim, Tensor):
        return _args.hg().maximum(input, dim)
    if dim is None:
        return input._max(None, False)
    return _MaxResult(*input._max(_args.integer("max", "dim", dim), _args.boolean("max", "keepdim", keepdim)))


def _reduced_sizes(x, dim):
    """The sizes of the dims dim names (every dim when None or ()); None when a dim is not one of x's
    (the library's op then says so)."""
    if dim is None:
        return tuple(x.shape)
    dims = list(dim) if isinstance(dim, (list, tuple)) else [dim]
    if not dims:
        return tuple(x.shape)
    rank = builtins.max(x.dim(), 1)
    if not builtins.all(isinstance(d, int) and not isinstance(d, builtins.bool) and -rank <= d < rank for d in dims):
        return None
    return tuple(x.shape[d] for d in dims) if x.dim() else ()


def mean(input, dim=None, keepdim=False, *, axis=None, dtype=None):
    """mean(x, dim=None, keepdim=False, *, dtype=None): the mean over dim (an int or a tuple; every
    dim when None; axis= too). Over an empty dim it is NaN (0 / 0), as PyTorch's."""
    _args.tensor("mean", input)
    if axis is not None:  # NumPy's spelling, which PyTorch accepts too
        if dim is not None:
            raise TypeError("mean(): give dim or axis, not both")
        dim = axis
    x = input.to(dtype) if dtype is not None else input
    sizes = _reduced_sizes(x, dim)
    if x.dtype in _FLOATS and sizes is not None and 0 in sizes:
        return _C.sum(x, dim, keepdim) / 0.0  # Σ of nothing over a count of nothing
    return _C.mean(x, dim, keepdim)


def _cast(op, input, dtype):
    _args.tensor(op, input)
    if dtype is None:
        return input
    _args.known_dtype(f"hg.{op}", dtype)
    return input.to(dtype)


def softmax(input, dim, dtype=None):
    """softmax(x, dim, dtype=None): exp(x − max) / Σ exp(x − max) along dim; x cast to dtype first
    when given (PyTorch's way to take a float32 input's softmax in float64)."""
    return _C.softmax(_cast("softmax", input, dtype), _args.integer("softmax", "dim", dim))


def log_softmax(input, dim, dtype=None):
    """log_softmax(x, dim, dtype=None): x − max − log Σ exp(x − max) along dim; x cast to dtype
    first when given."""
    return _C.log_softmax(_cast("log_softmax", input, dtype), _args.integer("log_softmax", "dim", dim))


_MEMORY_FORMATS = ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d")


def _cast_to(name, dtype, doc):
    def cast(self, memory_format=None):
        if memory_format is not None and str(memory_format).rsplit(".", 1)[-1] not in _MEMORY_FORMATS:
            raise TypeError(f"{name}(): memory_format must be one of torch's memory formats "
                            f"({', '.join(_MEMORY_FORMATS)}), not {memory_format!r}")
        return self.to(dtype)
    cast.__name__ = name
    cast.__doc__ = (f"x.{name}(memory_format=None): {doc} (x.to(...)). memory_format (one of "
                    "torch's: contiguous_format, preserve_format, channels_last, ...) is accepted and changes no "
                    "value: a handgrad tensor has one layout, row-major.")
    return cast


def _half(self, memory_format=None):
    """x.half(): refused, handgrad has no float16."""
    raise _C.Error("Tensor.half(): handgrad has no float16; use .float() (float32) or .double()")


def attach():
    """The same forms as Tensor methods: x.max(y), x.mean(dim, dtype=), x.softmax(dim, dtype=),
    and the casts with memory_format=."""
    Tensor.max = max
    Tensor.mean = mean
    Tensor.softmax = softmax
    Tensor.log_softmax = log_softmax
    d = _C.dtype
    Tensor.float = _cast_to("float", d.float32, "x as hg.float32")
    Tensor.double = _cast_to("double", d.float64, "x as hg.float64")
    Tensor.long = _cast_to("long", d.int64, "x as hg.int64")
    Tensor.int = _cast_to("int", d.int64, "x as hg.int64, handgrad's one integer dtype (PyTorch's is int32; the "
                                          "values are the same where int32 holds them)")
    Tensor.bool = _cast_to("bool", d.bool, "x as hg.bool (nonzero is True)")
    Tensor.half = _half
