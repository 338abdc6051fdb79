"""The factories: tensor, as_tensor, from_numpy, from_dlpack, zeros, ones, full, empty, eye, and the
random draws randn, rand, randint, randperm, multinomial from hg.manual_seed's generator (unless one
is given). Sizes are read as PyTorch reads them (zeros(2, 3) or zeros((2, 3))); a size that would
not fit in memory is refused before anything is made (_fits_in_memory).
"""
import builtins as _builtins
import os as _os

import numpy as _np

from . import _C, _args, _names
from ._C import Error, Generator, Tensor

from ._dtypes import bool, float32, float64, int64  # noqa: A004
_NUMPY_OF = {float32: _np.float32, float64: _np.float64, int64: _np.int64, bool: _np.bool_}


_default_generator = Generator(0)


def manual_seed(seed) -> Generator:
    """Reseeds the generator randn uses when given none (torch.manual_seed)."""
    _default_generator.manual_seed(seed)
    return _default_generator


def _infer_dtype(data, arr):
    """PyTorch's rule: bools stay bool, integers become int64, Python floats the default dtype
    (hg.get_default_dtype(), float32 unless set), and a NumPy array keeps its float32 or float64."""
    if arr.dtype == _np.bool_:
        return bool
    if arr.dtype.kind in "iu":
        return int64
    if isinstance(data, (_np.ndarray, _np.generic)) and arr.dtype in (_np.float32, _np.float64):  # np.float64(2.5) too
        return float64 if arr.dtype == _np.float64 else float32
    return _names.get_default_dtype()


def tensor(data, dtype=None, device=None, requires_grad=False, *, name=None) -> Tensor:
    """A new tensor holding a copy of data: a number, nested lists, a NumPy array or a Tensor.
    ``name`` (handgrad's own) labels it in graphs, pages and error messages (``.name`` later)."""
    if isinstance(data, Tensor):
        data = data.detach().numpy() if data.device == "cpu" else data.detach().cpu().numpy()
    arr = _np.asarray(data)
    if dtype is None:
        dtype = _infer_dtype(data, arr)
    _args.known_dtype("hg.tensor", dtype)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"hg.tensor: cannot make a tensor from {type(data).__name__} (NumPy dtype {arr.dtype})")
    out = _C._from_numpy(_np.asarray(arr, dtype=_NUMPY_OF[dtype], order="C"))
    if device is not None and device != "cpu":
        out = out.to(device)
    if requires_grad:
        out.requires_grad_()
    if name is not None:
        if not isinstance(name, str):
            raise TypeError(f"hg.tensor: name must be a str, got {type(name).__name__}")
        out.name = name
    return out


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """as_tensor(data, dtype=None, device=None): data itself when it is a tensor of that dtype, else hg.tensor(data)."""
    return data if isinstance(data, Tensor) and dtype in (None, data.dtype) else tensor(data, dtype, device)


def from_numpy(array) -> Tensor:
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
        _args.known_dtype("hg." + make.__name__.lstrip("_"), dtype)
    out = make(_size(size, make.__name__.lstrip("_")), _names.get_default_dtype() if dtype is None else dtype, device or "cpu")
    return out.requires_grad_() if requires_grad else out


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """zeros(*size, dtype=None, device=None, requires_grad=False): a tensor of zeros (float32 unless given)."""
    return _factory(_C._zeros, size, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """ones(*size, dtype=None, device=None, requires_grad=False): a tensor of ones (float32 unless given)."""
    return _factory(_C._ones, size, dtype, device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of size filled with fill_value; without dtype, PyTorch's rule: bool for a bool,
    int64 for an int, float32 for a float."""
    if dtype is None:
        integral = isinstance(fill_value, (int, _np.integer))
        dtype = bool if isinstance(fill_value, (_builtins.bool, _np.bool_)) else int64 if integral else _names.get_default_dtype()
    out = _C._full(_size([size], "full"), fill_value, dtype, device or "cpu")
    return out.requires_grad_() if requires_grad else out


def randn(*size, generator=None, seed=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal draws; the same numbers for a seed on every run and platform."""
    if generator is None:
        generator = Generator(seed) if seed is not None else _default_generator
    out = _C._randn(_size(size, "randn"), generator, _names.get_default_dtype() if dtype is None else dtype)
    out = out.to(device) if device not in (None, "cpu") else out
    return out.requires_grad_() if requires_grad else out


def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of the given size to be written over: handgrad fills it with zeros (PyTorch leaves
    whatever memory held), so reading it before writing is defined here."""
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def randperm(n, generator=None, dtype=None, device=None) -> Tensor:
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
    _args.tensor("hg.multinomial", input)
    if isinstance(num_samples, _builtins.bool) or not isinstance(num_samples, (int, _np.integer)):
        raise TypeError(f"hg.multinomial: num_samples must be an int, got {num_samples!r}")
    if not isinstance(replacement, _builtins.bool):
        raise TypeError(f"hg.multinomial: replacement must be a bool, got {replacement!r}")
    return _C._multinomial(input, int(num_samples), replacement, generator or _default_generator)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform draws in [0, 1), from hg.manual_seed's generator unless one is given."""
    out = _C._rand(_size(size, "rand"), generator or _default_generator, _names.get_default_dtype() if dtype is None else dtype)
    out = out.to(device) if device not in (None, "cpu") else out
    return out.requires_grad_() if requires_grad else out


def randint(*args, size=None, generator=None, dtype=None, device=None) -> Tensor:
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


def _memory_limit():
    """The bytes this process may allocate: the machine's memory, or less under an address-space
    limit (ulimit -v); None where neither is known."""
    limits = []
    try:
        limits.append(_os.sysconf("SC_PAGE_SIZE") * _os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            limits.append(soft)
    except (ImportError, ValueError, OSError):
        pass
    return _builtins.min(limits) if limits else None


def _fits_in_memory(op, count, itemsize, copies=2):
    """An hg.Error before any work when count entries of itemsize bytes, copies times (a NumPy
    array first, then the tensor, by default), exceed what this process may allocate."""
    memory = _memory_limit()
    if memory is not None and copies * count * itemsize > memory:
        raise Error(f"{op}: {count} entries ({count * itemsize / 2**30:.3g} GiB, {copies} times while it is made) do "
                    f"not fit in the {memory / 2**30:.3g} GiB this process may use; give smaller sizes")


def eye(n, m=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The (n, m) identity: ones on the diagonal."""
    m = n if m is None else m
    for name, v in (("n", n), ("m", m)):
        if isinstance(v, _builtins.bool) or not isinstance(v, (int, _np.integer)) or v < 0:
            raise TypeError(f"hg.eye: {name} must be an int of 0 or more, got {v!r}")
    dtype = _names.get_default_dtype() if dtype is None else dtype
    _args.known_dtype("hg.eye", dtype)
    _fits_in_memory("hg.eye", int(n) * int(m), 8)
    out = tensor(_np.eye(int(n), int(m)), dtype=dtype)
    out = out.to(device) if device not in (None, "cpu") else out
    return out.requires_grad_() if requires_grad else out
