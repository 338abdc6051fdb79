"""The names a PyTorch user reaches for first: hg.Size, hg.device, the dtypes handgrad does not
build (hg.int32, hg.float16, ...), and the default dtype.

- ``hg.Size`` is torch.Size: a tuple of ints (``x.shape``, ``x.size()``) with ``numel()``.
- ``hg.device`` is torch.device (``.type``, ``.index``, ``device('cuda', 0)``, ``'cuda:0'``), and
  also a str of its name, so every ``device=`` that takes 'cpu' takes it unchanged. One difference
  follows: ``hg.device('cpu') == 'cpu'`` is True here, where torch.device never equals a str.
- handgrad computes in float32 and float64 and holds integers as int64 and masks as bool (the C++
  library's hg::DType). PyTorch's other dtypes exist as names, so code that mentions them imports,
  and any use (``x.to(hg.int32)``, ``dtype=hg.float16``) is an hg.Error saying which to use: a
  refusal, never a value computed in another type.
- ``hg.get_default_dtype()`` / ``hg.set_default_dtype(d)``: the float dtype the factories make
  when given none (float32, or float64).
"""
import operator

from . import _C
from ._C import Error, Tensor


class Size(tuple):
    """A tensor's shape, as torch.Size: a tuple of ints; slices and sums stay Sizes; numel() is
    their product."""

    def __new__(cls, sizes=()):
        try:
            return super().__new__(cls, (operator.index(s) for s in sizes))
        except TypeError:
            raise TypeError(f"hg.Size: takes an iterable of ints, got {sizes!r}") from None

    def __getitem__(self, key):
        out = super().__getitem__(key)
        return Size(out) if isinstance(key, slice) else out

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __repr__(self):
        return f"handgrad.Size({list(self)})"

    def __reduce__(self):
        return Size, (tuple(self),)

    def numel(self):
        """The number of entries of a tensor of this shape (1 for the 0-d shape)."""
        n = 1
        for s in self:
            n *= s
        return n


class device(str):  # noqa: N801 (PyTorch's name: torch.device)
    """A device, as torch.device: device('cpu'), device('cuda'), device('cuda', 0), device('cuda:0');
    .type and .index. It is also the str of its name ('cpu', 'cuda', 'cuda:0'), so it goes wherever
    a device name goes and equals that name (torch.device never equals a str). handgrad drives one
    GPU, cuda:0."""

    def __new__(cls, type, index=None):  # noqa: A002 (PyTorch's argument name)
        if isinstance(type, device):
            if index is not None:
                raise TypeError(f"hg.device: give a device or a type and an index, not {type!r} and {index!r}")
            return type
        if not isinstance(type, str):
            raise TypeError(f"hg.device: expected a device name such as 'cpu' or 'cuda:0', got {type!r}")
        kind, colon, number = type.partition(":")
        if colon:
            if index is not None or not number.isdigit():
                raise Error(f"hg.device: invalid device string {type!r}; expected 'cpu', 'cuda' or 'cuda:0'")
            index = int(number)
        if kind not in ("cpu", "cuda"):
            raise Error(f"hg.device: unknown device type {kind!r}; handgrad has 'cpu' and 'cuda'")
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int):
                raise TypeError(f"hg.device: the index must be an int, got {index!r}")
            if index < 0:
                raise Error(f"hg.device: the device index must not be negative, got {index}")
            if index != 0:
                raise Error(f"hg.device: {kind}:{index} does not exist; handgrad drives one {kind} device, index 0")
        # the name the C++ library reads: 'cpu' (one CPU), 'cuda' or 'cuda:0'
        name = kind if kind == "cpu" or index is None else f"{kind}:{index}"
        self = super().__new__(cls, name)
        self._type, self._index = kind, index
        return self

    @property
    def type(self):
        """'cpu' or 'cuda'."""
        return self._type

    @property
    def index(self):
        """The device's number (0), or None where none was given."""
        return self._index

    def __repr__(self):
        index = "" if self._index is None else f", index={self._index}"
        return f"device(type='{self._type}'{index})"

    def __reduce__(self):
        return device, (self._type, self._index)


