"""PyTorch's dim and index rules spelled out over NumPy: the oracle test_dims.py compares handgrad
with where torch is not importable (and checks against PyTorch under HG_DIMS_ORACLE_CHECK=1)."""

import math
import warnings

import numpy as np


class Refused(Exception):
    """PyTorch refuses the call with something other than IndexError."""


def _int64(v):
    if not -2**63 <= v < 2**63:
        raise Refused(f"{v} does not fit an int64")
    return v


def wrap(d, r):
    n = max(r, 1)
    if not -n <= _int64(d) < n:
        raise IndexError(f"dim {d} out of range for rank {r}")
    return d % n


def wrap_existing(d, r):
    if r == 0 and _int64(d) is not None:
        raise IndexError("a 0-d tensor has no dimension")
    return wrap(d, r)


def wrap_insert(d, r):
    if not -r - 1 <= _int64(d) <= r:
        raise IndexError(f"dim {d} out of range for unsqueeze of rank {r}")
    return d % (r + 1)


def wrap_dims(dims, r):
    w = [wrap(d, r) for d in dims]
    if len(set(w)) != len(w):
        raise Refused(f"a dim appears twice in {dims}")
    return w


def wrap_index(i, n):
    if not -n <= _int64(i) < n:
        raise IndexError(f"index {i} out of range for size {n}")
    return i % n


def o_transpose(a, d0, d1):
    w0, w1 = wrap(d0, a.ndim), wrap(d1, a.ndim)
    return a.copy() if a.ndim == 0 else np.swapaxes(a, w0, w1)


def o_permute(a, dims):
    if len(dims) != a.ndim:
        raise Refused("permute: wrong number of dims")
    w = wrap_dims(dims, a.ndim)
    return a.copy() if a.ndim == 0 else np.transpose(a, w)


def o_squeeze(a, d):
    w = wrap(d, a.ndim)
    return np.squeeze(a, axis=w) if a.ndim and a.shape[w] == 1 else a.copy()


def o_squeeze_dims(a, dims):
    w = wrap_dims(dims, a.ndim)
    return np.squeeze(a, axis=tuple(i for i in w if a.ndim and a.shape[i] == 1))


def o_select(a, d, i):
    w = wrap_existing(d, a.ndim)
    return np.take(a, wrap_index(i, a.shape[w]), axis=w)


def o_reduce(fn):
    def reduce(a, dim=None, keepdim=False):
        axes = None
        if dim is not None:
            dims = [dim] if isinstance(dim, int) else list(dim)
            if dims:  # an empty list of dims reduces every dimension, as dim=None
                w = wrap_dims(dims, a.ndim)
                axes = tuple(w) if a.ndim else None
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(fn(a, axis=axes, keepdims=keepdim))
    return reduce


def o_max(a, dim=None, keepdim=False):
    if dim is None:
        if a.size == 0:
            raise Refused("max of no elements")
        return np.asarray(a.max())
    w = wrap(dim, a.ndim)
    if a.ndim == 0:
        return a.copy(), np.asarray(0)
    if a.shape[w] == 0:
        raise IndexError("max over an empty dimension")
    return np.max(a, axis=w, keepdims=keepdim), o_argmax(a, dim, keepdim)


def o_argmax(a, dim=None, keepdim=False):
    if dim is None:
        if a.size == 0:
            raise IndexError("argmax of no elements")
        i = np.asarray(np.argmax(a), dtype=np.int64)
        return i.reshape((1,) * a.ndim) if keepdim else i
    w = wrap(dim, a.ndim)
    if a.ndim == 0:
        return np.asarray(0)
    if a.shape[w] == 0:
        raise IndexError("argmax over an empty dimension")
    i = np.argmax(a, axis=w).astype(np.int64)
    return np.expand_dims(i, w) if keepdim else i


