"""test_dims.py's cases: each dim-taking call of the Python API, written as source, on tensors of
rank 0-4, with dims from -r-2 to r+1, indices from -n-1 to n, and the oracle's answer beside it."""

import itertools
import math
import zlib

import numpy as np

from dims_oracle import (o_argmax, o_cat, o_chunk, o_cross_entropy, o_embedding, o_expand, o_getitem, o_max,
                         o_permute, o_reduce, o_select, o_setitem, o_softmax, o_split, o_squeeze,
                         o_squeeze_dims, o_transpose, o_view, wrap_existing, wrap_insert, Refused)

SHAPES = [(), (3,), (1,), (0,), (2, 3), (1, 3), (2, 0, 3), (2, 1, 4), (2, 3, 1, 2)]
EXTREME = [2**62, -2**62, -2**63, 2**63]  # 2**63 does not fit an int64: refused, not wrapped


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
