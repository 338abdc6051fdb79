"""Rows of the forms PyTorch's own sample inputs (its OpInfo database) use: scatter's reduce=,
matrix_rank's tensor tolerances and hermitian=, the casts' memory_format=, repeat_interleave's
tensor of counts, index_add and index_fill on 0-d and bool tensors, einsum's '...', diagonals,
size-1 broadcasting and sublists, atleast_Nd of several tensors, cat's legacy rule and promotion,
take_along_dim's negative indices, tensordot's size-1 contraction and int64 operands, int64
matrix products, isclose of bools, arange's bools and int64 steps, var and std over an empty dim,
tensor_split past the size and the triangles' far offsets."""

import numpy as np

from . import Bool, Const, F32, Int, Row, Sample
from .samples import BOOLS, INTS, uniform


def _dt(m, kw):
    """kwargs with dtype='float64' (a name, so one sample serves both libraries) as m's dtype."""
    return {**kw, "dtype": getattr(m, kw["dtype"])} if isinstance(kw.get("dtype"), str) else kw


# ---------------------------------------------------------------- scatter's reduce=

def _scatter_reduce(rng, grad):
    x, src = uniform(rng, (4, 3)), uniform(rng, (3, 3))
    idx = Int([[0, 1, 1], [0, 1, 1], [3, 1, 0]])
    out = []
    for r in ("add", "multiply"):
        out += [Sample((x, 0, idx, src), {"reduce": r}, f"{r}, repeated places"),
                Sample((x, -1, Int([[2, 2], [0, 1], [1, 1], [0, 0]]), uniform(rng, (4, 2))), {"reduce": r},
                       f"{r}, dim -1"),
                Sample((x, 1, Int([[2], [0], [1], [1]]), 2.5), {"reduce": r}, f"{r}, a number"),
                Sample((uniform(rng, ()), 0, Int(np.int64(0)), uniform(rng, ())), {"reduce": r}, f"{r}, 0-d")]
        if not grad:
            out += [Sample((x, 0, Int(np.zeros((0, 3), int)), uniform(rng, (0, 3))), {"reduce": r},
                           f"{r}, empty index"),
                    Sample((Int(INTS), 1, Int([[2, 2], [0, 0]]), Int([[3, 4], [5, 6]])), {"reduce": r},
                           f"{r}, int operands"),
                    Sample((Int(INTS), 1, Int([[2], [0]]), 2.5), {"reduce": r}, f"{r}, int operand, a number (cast)"),
                    Sample((Bool(BOOLS), 1, Int([[2, 2], [0, 1]]), Bool([[False, True], [True, False]])),
                           {"reduce": r}, f"{r}, bool operands")]
    return out


# ---------------------------------------------------------------- matrix_rank

def _matrix_rank(rng):
    a = uniform(rng, (2, 4, 4))
    a[1, :, 0] = a[1, :, 1]
    sym = uniform(rng, (5, 3))
    sym = sym @ sym.T  # rank 3, symmetric
    lower = uniform(rng, (4, 4))
    lower[:, 0] = lower[:, 1]  # not symmetric: hermitian reads its lower triangle
    return [Sample((a,), {"atol": Const(np.array(0.5))}, "0-d atol"),
            Sample((a,), {"rtol": Const(np.array([0.05, 0.9]))}, "a batch of rtol"),
            Sample((a,), {"atol": Const(np.array([[1e-3], [10.0]])), "rtol": Const(np.array(0.0))},
                   "atol broadcast against the batch"),
            Sample((a,), {"atol": Const(np.array([0.5, 0.0]))}, "atol > 0 drops the default rtol, atol 0 keeps it"),
            Sample((sym,), {"hermitian": True}, "hermitian, rank 3"),
            Sample((lower,), {"hermitian": True}, "hermitian reads the lower triangle"),
            Sample((a,), {"hermitian": True, "rtol": Const(np.array(0.3))}, "hermitian with a tensor rtol"),
            Sample((uniform(rng, (2, 0, 0)),), {"atol": Const(np.array([1.0, 1.0]))}, "empty matrices, tensor atol"),
            Sample((F32(a),), {"rtol": Const(np.array(0.2))}, "float32")]


# ---------------------------------------------------------------- casts with memory_format=

def _format(m, name):
    return getattr(m, name) if m.__name__ == "torch" else name


