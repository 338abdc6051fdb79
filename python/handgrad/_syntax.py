"""Tensor spelled as in PyTorch: indexing (basic, and advanced through _indexing.py), iteration,
tolist, __array__, repr and str in PyTorch's style, format, hashing by identity, x.T, and sum with
dim=None, axis= and dtype=. Only spelling: each step is a library op (a view, select,
index_select or masked_select), so its gradient is the library's.
"""
import builtins

import numpy as np

from . import _C, _indexing
from ._C import Tensor
from ._rearrange import index_select, masked_select


def _getitem(self, index):
    """Integers select (and drop the dimension), slices view, None adds a dimension and ...
    skips dimensions: PyTorch's basic indexing, every step a differentiable view."""
    if isinstance(index, Tensor):  # x[mask]: the entries where mask is true; x[ids]: rows ids (int64, 1-d)
        if index.dtype == _C.dtype.bool and tuple(index.shape) == tuple(self.shape):
            return masked_select(self, index)
        if index.dtype == _C.dtype.int64 and index.dim() == 1:
            return index_select(self, 0, index)
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
        elif isinstance(i, (int, np.integer)) and not isinstance(i, builtins.bool):
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
    """x.tolist(): the elements as nested Python lists (a number for a 0-d tensor)."""
    return self.detach().cpu().numpy().tolist()


def _reversed_dims(self):
    """x.T: the dims in reverse order (a matrix transposed; a view)."""
    return self.permute(*range(self.dim() - 1, -1, -1))


def _array(self, dtype=None, copy=None):
    arr = self.numpy()
    return arr if dtype is None else arr.astype(dtype, copy=False)


def _repr(self):
    arr = self.detach().cpu().numpy()
    # PyTorch's style: "1., 2." when every value is whole, else four decimals throughout
    finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
    whole = arr.dtype.kind != "f" or builtins.bool(np.all(finite == np.round(finite)))
    body = np.array2string(arr, separator=", ", prefix="tensor(", precision=4,
                            floatmode="maxprec" if whole else "fixed")
    extras = []
    if self.dtype not in (_C.dtype.float32, _C.dtype.int64, _C.dtype.bool):
        extras.append(f"dtype={self.dtype!r}")
    if self.device != "cpu":
        extras.append(f"device='{self.device}'")
    if self.grad_fn is not None:
        extras.append(f"grad_fn=<{self.grad_fn.name()}>")
    elif self.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"


def _format(self, spec):
    """f"{t:.2f}" formats a one-element tensor's number, as PyTorch's."""
    if self.dim() == 0 or (spec and self.numel() == 1):
        return format(self.item(), spec)
    return format(repr(self), spec)


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


def attach():
    """The spellings above as Tensor's dunders and methods."""
    Tensor.__getitem__ = _getitem
    Tensor.__setitem__ = _setitem
    Tensor.__iter__ = _iter
    Tensor.tolist = _tolist
    Tensor.__array__ = _array
    Tensor.__repr__ = _repr
    Tensor.__format__ = _format
    Tensor.__str__ = _repr
    Tensor.__hash__ = object.__hash__
    Tensor.T = property(_reversed_dims)
    Tensor.sum = _reduction(_C.Tensor.sum, "sum")
