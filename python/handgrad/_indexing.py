"""Advanced indexing, reading and writing, with NumPy's (and PyTorch's) rules: lists, int64 and
bool tensors and arrays mixed with integers, slices, None and ... (``x[:, [0, 2]]``,
``x[[0, 2], [1, 3]]``, ``x[rows_mask]``, ``x[mask] = 0``).

The positions an index names are worked out on the host from the tensor's shape alone: NumPy
indexes an array of flat positions (0 .. numel − 1) with the same index, so its rules decide the
result's shape and order. The read is then index_select of the flat tensor at those positions (its
gradient adds back into each entry read, once per read); the write is scatter at them (the last
write to a place wins), copied into the tensor as a basic-index write is.
"""
import numpy as np

from . import _C
from ._C import Tensor


def is_advanced(index):
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, (Tensor, list, np.ndarray)) or (isinstance(i, (bool, np.bool_))) for i in parts)


def _numpy_part(i):
    if isinstance(i, Tensor):
        if i.dtype not in (_C.dtype.int64, _C.dtype.bool):
            raise IndexError(f"hg.Tensor: tensors used as indices must be int64 or bool, not {i.dtype}")
        return i.detach().cpu().numpy()
    if isinstance(i, list):
        a = np.asarray(i)
        if a.size and a.dtype.kind not in "iub":
            raise IndexError(f"hg.Tensor: a list used as an index must hold ints or bools, got {i!r}")
        return a.astype(np.int64) if a.size == 0 else a
    if isinstance(i, np.ndarray) and i.dtype.kind not in "iub":
        raise IndexError(f"hg.Tensor: an array used as an index must hold ints or bools, not {i.dtype}")
    return i


def positions(x, index):
    """The flat positions of x that index names, as a NumPy int64 array of the result's shape."""
    parts = index if isinstance(index, tuple) else (index,)
    flat = np.arange(x.numel(), dtype=np.int64).reshape(tuple(x.shape))
    try:
        return np.asarray(flat[tuple(_numpy_part(i) for i in parts)])
    except IndexError as e:
        raise IndexError(f"hg.Tensor: {e} (tensor of shape {tuple(x.shape)})") from None


def _ids(sel, device):
    ids = _C._from_numpy(np.array(sel.reshape(-1), dtype=np.int64, order="C"))
    return ids.to(device) if device != "cpu" else ids


def read(x, index):
    sel = positions(x, index)
    picked = _C._index_select(x.reshape(-1), 0, _ids(sel, x.device))
    return picked.reshape(list(sel.shape))


def write(x, index, value):
    sel = positions(x, index)
    if not isinstance(value, Tensor):
        value = _C._full([], float(value), x.dtype, x.device)
    elif value.dtype != x.dtype:
        value = value.to(x.dtype)
    if sel.size == 0:
        return
    src = value.expand(*sel.shape) if value.dim() <= sel.ndim else value
    if tuple(src.shape) != sel.shape:
        raise _C.Error(f"hg.Tensor: a value of shape {tuple(value.shape)} cannot fill the {sel.shape} places "
                           "the index names")
    updated = _C._scatter(x.reshape(-1), 0, _ids(sel, x.device), src.reshape(-1))
    x.copy_(updated.reshape(list(x.shape)))