class _NotBuiltDType:
    """One of PyTorch's dtypes that handgrad does not build: a name to compare and print; any use
    is an hg.Error saying what to use instead."""

    def __init__(self, name, itemsize, is_floating_point, is_complex, is_signed, instead):
        self._name, self.itemsize = name, itemsize
        self.is_floating_point, self.is_complex, self.is_signed = is_floating_point, is_complex, is_signed
        self._instead = instead

    def __repr__(self):
        return f"handgrad.{self._name}"

    __str__ = __repr__

    def refusal(self, op):
        """The hg.Error for op asked to make or compute in this dtype."""
        return Error(f"{op}: handgrad has no {self._name}: it computes in hg.float32 and hg.float64 and holds "
                     f"integers as hg.int64 and masks as hg.bool; {self._instead}")


_INT = "use hg.int64 (the same values wherever {} holds them)"
_FLOAT = "use hg.float32 (or hg.float64)"
int8 = _NotBuiltDType("int8", 1, False, False, True, _INT.format("int8"))
int16 = _NotBuiltDType("int16", 2, False, False, True, _INT.format("int16"))
int32 = _NotBuiltDType("int32", 4, False, False, True, _INT.format("int32"))
uint8 = _NotBuiltDType("uint8", 1, False, False, False, _INT.format("uint8"))
float16 = _NotBuiltDType("float16", 2, True, False, True, _FLOAT)
bfloat16 = _NotBuiltDType("bfloat16", 2, True, False, True, _FLOAT)
complex64 = _NotBuiltDType("complex64", 8, False, True, True, "keep the real and imaginary parts as two tensors")
complex128 = _NotBuiltDType("complex128", 16, False, True, True, "keep the real and imaginary parts as two tensors")
half, short, cfloat, cdouble = float16, int16, complex64, complex128

NOT_BUILT = (int8, int16, int32, uint8, float16, bfloat16, complex64, complex128)


def refuse_not_built(dtype, op):
    """An hg.Error when dtype is one of PyTorch's dtypes handgrad does not build; else nothing."""
    if isinstance(dtype, _NotBuiltDType):
        raise dtype.refusal(op)


_default_dtype = _C.dtype.float32


def get_default_dtype():
    """The dtype the factories make from Python floats when given none (torch.get_default_dtype):
    hg.float32 unless hg.set_default_dtype changed it."""
    return _default_dtype


def set_default_dtype(d):
    """Makes d (hg.float32 or hg.float64) the dtype of hg.tensor([1.0]), hg.zeros, hg.randn, ...
    when given none (torch.set_default_dtype). Integer and bool data keep hg.int64 and hg.bool."""
    global _default_dtype
    refuse_not_built(d, "hg.set_default_dtype")
    if not isinstance(d, _C.dtype) or d not in (_C.dtype.float32, _C.dtype.float64):
        raise TypeError(f"hg.set_default_dtype: only floating-point types are supported as the default type "
                        f"(hg.float32, hg.float64), got {d!r}")
    _default_dtype = d


def _to(self, *args, **kwargs):
    """x.to(dtype), x.to(device, dtype=None), x.to(other): x as that dtype and/or on that device (x
    itself when nothing changes, as PyTorch's). A dtype handgrad does not build is refused."""
    for a in (*args, *kwargs.values()):
        refuse_not_built(a, "Tensor.to")
    if len(args) == 1 and not kwargs and isinstance(args[0], Tensor):  # x.to(other): other's dtype and device
        args = (args[0].device, args[0].dtype)
    return _C_TO(self, *args, **kwargs)


_C_SHAPE = Tensor.shape.fget
_C_SIZE = Tensor.size
_C_DEVICE = Tensor.device.fget
_C_TO = Tensor.to


def _size(self, dim=None):
    """x.size(): the shape as an hg.Size; x.size(dim): that dim's size (an int)."""
    return _C_SIZE(self, dim) if dim is not None else Size(_C_SHAPE(self))


def attach():
    """x.shape and x.size() as hg.Size, x.device as hg.device, x.to refusing the dtypes not built."""
    Tensor.shape = property(lambda self: Size(_C_SHAPE(self)), doc="The shape, an hg.Size (torch.Size)")
    Tensor.size = _size
    Tensor.device = property(lambda self: device(_device_name(_C_DEVICE(self))),
                             doc="The device, an hg.device: device(type='cpu') or device(type='cuda', index=0)")
    Tensor.to = _to


def _device_name(name):
    # a tensor on the GPU is on cuda:0, as PyTorch's are (the C++ library's name is 'cuda')
    return "cuda:0" if name == "cuda" else name


__all__ = ["Size", "device", "get_default_dtype", "set_default_dtype", "int8", "int16", "int32", "uint8", "float16",
           "bfloat16", "complex64", "complex128", "half", "short", "cfloat", "cdouble"]
