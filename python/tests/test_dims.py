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

import os
import warnings

import numpy as np
import pytest

import handgrad as hg
from dims_cases import CASES, data
from dims_oracle import Refused

try:
    import torch
except ImportError:  # the oracle stands in for PyTorch
    torch = None

ALLOWED = (hg.Error, IndexError, TypeError, ValueError)
HG_INDEX_ERROR = getattr(hg, "IndexError", None) or getattr(hg._C, "IndexError", None)
CHECK_ORACLE = torch is not None and os.environ.get("HG_DIMS_ORACLE_CHECK") == "1"


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
