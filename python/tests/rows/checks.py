"""The checks every row goes through (python/tests/rows/__init__.py lists them), and the making of
each sample's inputs for handgrad and torch."""

import zlib

import numpy as np

from . import Dtype, Raises, _Wrapped, canonical
from .compare import assert_same, dtype_name, outputs


def _kind(a):
    """The dtype name and the array of a sample argument, or None for one that passes as is."""
    if isinstance(a, _Wrapped):
        return a.dtype, a.value
    if isinstance(a, np.ndarray):
        kinds = {"f": "float64", "i": "int64", "u": "int64", "b": "bool"}
        if a.dtype.kind in kinds:
            return kinds[a.dtype.kind], a
    return None


def _strided(m, arr, dtype):
    """The values of arr in a non-contiguous tensor: every second element of a buffer twice as wide
    (gaps filled with nan, or 7 for ints, so that reading one shows)."""
    wide = list(arr.shape)
    wide[-1] *= 2
    fill = np.nan if dtype.startswith("float") else (True if dtype == "bool" else 7)
    buf = np.full(wide, fill, dtype=arr.dtype if dtype != "float32" else np.float64)
    buf[..., ::2] = arr
    return m.tensor(buf, dtype=getattr(m, dtype))[..., ::2]


def make_tensor(m, a, dtype, requires_grad=False, noncontiguous=False):
    """The values of a as m's tensor of dtype ('float64', 'float32', 'int64', 'bool'), a leaf that
    requires grad when asked; noncontiguous: a strided view (see _strided), also as a leaf."""
    arr = np.asarray(a)
    if dtype == "int64":
        arr = arr.astype(np.int64)
    elif dtype == "bool":
        arr = arr.astype(bool)
    else:
        arr = arr.astype(np.float64)
    if noncontiguous and arr.ndim >= 1 and arr.size > 1:
        t = _strided(m, arr, dtype).detach()
    else:
        t = m.tensor(arr, dtype=getattr(m, dtype))
    return t.requires_grad_() if requires_grad else t


def wants_grad(row, sample):
    """Whether the sample's gradients are checked: a grad row, a sample not marked forward-only, and
    a float64 array among its arguments (a sample of int operands alone is forward-only)."""
    has_leaf = any(isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in sample.args)
    return row.grad and sample.grad is not False and has_leaf and not isinstance(sample.expect, Raises)


def materialize(m, row, sample, grad=None, noncontiguous=False):
    """(args, kwargs, leaves): the sample's arguments as m's tensors (and Dtype names as m's dtypes);
    leaves are the float64 arrays' tensors, which require grad when grad (default: the row's and
    sample's)."""
    grad = wants_grad(row, sample) if grad is None else grad
    args, leaves = [], []
    kwargs = {}
    for k, v in sample.kwargs.items():  # Dtype names, and Const / Int / Bool / F32 tensors (weight=): no grad
        if isinstance(v, Dtype):
            v = getattr(m, v.name)
        elif isinstance(v, _Wrapped):
            v = make_tensor(m, v.value, v.dtype, noncontiguous=noncontiguous)
        kwargs[k] = v
    for a in sample.args:
        kind = _kind(a)
        if kind is None:
            args.append(getattr(m, a.name) if isinstance(a, Dtype) else a)
            continue
        dtype, arr = kind
        leaf = isinstance(a, np.ndarray) and dtype == "float64"
        t = make_tensor(m, arr, dtype, requires_grad=grad and leaf, noncontiguous=noncontiguous)
        if leaf:
            leaves.append(t)
        args.append(t)
    return args, kwargs, leaves


def _hg():
    import handgrad
    return handgrad


def _call(m, fn, args, kwargs):
    """fn(m, *args, **kwargs) after seeding m's default generator (random rows draw the same twice)."""
    m.manual_seed(0)
    return fn(m, *args, **kwargs)


def refused(sample):
    """The exception types hg raises on the sample (a documented difference), or None."""
    return sample.expect.types if isinstance(sample.expect, Raises) else None


def _run_hg(sample, what, call):
    """call(), or where the sample documents a refusal, that call() raises it (then None)."""
    types = refused(sample)
    if types is None:
        return call()
    try:
        call()
    except types:
        return None
    raise AssertionError(f"{what}: documented as refused ({sample.differs}), but it ran: remove the note")


def _as_one_tensor(hg, out):
    """fn's float results as one tensor, for the checks that take f(x) -> one tensor."""
    floats = [o for o in outputs(out) if isinstance(o, hg.Tensor) and o.dtype in (hg.float64, hg.float32)]
    if not floats:
        raise AssertionError("a grad row's fn returned no float tensor")
    if len(floats) == 1:
        return floats[0]
    return hg.cat([o.reshape(-1) for o in floats], 0)


def check_grad(row, sample):
    """gradcheck, gradgradcheck (second_order) and fwdcheck (forward_ad) on the float64 arrays,
    contiguous and non-contiguous."""
    hg = _hg()
    args, kwargs, leaves = materialize(hg, row, sample, grad=True)
    tensor_at = [k for k, a in enumerate(args) if isinstance(a, hg.Tensor)]

    def f(*ts):
        call = list(args)
        for k, t in zip(tensor_at, ts):
            call[k] = t
        return _as_one_tensor(hg, row.fn(hg, *call, **kwargs))
    inputs = [args[k] for k in tensor_at]
    hg.autograd.gradcheck(f, inputs, noncontiguous=True)
    if row.second_order:
        hg.autograd.gradgradcheck(f, inputs, noncontiguous=True)
    if row.forward_ad:
        hg.autograd.fwdcheck(f, inputs, noncontiguous=True)


