"""The one place the Python layer turns arguments into what the library takes and checks them: a
tensor, an int, a number, a dim (PyTorch's wrapping rule), a dtype, a dtype promotion, each
refused with the op's name and the shapes, the way PyTorch users read them; hg() is the package
itself, for the few compositions that call its public functions (imported when first called, so
that no module imports the package while it is being built).
"""
import collections
import numbers
import operator

import numpy as np

from . import _C, _names
from ._C import Tensor

FLOATS = (_C.dtype.float32, _C.dtype.float64)
DTYPES = (_C.dtype.float32, _C.dtype.float64, _C.dtype.int64, _C.dtype.bool)


def hg():
    """The package handgrad (its public functions, for the compositions that call them)."""
    import handgrad
    return handgrad


def result(op, fields=("values", "indices")):
    """The named tuple op returns, named as PyTorch's (torch.return_types.max: values, indices)."""
    return collections.namedtuple(op, fields)


def shape(x):
    return tuple(x.shape)


def dtype_name(d):
    """hg.float32, hg.int64, ...: a dtype as a user writes it."""
    return "hg." + str(d).rsplit(".", 1)[-1]


def called(op):
    """The op as a type error names it: a bare name as PyTorch writes it (cat()), a qualified one as
    it is (hg.nn.functional.linear)."""
    return op if op.startswith("hg.") else op + "()"


def tensor(op, x, name="input"):
    """x, refused unless it is a handgrad Tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{called(op)}: {name} must be a handgrad Tensor, not {type(x).__name__}")
    return x


def float_tensor(op, x, name="input"):
    """x, refused unless it is a float32 or float64 handgrad Tensor."""
    return floating(op, tensor(op, x, name), name)


def known_dtype(op, d):
    """d, refused unless it is one of the library's dtypes (hg.int32, hg.float16, ... with what to use)."""
    _names.refuse_not_built(d, called(op))
    if d not in DTYPES:
        raise TypeError(f"{called(op)}: dtype must be one of hg.float32, hg.float64, hg.int64, hg.bool, got {d!r}")
    return d


def integer(op, name, v):
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError(f"{op}(): {name} must be an int, not {type(v).__name__}")
    return operator.index(v)


def number(op, name, v):
    """A real number (a bool counts, as in PyTorch's Scalar)."""
    if not isinstance(v, numbers.Real):
        raise TypeError(f"{op}(): {name} must be a number, not {type(v).__name__}")
    return v


def boolean(op, name, v):
    if not isinstance(v, bool):
        raise TypeError(f"{op}(): {name} must be a bool, not {type(v).__name__}")
    return v


def dim(op, x, d):
    """d wrapped into [0, rank): PyTorch's rule, with −1 and 0 accepted for a 0-d tensor."""
    d = integer(op, "dim", d)
    rank = max(x.dim(), 1)
    if not -rank <= d < rank:
        raise IndexError(f"{op}(): dim {d} is out of range for a tensor of shape {shape(x)} "
                         f"(accepted: {-rank} to {rank - 1})")
    return d % rank


def floating(op, x, name="input"):
    if x.dtype not in FLOATS:
        raise TypeError(f"{op}(): {name} must be hg.float32 or hg.float64, got {dtype_name(x.dtype)}")
    return x


def promoted(*tensors):
    """PyTorch's promotion among tensors: float64 over float32 over int64 over bool."""
    order = [_C.dtype.bool, _C.dtype.int64, _C.dtype.float32, _C.dtype.float64]
    return max((t.dtype for t in tensors), key=order.index)


def same_dtype(op, *tensors):
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        raise TypeError(f"{op}(): expected one dtype, got {', '.join(dtype_name(t.dtype) for t in tensors)}; "
                        "convert with .to(dtype)")


def host(x):
    """x's values as a NumPy array (on the host, outside the tape)."""
    x = x.detach()
    return np.asarray((x if x.device == "cpu" else x.cpu()).numpy())


def from_host(array, like):
    """A NumPy array as a tensor on like's device (no grad)."""
    out = _C._from_numpy(np.array(array, order="C"))  # a copy: the tensor owns its memory; 0-d stays 0-d
    return out if like.device == "cpu" else out.to(like.device)


def index_tensor(array, like):
    return from_host(np.asarray(array, dtype=np.int64), like)
