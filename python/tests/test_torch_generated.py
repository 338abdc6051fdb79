"""The op table's functions on inputs Hypothesis draws, against torch: for every row with a `gen`
kind (python/tests/rows/), shapes (0-d, empty, size-1 and broadcast dims), the dtypes the row
allows, contiguous or non-contiguous layouts, and values from the row's domain or from the edges
(±0, ±inf, nan, ±1e-300, ±1e300). The forward, and for float64 draws in the domain the float64
gradient of <out, G>, must match torch's under the op table's tolerance rule. Where torch refuses
an input, handgrad must refuse it too.

Runs where torch and hypothesis import (bench/.venv); skipped otherwise. A modest, derandomized
budget: the same examples on every run."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from rows import F32, Bool, Const, Int, Sample, _compare, _results, load_rows  # noqa: E402

import handgrad as hg  # noqa: E402

EXAMPLES = 50
EDGE_VALUES = (0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, -1e-300, 1e300, -1e300, 1.0, -1.0, 0.5)
ROWS = [row for row in load_rows() if row.gen]
SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


@st.composite
def shapes(draw, min_dims=0, max_dims=3):
    """A shape of 0 to 3 dims, each 0 to 4 (0-d and empty shapes among them)."""
    return tuple(draw(st.lists(st.integers(0, 4), min_size=min_dims, max_size=max_dims)))


@st.composite
def broadcast_shapes(draw):
    """Two shapes that broadcast: the second a suffix of the first with some dims set to 1, or the
    other way round."""
    a = draw(shapes())
    b = list(a[draw(st.integers(0, len(a))):])
    b = tuple(1 if draw(st.booleans()) else n for n in b)
    return (a, b) if draw(st.booleans()) else (b, a)


@st.composite
def arrays(draw, shape, dtype, row, in_domain):
    """An array of the shape: ints in -5..5, bools, or floats from the row's domain (in_domain) or
    mixed with the edge values."""
    n = int(np.prod(shape))
    if dtype == "int64":
        return np.array(draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n)), dtype=np.int64).reshape(shape)
    if dtype == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool).reshape(shape)
    low, high = row.domain
    finite = st.floats(low, high, allow_nan=False, allow_infinity=False)
    if row.signed:
        finite = st.tuples(finite, st.sampled_from((-1.0, 1.0))).map(lambda p: p[0] * p[1])
    values = finite if in_domain else st.one_of(finite, st.sampled_from(EDGE_VALUES))
    return np.array(draw(st.lists(values, min_size=n, max_size=n)), dtype=np.float64).reshape(shape)


def _wrap(array, dtype, grad):
    if dtype == "float64":
        return array if grad else Const(array)
    return {"float32": F32, "int64": Int, "bool": Bool}[dtype](array)


@st.composite
def dims(draw, shape, kind):
    """The dim keyword arguments of a reduction or scan over shape."""
    rank = max(len(shape), 1)
    one = st.integers(-rank, rank - 1)
    if kind == "scan":
        return {"dim": draw(one)}
    choices = [st.none(), one]
    if kind == "reduce" and len(shape) >= 2:
        choices.append(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True)
                       .map(tuple))
    dim = draw(st.one_of(*choices))
    return {} if dim is None else {"dim": dim, "keepdim": draw(st.booleans())}


@st.composite
def samples(draw, row):
    """A Sample for row.fn: its arguments drawn for row.gen; grad samples are float64 in the domain."""
    dtype = draw(st.sampled_from(row.dtypes))
    grad = row.grad and dtype == "float64" and draw(st.booleans())
    if row.gen == "binary":
        shape_pair = draw(broadcast_shapes())
        args = tuple(_wrap(draw(arrays(s, dtype, row, grad)), dtype, grad) for s in shape_pair)
        kwargs = {}
    else:
        shape = draw(shapes())
        args = (_wrap(draw(arrays(shape, dtype, row, grad)), dtype, grad),)
        kwargs = draw(dims(shape, row.gen)) if row.gen in ("reduce", "reduce_int", "scan") else {}
    layout = draw(st.booleans())
    sample = Sample(args, kwargs, f"{dtype}, {'domain' if grad else 'edges'}", grad=grad or False)
    hypothesis.assume(row.gen_skip is None or not row.gen_skip(sample))
    return sample, layout


def _torch_result(row, sample, noncontiguous, seed):
    """torch's results, or the exception it raised."""
    try:
        return _results(torch, row, sample, noncontiguous, seed), None
    except (RuntimeError, ValueError, IndexError, TypeError) as e:
        return None, e


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
@SETTINGS
@given(data=st.data())
def test_generated_against_torch(row, data):
    sample, noncontiguous = data.draw(samples(row), label="sample")
    theirs, refusal = _torch_result(row, sample, noncontiguous, seed=7)
    if refusal is not None:
        with pytest.raises((hg.Error, TypeError, ValueError, IndexError)):
            _results(hg, row, sample, noncontiguous, seed=7)
        return
    mine = _results(hg, row, sample, noncontiguous, seed=7)
    mismatch = _compare(mine, theirs, f"{row.name} {sample.kwargs} ({sample.label})")
    assert mismatch is None, mismatch


def test_some_rows_are_generated():
    assert len(ROWS) >= 40, f"only {len(ROWS)} rows have a gen kind"