def _meta(out):
    return [(tuple(o.shape), dtype_name(o)) for o in outputs(out)]


def check_layouts(row, sample):
    """The forward on non-contiguous copies of the tensor arguments equals the contiguous forward."""
    hg = _hg()
    if not row.layouts:
        return
    what = f"{row.name} [{sample.label}]"
    results = []
    for noncontiguous in (False, True):
        args, kwargs, _ = materialize(hg, row, sample, grad=False, noncontiguous=noncontiguous)
        results.append(_run_hg(sample, what, lambda: _call(hg, row.fn, args, kwargs)))
    if row.compare == "meta":
        results = [_meta(r) for r in results]
    if results[0] is not None:
        assert_same(results[1], results[0], f"{what} non-contiguous against contiguous")


def resolve(name):
    """The hg object a public name means: 'hg.exp', 'F.relu', 'hg.linalg.norm' (not 'Tensor.x')."""
    hg = _hg()
    name = canonical(name)
    head, _, rest = name.partition(".")
    obj = {"hg": hg, "F": hg.nn.functional}[head]
    for part in rest.split("."):
        obj = getattr(obj, part)
    return obj


def check_also(row, sample):
    """Each also name on the same arguments gives fn's result (a method form is skipped where the
    first argument is not a tensor, e.g. pow(2.5, x))."""
    hg = _hg()
    what = f"{row.name} [{sample.label}]"
    args, kwargs, _ = materialize(hg, row, sample, grad=False)
    expected = _run_hg(sample, what, lambda: _call(hg, row.fn, args, kwargs))
    for name in row.also:
        name = canonical(name)
        args, kwargs, _ = materialize(hg, row, sample, grad=False)
        if name.startswith("Tensor."):
            if not args or not isinstance(args[0], hg.Tensor):
                continue
            method = name.split(".", 1)[1]
            got = _run_hg(sample, f"{name} [{sample.label}]",
                          lambda: _call(hg, lambda m, *a, **k: getattr(a[0], method)(*a[1:], **k), args, kwargs))
        else:
            got = _run_hg(sample, f"{name} [{sample.label}]",
                          lambda: _call(hg, lambda m, *a, **k: resolve(name)(*a, **k), args, kwargs))
        if expected is None:
            continue
        if row.compare == "meta":
            got, want = _meta(got), _meta(expected)
        else:
            want = expected
        assert_same(got, want, f"{name} against {what}")


def check_property(row, sample):
    """The row's own check on hg's result (what a random draw must satisfy)."""
    hg = _hg()
    args, kwargs, _ = materialize(hg, row, sample, grad=False)
    out = _call(hg, row.fn, args, kwargs)
    row.check(out, *args, **kwargs)


def _results(m, row, sample, noncontiguous, seed):
    """The forward, and for a grad sample the gradients of <out, G> with G drawn from seed."""
    grad = wants_grad(row, sample)
    args, kwargs, leaves = materialize(m, row, sample, grad=grad, noncontiguous=noncontiguous)
    out = _call(m, row.fn, args, kwargs)
    result = {"forward": _meta(out) if row.compare == "meta" else outputs(out)}
    if grad and leaves:
        rng = np.random.default_rng(seed)
        floats = [o for o in outputs(out) if getattr(o, "requires_grad", False)]
        if floats:
            gs = [m.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype) for o in floats]
            grads = m.autograd.grad(floats, leaves, gs, allow_unused=True)
        else:
            grads = [None] * len(leaves)
        result["gradient"] = [m.zeros(tuple(x.shape), dtype=m.float64) if g is None else g
                              for g, x in zip(grads, leaves)]
    return result


def _compare(hg_result, torch_result, what):
    """None when equal under the tolerance rule, else the first difference's message."""
    try:
        for key in torch_result:
            assert_same(hg_result.get(key), torch_result[key], f"{what} {key}")
    except AssertionError as e:
        return str(e)
    return None


def check_torch(row, sample, torch):
    """hg's forward (and the float64 gradients of a grad sample) equal torch's, contiguous and
    non-contiguous; where the row or sample documents a difference, that it still holds: hg's
    result differs from torch's (and equals expect where given), or hg refuses the input."""
    hg = _hg()
    seed = zlib.crc32(f"{row.name}/{sample.label}".encode())
    differs = sample.differs or row.differs
    mismatches = []
    for noncontiguous in (False, True):
        what = f"{row.name} [{sample.label}] {'non-contiguous' if noncontiguous else 'contiguous'}"
        theirs = _results(torch, row, sample, noncontiguous, seed)
        mine = _run_hg(sample, what, lambda: _results(hg, row, sample, noncontiguous, seed))
        if mine is None:
            mismatches.append("refused")
            continue
        mismatch = _compare(mine, theirs, what)
        if not differs:
            if mismatch:
                raise AssertionError(mismatch)
            continue
        if sample.expect is not None:
            expect = [np.asarray(e) for e in outputs(sample.expect)]
            assert_same(mine["forward"], expect, f"{what}: the documented result ({differs})")
        if mismatch:
            mismatches.append(mismatch)
    if differs and not mismatches:  # torch's own result may depend on the layout: one layout that differs will do
        raise AssertionError(f"{row.name} [{sample.label}]: documented as differing from torch ({differs}), but it "
                             "now agrees: remove the note")