def _cast_samples(rng):
    return [Sample((uniform(rng, (2, 3)), "contiguous_format"), {}, "contiguous_format"),
            Sample((uniform(rng, (2, 3, 2, 3)), "channels_last"), {}, "channels_last (the values are the same)"),
            Sample((uniform(rng, ()), "preserve_format"), {}, "0-d, preserve_format"),
            Sample((Int(INTS), "contiguous_format"), {}, "int64"),
            Sample((Bool(BOOLS), "preserve_format"), {}, "bool")]


def _cast_row(name, grad, why=""):
    return Row(f"Tensor.{name}", lambda m, x, fmt: getattr(x, name)(memory_format=_format(m, fmt)), _cast_samples,
               grad=grad, why=why)


# ---------------------------------------------------------------- repeat_interleave, index_add, index_fill

def _repeat_interleave(rng):
    x = uniform(rng, (2, 3, 4))
    return [Sample((x, Int([0, 1, 2])), {"dim": 1}, "a count per entry"),
            Sample((x, Int([2])), {"dim": -1}, "one count for all"),
            Sample((uniform(rng, (4, 1)), Int([1, 0, 2, 1])), {"dim": 0, "output_size": 4}, "output_size"),
            Sample((uniform(rng, (2, 2)), Int(np.int64(3))), {}, "0-d count, flattened"),
            Sample((uniform(rng, ()), Int([2])), {}, "0-d input"),
            Sample((Int(INTS), Int([1, 2])), {"dim": 0}, "int operand"),
            Sample((Bool(BOOLS), Int([0, 2, 1])), {"dim": 1}, "bool operand"),
            Sample((Int([2, 0, 1]),), {}, "the counts alone")]


def _index_add(rng):
    return [Sample((uniform(rng, ()), 0, Int([0]), uniform(rng, ())), {"alpha": 2}, "0-d"),
            Sample((uniform(rng, ()), 0, Int(np.int64(0)), uniform(rng, ())), {}, "0-d, 0-d index"),
            Sample((uniform(rng, (3, 4)), 1, Int([3, 3]), uniform(rng, (3, 2))), {"alpha": -1.5}, "repeated"),
            Sample((Bool(BOOLS), 1, Int([0, 0]), Bool([[True, False], [False, False]])), {"alpha": True}, "bool"),
            Sample((Bool(BOOLS), 0, Int([1]), Bool([[True, True, True]])), {"alpha": False}, "bool, alpha False"),
            Sample((Int(INTS), 1, Int([2]), Int([[4], [5]])), {"alpha": 2.5}, "int64, a float alpha (truncated)")]


def _index_fill(rng):
    x = uniform(rng, (3, 4))
    return [Sample((uniform(rng, ()), 0, Int([0]), 2.5), {}, "0-d"),
            Sample((uniform(rng, ()), -1, Int(np.int64(0)), uniform(rng, ())), {}, "0-d, tensor value"),
            Sample((x, 1, Int([0, 2]), uniform(rng, ())), {}, "tensor value (its gradient: the sum over the places)"),
            # PyTorch's backward of a negative index raises (its forward wraps it): forward only
            Sample((x, 1, Int([0, -1]), uniform(rng, ())), {}, "negative index", grad=False),
            Sample((Bool(BOOLS), -1, Int([1]), True), {}, "bool, a bool value"),
            Sample((Bool(BOOLS), 0, Int([0]), Bool(np.array(False))), {}, "bool, a 0-d bool value"),
            Sample((Int(INTS), 0, Int([-2]), 2.7), {}, "int64, a float value (truncated)")]


# ---------------------------------------------------------------- einsum

def _einsum(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample(("...ii->...i", u(2, 3, 3)), {}, "'...' and a diagonal"),
            Sample(("bii", u(2, 3, 3)), {}, "implicit output, a trace"),
            Sample(("iji->j", u(1, 3, 1)), {}, "a diagonal of size 1"),
            Sample(("i...->...", u(3, 3)), {}, "'...' after the letters"),
            Sample(("...ik, ...j -> ij", u(1, 2, 3), u(3)), {}, "'...' summed, spaces"),
            Sample(("...ij,jk->...ik", u(2, 3, 3), u(3, 4)), {}, "batched"),
            Sample(("b...,...k->bk", u(2, 3, 3), u(3, 4)), {}, "'...' broadcast from the right"),
            Sample(("ij,jk->ik", u(2, 1), u(3, 4)), {}, "a size-1 dim broadcast against its letter"),
            Sample(("...", u(2, 3)), {}, "'...' alone"),
            Sample(("ij->", u(0, 3)), {}, "empty"),
            Sample(("ij,jk", Int(INTS), Int([[1, 0], [0, 1], [2, 2]])), {}, "int operands")]