def o_softmax(log):
    def softmax(a, d):
        w = wrap(d, a.ndim)
        if a.ndim == 0:
            return np.zeros_like(a) if log else np.ones_like(a)
        if a.size == 0:
            return a.copy()
        z = a - a.max(axis=w, keepdims=True)
        s = np.exp(z).sum(axis=w, keepdims=True)
        return z - np.log(s) if log else np.exp(z) / s
    return softmax


def o_cat(arrays, d):
    r = arrays[0].ndim
    if r == 0:
        raise Refused("cat of 0-d tensors")
    w = wrap(d, r)
    for b in arrays[1:]:
        if b.ndim != r or any(b.shape[i] != arrays[0].shape[i] for i in range(r) if i != w):
            raise Refused("cat: shapes differ outside the cat dim")
    return np.concatenate(arrays, axis=w)


def _pieces(a, w, sizes):
    out, at = [], 0
    for s in sizes:
        out.append(np.take(a, range(at, at + s), axis=w))
        at += s
    return out


def o_split(a, size, d):
    if a.ndim == 0:
        raise Refused("split of a 0-d tensor")
    w = wrap(d, a.ndim)
    n = a.shape[w]
    if isinstance(size, int):
        if size < 0 or (size == 0 and n != 0):
            raise Refused("split_size")
        if n == 0:
            return [a.copy()]
        return _pieces(a, w, [min(size, n - at) for at in range(0, n, size)])
    if any(s < 0 for s in size) or sum(size) != n:
        raise Refused("split sizes")
    return _pieces(a, w, size)


def o_chunk(a, chunks, d):
    if a.ndim == 0:
        raise Refused("chunk of a 0-d tensor")
    if chunks <= 0:
        raise Refused("chunks must be positive")
    w = wrap(d, a.ndim)
    n = a.shape[w]
    if n == 0:
        return [a.copy() for _ in range(chunks)]
    step = -(-n // chunks)
    return _pieces(a, w, [min(step, n - at) for at in range(0, n, step)])


def o_expand(a, sizes):
    r, k = a.ndim, len(sizes)
    if k < r:
        raise Refused("expand: fewer sizes than dimensions")
    lead, target = k - r, []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise Refused("expand: -1 for a new leading dimension")
            target.append(s)
            continue
        src = a.shape[i - lead]
        if s == -1:
            target.append(src)
        elif s == src or (src == 1 and s >= 0):
            target.append(s)
        else:
            raise Refused("expand: size differs at a non-singleton dimension")
    return np.broadcast_to(a, target).copy()


def infer_shape(sizes, numel):
    if sum(s == -1 for s in sizes) > 1 or any(s < -1 for s in sizes):
        raise Refused("view: bad sizes")
    known = math.prod(s for s in sizes if s != -1)
    if -1 in sizes:
        if known == 0 or numel % known:
            raise Refused("view: -1 cannot be inferred")
        return tuple(numel // known if s == -1 else s for s in sizes)
    if known != numel:
        raise Refused("view: element count differs")
    return tuple(sizes)


def o_view(a, sizes):
    return a.reshape(infer_shape(sizes, a.size))


def _basic_index(index):
    index = index if isinstance(index, tuple) else (index,)
    for i in index:
        if isinstance(i, slice) and i.step is not None and i.step <= 0:
            raise Refused("slice step must be positive")
    return index


def o_getitem(a, index):
    return np.array(a[_basic_index(index)])


def o_setitem(a, index):
    b = a.copy()
    b[_basic_index(index)] = 1.5
    return b


def o_cross_entropy(a, t):
    c = a.shape[0] if a.ndim == 1 else a.shape[1]
    if np.any(((t < 0) | (t >= c)) & (t != -100)):
        raise IndexError("target out of bounds")
    z = np.moveaxis(a, 0 if a.ndim == 1 else 1, -1)
    logp = o_softmax(True)(z, -1)
    keep = t != -100
    picked = np.take_along_axis(logp, np.where(keep, t, 0)[..., None], axis=-1)[..., 0]
    return np.asarray(-picked[keep].mean())


def o_embedding(w, t):
    if np.any((t < 0) | (t >= w.shape[0])):
        raise IndexError("index out of range")
    return w[t]
