"""Every dim, list of dims and index the Python API takes, swept against PyTorch's rules.

Each call below (written as source, so that one string runs on handgrad and on PyTorch and names
the test) gets a tensor of rank 0–4 (sizes of 1 and a size-0 dimension among them), dims from
−r−2 to r+1 and indices from −n−1 to n. Where PyTorch accepts the call, handgrad must give its
result (shape, dtype and values); where PyTorch refuses it, handgrad must raise hg.Error,
IndexError, TypeError or ValueError — and IndexError itself where PyTorch raises IndexError (a
dim or an index out of range). A call PyTorch refuses and handgrad accepts is a bad dim let
through silently.

With torch importable, the expectation is PyTorch's own answer; without it, the oracle below,
which spells PyTorch's rules out over NumPy: a dim d of a rank-r tensor is valid iff −r ≤ d < r,
rank 0 counting as rank 1; unsqueeze takes −r−1..r; size, select, split, chunk and cat need a
dimension to exist; an index i into a size-n dimension is valid iff −n ≤ i < n.
HG_DIMS_ORACLE_CHECK=1 (with torch) checks the oracle against PyTorch as well.
"""

import itertools
import math
import os
import warnings
import zlib

import numpy as np
import pytest

import handgrad as hg

try:
    import torch
except ImportError:  # the oracle stands in for PyTorch
    torch = None

ALLOWED = (hg.Error, IndexError, TypeError, ValueError)
HG_INDEX_ERROR = getattr(hg, "IndexError", None) or getattr(hg._C, "IndexError", None)
CHECK_ORACLE = torch is not None and os.environ.get("HG_DIMS_ORACLE_CHECK") == "1"

SHAPES = [(), (3,), (1,), (0,), (2, 3), (1, 3), (2, 0, 3), (2, 1, 4), (2, 3, 1, 2)]
EXTREME = [2**62, -2**62, -2**63, 2**63]  # 2**63 does not fit an int64: refused, not wrapped


# ---------------------------------------------------------------- the oracle: PyTorch's rules

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


# ---------------------------------------------------------------- the cases

class Case:
    def __init__(self, shape, code, oracle, extras=None, stmt=False, legacy=False):
        self.shape, self.code, self.oracle = shape, code, oracle
        self.legacy = legacy  # PyTorch accepts it only by a legacy rule: refusing it is right too
        self.extras = extras or {}  # name -> NumPy array, a second tensor the call reads
        self.stmt = stmt  # exec'd (an assignment); the result is x afterwards

    @property
    def id(self):
        return f"{self.shape}: {self.code}"


def data(shape, salt=""):
    return np.random.default_rng(zlib.crc32(f"{shape}{salt}".encode())).standard_normal(shape)


def fmt_args(xs):
    return ", ".join(str(x) for x in xs)


def sizes_code(method, sizes):
    return f"x.{method}({fmt_args(sizes)})" if sizes else f"x.{method}(())"