def _einsum_sublist(rng):
    return [Sample((uniform(rng, (2, 3, 3)), uniform(rng, (3, 4))), {}, "[..., 1], [1, 2] -> [..., 2]")]


# ---------------------------------------------------------------- joins, take_along_dim, tensordot, products

def _atleast(rng):
    return [Sample((uniform(rng, ()), uniform(rng, (2,)), uniform(rng, (2, 3))), {}, "several"),
            Sample((uniform(rng, (2, 3, 1, 2)), uniform(rng, ())), {}, "4-d and 0-d"),
            Sample((Int(INTS), Bool(np.array(True))), {}, "int and bool")]


def _cat(rng):
    x = uniform(rng, (2, 3))
    return [Sample((uniform(rng, (0,)), x), {"dim": 1}, "a (0,) tensor is left out (legacy rule)"),
            Sample((x, uniform(rng, (0,)), x), {"dim": -1}, "left out in the middle"),
            Sample((uniform(rng, (0,)), uniform(rng, (0,))), {"dim": 5}, "only (0,) tensors: dim unchecked"),
            Sample((F32(x), x), {}, "float32 and float64: float64"),
            Sample((Int(INTS), Const(x)), {}, "int64 and float64: float64"),
            Sample((Bool(BOOLS), Int(INTS)), {"dim": 1}, "bool and int64: int64"),
            Sample((F32(np.zeros(0)), Const(x)), {"dim": 1}, "a left-out float32 still promotes")]


def _take_along_dim(rng):
    x = uniform(rng, (3, 5))
    return [Sample((x, Int([[-1, -5, 0], [4, -2, -3], [-1, -1, -1]]), 1), {}, "negative indices"),
            Sample((x, Int([[-3, 2, -1, 0, 1]]), 0), {}, "negative, broadcast rows"),
            Sample((Int(INTS), Int([[-1], [-3]]), -1), {}, "int operand")]


def _tensordot(rng):
    i1, i2 = rng.integers(-3, 4, (2, 2, 3)), rng.integers(-3, 4, (3, 2, 2))
    return [Sample((uniform(rng, (1, 1, 1)), uniform(rng, (2, 1, 2))), {"dims": ([0, 1], [2, 0])},
                   "size 1 against 2: summed first"),
            Sample((uniform(rng, (2, 3, 1)), uniform(rng, (4, 3))), {"dims": ([2, 1], [0, 1])}, "size 1 against 4"),
            Sample((Int(i1), Int(i2)), {"dims": ([1, 2], [1, 0])}, "int operands"),
            Sample((Int(i1), Int(i2)), {"dims": 1}, "int operands, dims 1")]


def _int_products(shape_a, shape_b):
    def make(rng):
        a, b = rng.integers(-4, 5, shape_a), rng.integers(-4, 5, shape_b)
        return [Sample((Int(a), Int(b)), {}, "int operands: exact"),
                Sample((uniform(rng, shape_a), uniform(rng, shape_b)), {}, "float64")]
    return make


def _isclose(rng):
    a, b = Bool([True, False, True, False]), Bool([True, True, False, False])
    return [Sample((a, b), {}, "bool operands"), Sample((a, b), {"atol": 2}, "bool operands, atol 2"),
            Sample((a, Bool(np.array(True))), {"equal_nan": True}, "bool, broadcast"),
            Sample((Int([2, 3, -1]), Int([3, 3, 1])), {"rtol": 0.2, "atol": 0.5}, "int operands")]


# ---------------------------------------------------------------- new tensors and reductions over nothing

def _arange(rng):
    return [Sample((False, True, True), {"dtype": "float64"}, "bools as numbers"),
            Sample((True,), {}, "a bool end"),
            Sample((-0.9, 2.1, 2.0), {"dtype": "int64"}, "int64, float arguments: step truncated"),
            Sample((2.1, -2.9, -1.0), {"dtype": "int64"}, "int64, counting down"),
            Sample((0, 64, 0.5), {"dtype": "int64"}, "int64, a step below 1: all start"),
            Sample((5, 0, -0.5), {"dtype": "int64"}, "int64, a step above -1"),
            Sample((0.5, 3.7, 0.3), {"dtype": "float64"}, "float64"),
            Sample((1, 4, 0.25), {}, "a float step: float32")]


def _spread_over_nothing(rng):
    return [Sample((uniform(rng, (0,)),), {}, "empty: nan"),
            Sample((uniform(rng, (0, 5)),), {}, "every dim of (0, 5): nan"),
            Sample((uniform(rng, (0, 5)), 0), {}, "over the empty dim: nan"),
            Sample((uniform(rng, (0, 5)), 1), {}, "over the full dim of an empty tensor: empty")]