def cases_for(shape):
    r = len(shape)
    dims = list(range(-r - 2, r + 2))
    out = []

    def add(code, oracle, **kw):
        out.append(Case(shape, code, oracle, **kw))

    # size, stride
    for d in dims + EXTREME:
        add(f"x.size({d})", lambda a, d=d: a.shape[wrap_existing(d, a.ndim)])
    add("x.size()", lambda a: a.shape)
    if shape in ((2, 3), (2, 1, 4)):
        for d in dims:
            add(f"x.stride({d})", lambda a, d=d: a.strides[wrap_existing(d, a.ndim)] // a.itemsize)

    # transpose, permute
    for d0, d1 in itertools.product(dims, dims):
        add(f"x.transpose({d0}, {d1})", lambda a, d0=d0, d1=d1: o_transpose(a, d0, d1))
    perms = [list(p) for p in itertools.permutations(range(r))]
    perms += [[d - r for d in p] for p in perms if p]  # the same orders, negative
    if r:
        perms += [list(range(r - 1)), list(range(r)) + [0], [r] + list(range(1, r)), [-r - 1] + list(range(1, r)),
                  list(range(r)) + [r]]
    if r >= 2:
        perms += [[0] * r, [1 - r] + [1] + list(range(2, r))]  # a dim twice (directly, or -r+1 and 1)
    for p in perms:
        add(f"x.permute({fmt_args(p)})" if p else "x.permute(())", lambda a, p=p: o_permute(a, p))
    if r:
        add(f"x.permute({list(range(r))[::-1]})", lambda a: o_permute(a, list(range(a.ndim))[::-1]))

    # unsqueeze, squeeze
    for d in dims + EXTREME:
        add(f"x.unsqueeze({d})", lambda a, d=d: np.expand_dims(a, wrap_insert(d, a.ndim)))
        add(f"x.squeeze({d})", lambda a, d=d: o_squeeze(a, d))
    add("x.squeeze()", lambda a: np.squeeze(a))
    for ds in sorted({(), (0,), (0, -1), tuple(range(r)), (r,), (-r - 1,)}):
        add(f"x.squeeze({ds})", lambda a, ds=ds: o_squeeze_dims(a, ds))

    # select
    for d in dims + EXTREME[:2]:
        w = d % r if r and -r <= d < r else None
        indices = list(range(-shape[w] - 1, shape[w] + 1)) + EXTREME if w is not None else [0]
        for i in indices:
            add(f"x.select({d}, {i})", lambda a, d=d, i=i: o_select(a, d, i))

    # x[...] and x[...] = v
    n0 = shape[0] if r else 0
    ints = list(range(-n0 - 1, n0 + 1))
    index_codes = [f"{i}" for i in ints] + ["np.int64(-1)", "...", "None", "None, None", "..., None", "None, ...",
                                            "None, ..., None", ":", "::2", "1::3", "::0", "::-1", "-2**62:2**62",
                                            "2**62:", ":, None", "..., 0", "0, ...", "0, None", "None, 0"]
    ends = ["", "-9", f"{-n0 - 1}", "-1", "0", "1", f"{n0}", f"{n0 + 1}"]
    index_codes += [f"{s}:{e}" for s, e in itertools.product(ends[1:], ends) if s != "-9"] + [f":{e}" for e in ends[1:]]
    if r:
        index_codes += [", ".join(["0"] * r), ", ".join(["0"] * (r + 1)), ", ".join([":"] * (r + 1)),
                        ", ".join([":"] * r), ", ".join(["0"] * r) + ", None", "..., " + ", ".join(["0"] * r)]
    if r >= 2:
        n1, nl = shape[1], shape[-1]
        index_codes += [f":, {i}" for i in range(-n1 - 1, n1 + 1)] + [f"..., {i}" for i in range(-nl - 1, nl + 1)]
        index_codes += [f"0, ..., {i}" for i in range(-nl - 1, nl + 1)] + [":, None, 1:", "None, ..., -1, None"]
    for code in dict.fromkeys(index_codes):
        add(f"x[{code}]", lambda a, code=code: o_getitem(a, eval(f"np.s_[{code}]")))
    for code in [f"{i}" for i in ints] + ["...", "None", ":, 0" if r >= 2 else ":", f"..., {-n0 - 1}"]:
        add(f"x[{code}] = 1.5", lambda a, code=code: o_setitem(a, eval(f"np.s_[{code}]")), stmt=True)

    # sum, mean
    for fn, np_fn in (("sum", np.sum), ("mean", np.mean)):
        red = o_reduce(np_fn)
        for d in dims + EXTREME:
            for keepdim in (False, True):
                add(f"x.{fn}({d}, keepdim={keepdim})", lambda a, red=red, d=d, k=keepdim: red(a, d, k))
            add(f"m.{fn}(x, dim={d})", lambda a, red=red, d=d: red(a, d))
        tuples = [(d0, d1) for d0, d1 in itertools.product(dims, dims)] if fn == "sum" else \
            [(0, -1), (-1, 0), (0, 0), (0, r), (-r - 1, 0)]
        tuples += [(), tuple(range(r)), tuple(range(-r, 0)), tuple(range(r)) + (0,)]
        for ds in tuples:
            add(f"x.{fn}({ds}, keepdim=True)", lambda a, red=red, ds=ds: red(a, ds, True))
            add(f"m.{fn}(x, {list(ds)})", lambda a, red=red, ds=ds: red(a, list(ds)))
        add(f"x.{fn}()", lambda a, red=red: red(a))
        add(f"x.{fn}(dim=None, keepdim=True)", lambda a, red=red: red(a, None, True))
        add(f"m.{fn}(x, (), keepdim=False)", lambda a, red=red: red(a, ()))

    # max, argmax
    for d in dims + EXTREME[:2]:
        add(f"x.max({d})", lambda a, d=d: o_max(a, d))
        add(f"x.max({d}, keepdim=True)", lambda a, d=d: o_max(a, d, True))
        add(f"m.max(x, {d})", lambda a, d=d: o_max(a, d))
        add(f"x.argmax({d})", lambda a, d=d: o_argmax(a, d))
        add(f"x.argmax({d}, keepdim=True)", lambda a, d=d: o_argmax(a, d, True))
    add("x.max()", lambda a: o_max(a))
    add("m.max(x)", lambda a: o_max(a))
    add("x.argmax()", lambda a: o_argmax(a))
    add("x.argmax(keepdim=True)", lambda a: o_argmax(a, None, True))

    # softmax, log_softmax: the method, hg.softmax and hg.nn.functional.softmax
    for name, log in (("softmax", False), ("log_softmax", True)):
        for d in dims + EXTREME[:2]:
            for code in (f"x.{name}({d})", f"m.{name}(x, {d})", f"F.{name}(x, dim={d})"):
                add(code, lambda a, d=d, log=log: o_softmax(log)(a, d))

    # cat
    for d in dims + EXTREME[:2]:
        # PyTorch skips 1-D empty tensors in cat (a legacy rule), dim unchecked when all are
        legacy = shape == (0,) and not -1 <= d < 1
        add(f"m.cat([x, x], {d})", lambda a, d=d: o_cat([a, a], d), legacy=legacy)
        add(f"m.cat((x,), dim={d})", lambda a, d=d: o_cat([a], d), legacy=legacy)
        if r and -r <= d < r:
            w = d % r
            grown = data(shape[:w] + (2,) + shape[w + 1:], "y")
            add(f"m.cat([x, y, x], {d})", lambda a, d=d, y=grown: o_cat([a, y, a], d), extras={"y": grown})
            if r >= 2:  # differs outside the cat dimension
                other = (w + 1) % r
                bad = data(shape[:other] + (shape[other] + 1,) + shape[other + 1:], "z")
                add(f"m.cat([x, z], {d})", lambda a, d=d, z=bad: o_cat([a, z], d), extras={"z": bad})
    if r:
        lower = data(shape[:-1], "lower")  # one dimension fewer
        add("m.cat([x, y], 0)", lambda a, y=lower: o_cat([a, y], 0), extras={"y": lower})

    # split, chunk
    for d in dims + EXTREME[:2]:
        if r and -r <= d < r:
            n = shape[d % r]
            for s in sorted({-1, 0, 1, 2, n, n + 1}):
                add(f"x.split({s}, {d})", lambda a, s=s, d=d: o_split(a, s, d))
            for s in ([n], [0, n], [n, 0], [n + 1], [-1, n + 1], [], [1] * n) + (([1, n - 1],) if n else ()):
                add(f"x.split({s}, dim={d})", lambda a, s=s, d=d: o_split(a, list(s), d))
            for c in sorted({-1, 0, 1, 2, 3, n + 1}):
                add(f"x.chunk({c}, {d})", lambda a, c=c, d=d: o_chunk(a, c, d))
        else:
            add(f"x.split(1, {d})", lambda a, d=d: o_split(a, 1, d))
            add(f"x.split([1], {d})", lambda a, d=d: o_split(a, [1], d))
            add(f"x.chunk(1, {d})", lambda a, d=d: o_chunk(a, 1, d))
    add("x.split(2)", lambda a: o_split(a, 2, 0))
    add("x.chunk(2)", lambda a: o_chunk(a, 2, 0))

    # expand (-1 keeps a size; new dimensions lead)
    expands = [shape, (-1,) * r, (3,) + shape, (3,) + (-1,) * r, (-1,) + shape, (0,) + shape, shape[1:]]
    for i in range(r):
        expands += [shape[:i] + (5,) + shape[i + 1:], shape[:i] + (0,) + shape[i + 1:],
                    shape[:i] + (-2,) + shape[i + 1:]]
    for sizes in dict.fromkeys(expands):
        add(sizes_code("expand", sizes), lambda a, s=sizes: o_expand(a, s))
    add(f"x.expand({list((2,) + shape)})", lambda a: o_expand(a, (2,) + a.shape))

    # view, reshape (-1 infers one size; other negatives are refused)
    numel, last = math.prod(shape), (shape[-1] if r else 1)
    views = [(-1,), (numel,), shape, shape + (1,), (1,) + shape, (-1, last), (last, -1), (-1, -1), (-2,) + shape[1:],
             (numel + 1,), (0, -1), (-1, 0), (2, -1), (), (1, -1, 1), (-1, 1, 1), (numel, 0), (0,)]
    for sizes in dict.fromkeys(views):
        for method in ("view", "reshape"):
            add(sizes_code(method, sizes), lambda a, s=sizes: o_view(a, s))
    add(f"x.view({list(shape)})", lambda a: a.copy())
    add(f"x.reshape({tuple(reversed(shape))})", lambda a: a.reshape(a.shape[::-1]))
    return out


def refused(why):
    def oracle(a):
        raise Refused(why)
    return oracle


def special_cases():
    out = []
    # views of non-contiguous tensors: view where the strides allow it, reshape always
    out.append(Case((2, 3), "x.transpose(0, 1).view(-1)", refused("not viewable")))
    out.append(Case((2, 3), "x.transpose(0, 1).reshape(-1)", lambda a: a.T.reshape(-1)))
    out.append(Case((2, 1, 4), "x.transpose(0, 1).view(-1)", lambda a: a.transpose(1, 0, 2).reshape(-1)))
    out.append(Case((2, 1, 4), "x.transpose(0, 2).view(-1)", refused("not viewable")))
    out.append(Case((2, 1, 4), "x.transpose(0, 2).reshape(2, -1)", lambda a: a.transpose(2, 1, 0).reshape(2, -1)))
    out.append(Case((2, 3, 1, 2), "x.permute(0, 2, 1, 3).view(2, -1)",
                    lambda a: a.transpose(0, 2, 1, 3).reshape(2, -1)))
    out.append(Case((2, 3), "x[:, 1:].view(-1)", refused("not viewable")))
    out.append(Case((2, 3), "x[:, 1:].reshape(-1)", lambda a: a[:, 1:].reshape(-1)))
    # dims of views: the view's rank, not the base's
    out.append(Case((2, 3, 1, 2), "x[0].sum(2)", lambda a: a[0].sum(2)))
    out.append(Case((2, 3, 1, 2), "x[0].sum(3)", lambda a: o_reduce(np.sum)(a[0], 3)))
    out.append(Case((2, 3, 1, 2), "x[0, 0].softmax(-3)", lambda a: o_softmax(False)(a[0, 0], -3)))
    out.append(Case((2, 3, 1, 2), "x.squeeze(2).transpose(2, 3)", lambda a: o_transpose(a[:, :, 0], 2, 3)))
    out.append(Case((2, 3, 1, 2), "x.squeeze().select(2, 1)", lambda a: o_select(a[:, :, 0], 2, 1)))
    out.append(Case((2, 3, 1, 2), "x.unsqueeze(0).select(0, 0)", lambda a: a.copy()))
    out.append(Case((2, 3, 1, 2), "x.unsqueeze(0).select(0, 1)", lambda a: o_select(a[None], 0, 1)))
    # PyTorch's legacy rule: a 1-D empty tensor is skipped by cat, whatever the other's shape
    empty = np.zeros(0)
    out.append(Case((2, 3), "m.cat([x, e], 0)", refused("cat: shapes differ"), extras={"e": empty}, legacy=True))
    out.append(Case((2, 3), "m.cat([x, e], 1)", refused("cat: shapes differ"), extras={"e": empty}, legacy=True))
    out.append(Case((2, 3), "m.cat([], 0)", refused("cat of nothing")))
    # cross_entropy's targets index the class dimension (dim 1; dim 0 of a 1-D input)
    for shape in ((3,), (2, 3), (2, 3, 2)):
        c = shape[0] if len(shape) == 1 else shape[1]
        for v in list(range(-c - 1, c + 1)) + ([-100] if len(shape) > 1 else []):
            if len(shape) == 1:
                t = np.array(v)
            else:
                t = np.zeros((shape[0],) + shape[2:], dtype=np.int64)
                t.flat[-1] = v
            out.append(Case(shape, f"F.cross_entropy(x, t)  # t = {t.tolist()}",
                            lambda a, t=t: o_cross_entropy(a, t), extras={"t": t.astype(np.int64)}))
    # embedding's indices index the rows of the weight
    for v in range(-4, 4):
        for t in (np.array(v), np.array([v]), np.array([[0, v], [2, 1]])):
            out.append(Case((3, 2), f"F.embedding(t, x)  # t = {t.tolist()}", lambda a, t=t: o_embedding(a, t),
                            extras={"t": t.astype(np.int64)}))
    return out


CASES = list({c.id: c for c in [c for shape in SHAPES for c in cases_for(shape)] + special_cases()}.values())


# ---------------------------------------------------------------- running and comparing

def norm(r):
    """A result as ("T", shape, dtype, values), ("L", items) or ("I", int), whichever library made it."""
    if isinstance(r, hg.Tensor) or (torch is not None and isinstance(r, torch.Tensor)):
        r = np.array(r.detach().numpy())
    if isinstance(r, (np.ndarray, np.generic)):
        r = np.asarray(r)
        return ("T", tuple(r.shape), r.dtype.name, r)
    if isinstance(r, (tuple, list)):
        return ("L", tuple(norm(i) for i in r))
    if isinstance(r, int) and not isinstance(r, bool):
        return ("I", int(r))
    return ("?", repr(r))


def summary(n):
    tag = n[0]
    if tag == "T":
        return f"tensor shape {n[1]} {n[2]}"
    if tag == "L":
        return "[" + ", ".join(summary(i) for i in n[1]) + "]"
    return repr(n[1])


def differs(got, want):
    """None when equal, else what differs."""
    if got[0] != want[0]:
        return f"{summary(got)} vs {summary(want)}"
    if got[0] == "T":
        if got[1] != want[1] or got[2] != want[2]:
            return f"{summary(got)} vs {summary(want)}"
        try:
            np.testing.assert_allclose(got[3], want[3], rtol=1e-12, atol=0)
        except AssertionError as e:
            return f"values differ:{e}"
        return None
    if got[0] == "L":
        if len(got[1]) != len(want[1]):
            return f"{len(got[1])} items vs {len(want[1])}: {summary(got)} vs {summary(want)}"
        for k, (g, w) in enumerate(zip(got[1], want[1])):
            d = differs(g, w)
            if d:
                return f"item {k}: {d}"
        return None
    return None if got[1] == want[1] else f"{got[1]!r} vs {want[1]!r}"


def evaluate(lib, case, a):
    if lib == "hg":
        def conv(arr):
            return hg.tensor(arr, dtype=hg.float64 if arr.dtype.kind == "f" else hg.int64)
        ns = {"m": hg, "F": hg.nn.functional}
    else:
        def conv(arr):
            return torch.from_numpy(np.array(arr))
        ns = {"m": torch, "F": torch.nn.functional}
    ns.update(np=np, x=conv(a), **{k: conv(v) for k, v in case.extras.items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if case.stmt:
            exec(case.code, ns)
            return ns["x"]
        return eval(case.code, ns)


def outcome(fn):
    """("ok", normalized result) or ("raise", exception)."""
    try:
        return ("ok", norm(fn()))
    except Exception as e:  # noqa: BLE001 (classified by the caller)
        return ("raise", e)


def describe(o):
    if o[0] == "ok":
        return summary(o[1])
    e = o[1]
    return f"{type(e).__module__}.{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


def oracle_outcome(case, a):
    o = outcome(lambda: case.oracle(a))
    if o[0] == "raise" and not isinstance(o[1], (IndexError, Refused)):
        raise AssertionError(f"the oracle itself failed on {case.code}: {o[1]!r}")
    return o


def mean_of_nothing(case, result):
    """A mean over an empty set of elements, whose answer in PyTorch is NaN (with a warning)."""
    if "mean" not in case.code or result[0] != "T":
        return False
    values = np.asarray(result[3], dtype=float)
    return values.size > 0 and bool(np.isnan(values).all()) and 0 in case.shape


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_dim(case):
    a = data(case.shape)
    if torch is not None:
        want, source = outcome(lambda: evaluate("torch", case, a)), "PyTorch"
        if case.legacy:  # PyTorch's answer or the strict rule's (a refusal), either is right
            got = outcome(lambda: evaluate("hg", case, a))
            if got[0] == "raise" and isinstance(got[1], ALLOWED):
                return
        if CHECK_ORACLE and not case.legacy:
            o = oracle_outcome(case, a)
            same = (o[0] == want[0] and (differs(o[1], want[1]) is None if o[0] == "ok" else
                                        isinstance(o[1], IndexError) == isinstance(want[1], IndexError)))
            assert same, f"ORACLE: {describe(o)}; PyTorch: {describe(want)}"
    else:
        want, source = oracle_outcome(case, a), "PyTorch's rule"
        if case.legacy:  # the strict rule's refusal, or PyTorch's legacy answer: cat skips 1-D empty tensors, so x
            got = outcome(lambda: evaluate("hg", case, a))
            if got[0] == "raise" and isinstance(got[1], ALLOWED):
                return
            want, source = outcome(lambda: a.copy()), "PyTorch's legacy rule"
    got = outcome(lambda: evaluate("hg", case, a))
    if got[0] == "raise" and not isinstance(got[1], ALLOWED):
        pytest.fail(f"handgrad raised {describe(got)} (not hg.Error/IndexError/TypeError/ValueError); "
                    f"{source}: {describe(want)}")
    if want[0] == "ok" and got[0] == "raise" and mean_of_nothing(case, want[1]):
        # the one chosen difference (docs/python.md): the mean of no elements is an hg.Error that
        # says so, where PyTorch returns a silent NaN
        assert isinstance(got[1], hg.Error) and "empty" in str(got[1]), describe(got)
        return
    if want[0] == "ok":
        assert got[0] == "ok", f"handgrad refuses a call {source} accepts: {describe(got)}; {source}: {describe(want)}"
        d = differs(got[1], want[1])
        assert d is None, f"handgrad's result differs from {source}'s: {d}"
    else:
        assert got[0] == "raise", (f"handgrad accepts a call {source} refuses ({describe(want)}); "
                                   f"handgrad returned {describe(got)}")
        if isinstance(want[1], IndexError):
            assert isinstance(got[1], IndexError), (f"{source} raises IndexError ({describe(want)}); "
                                                    f"handgrad raised {describe(got)}")


def test_index_error_is_exported_and_both_kinds():
    assert hasattr(hg, "IndexError"), "hg.IndexError is not exported by the handgrad package (only hg._C.IndexError)"
    assert issubclass(hg.IndexError, hg.Error) and issubclass(hg.IndexError, IndexError)


def test_out_of_range_dims_raise_hg_index_error():
    """The library's own dim errors are hg.IndexError (an hg.Error too), naming the op."""
    x = hg.zeros(2, 3)
    for call in (lambda: x.sum(2), lambda: x.transpose(0, -3), lambda: x.softmax(5), lambda: x.select(0, 2),
                 lambda: x.unsqueeze(4), lambda: hg.cat([x, x], 2), lambda: x.size(-3)):
        with pytest.raises(IndexError) as info:
            call()
        assert isinstance(info.value, HG_INDEX_ERROR) and isinstance(info.value, hg.Error), repr(info.value)