def _tensor_split(rng):
    x = uniform(rng, (2, 3))
    return [Sample((x, 5, 1), {}, "more sections than the size: empty pieces at the end"),
            Sample((x, 2), {}, "even"), Sample((x, [1, 5], 1), {}, "an index past the end")]


def _triangle(rng):
    return [Sample((3, 4, 1), {}, "offset 1"), Sample((3, 4, -5), {}, "far below: none or all"),
            Sample((3, 4, 100), {}, "far above"), Sample((0, 3, 0), {}, "no rows"), Sample((4, 0, 0), {}, "no columns"),
            Sample((5, 2, -1), {}, "tall")]


WHY_NO_TORCH_GRAD = ("torch's scatter with reduce= has no derivative (it raises); handgrad's, through recorded "
                     "ops, is checked against finite differences by the row after")

ROWS = [
    Row("hg.scatter", lambda m, *a, **kw: m.scatter(*a, **kw), lambda rng: _scatter_reduce(rng, False), grad=False,
        why=WHY_NO_TORCH_GRAD, also=("Tensor.scatter",)),
    Row("hg.scatter", lambda m, *a, **kw: m.scatter(*a, **kw), lambda rng: _scatter_reduce(rng, True), torch=False,
        why=WHY_NO_TORCH_GRAD),
    Row("hg.linalg.matrix_rank", lambda m, a, **kw: m.linalg.matrix_rank(a, **kw), _matrix_rank, grad=False,
        why="an int64 count (piecewise constant)"),
    _cast_row("double", True),
    _cast_row("float", False, "a float32 result, beyond float64 finite differences"),
    _cast_row("long", False, "an int64 result"),
    _cast_row("bool", False, "a bool result"),
    Row("hg.repeat_interleave", lambda m, *a, **kw: m.repeat_interleave(*a, **kw), _repeat_interleave),
    Row("hg.index_add", lambda m, x, *a, **kw: m.index_add(x, *a, **kw), _index_add, also=("Tensor.index_add",)),
    Row("hg.index_fill", lambda m, x, *a: m.index_fill(x, *a), _index_fill, also=("Tensor.index_fill",)),
    Row("hg.einsum", lambda m, eq, *ops: m.einsum(eq, *ops), _einsum),
    Row("hg.einsum", lambda m, a, b: m.einsum(a, [Ellipsis, 1], b, [1, 2], [Ellipsis, 2]), _einsum_sublist),
    *[Row(f"hg.{n}", lambda m, *ts, n=n: getattr(m, n)(*ts), _atleast) for n in ("atleast_1d", "atleast_2d",
                                                                                   "atleast_3d")],
    Row("hg.atleast_3d", lambda m, *ts: m.atleast_3d(list(ts)), _atleast),
    Row("hg.cat", lambda m, *ts, **kw: m.cat(list(ts), **kw), _cat),
    Row("hg.take_along_dim", lambda m, x, i, d: m.take_along_dim(x, i, d), _take_along_dim,
        also=("Tensor.take_along_dim",)),
    Row("hg.tensordot", lambda m, a, b, **kw: m.tensordot(a, b, **kw), _tensordot),
    Row("hg.mm", lambda m, a, b: m.mm(a, b), _int_products((2, 3), (3, 4)), also=("Tensor.mm",)),
    Row("hg.bmm", lambda m, a, b: m.bmm(a, b), _int_products((2, 2, 3), (2, 3, 2)), also=("Tensor.bmm",)),
    Row("hg.isclose", lambda m, a, b, **kw: m.isclose(a, b, **kw), _isclose, also=("Tensor.isclose",)),
    Row("hg.arange", lambda m, *a, **kw: m.arange(*a, **_dt(m, kw)), _arange, grad=False,
        why="a new tensor from numbers"),
    *[Row(f"hg.{n}", lambda m, x, *a, n=n: getattr(m, n)(x, *a), _spread_over_nothing, grad=False,
          why="no entry to differentiate") for n in ("var", "std", "var_mean", "std_mean")],
    Row("hg.tensor_split", lambda m, x, s, *d: m.tensor_split(x, s, *d), _tensor_split,
        also=("Tensor.tensor_split",)),
    Row("hg.tril_indices", lambda m, *a: m.tril_indices(*a), _triangle, grad=False, why="int64 positions"),
    Row("hg.triu_indices", lambda m, *a: m.triu_indices(*a), _triangle, grad=False, why="int64 positions"),
]
