"""Rows of the products: matmul, mm, bmm, dot, outer, tensordot, einsum, kron, cross, and
hg.linalg.svdvals."""

import numpy as np

from . import Const, F32, Int, Row, Sample
from .samples import EDGES, operand, uniform


def _fn(name):
    return lambda m, *args, **kw: getattr(m, name)(*args, **kw)


def _pairs(*shapes, ints=None, edges=None, refused=False):
    """Samples of two random operands at each (label, shape_a, shape_b)."""
    def make(rng):
        out = [Sample((uniform(rng, a), uniform(rng, b)), {}, label) for label, a, b in shapes]
        if ints:
            out += operand(Int, ints[0], "int operands", {}, "refused" if refused else True,
                           tuple(Int(v) for v in ints[1:]))
        if edges:
            out.append(Sample(edges, {}, "edge ±0 ±inf nan", grad=False))
        label, a, b = shapes[0]
        out.append(Sample((F32(uniform(rng, a)), F32(uniform(rng, b))), {}, "float32"))
        return out
    return make


def _einsum(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample(("ij,jk->ik", u(2, 3), u(3, 4)), {}, "matrix product"),
            Sample(("ij,jk", u(2, 3), u(3, 4)), {}, "implicit output"),
            Sample(("bij,bjk->bik", u(2, 2, 3), u(2, 3, 2)), {}, "batched"),
            Sample(("i,i->", u(3), u(3)), {}, "dot"),
            Sample(("i,j->ij", u(3), u(2)), {}, "outer"),
            Sample(("ij->ji", u(2, 3)), {}, "transpose"),
            Sample(("ij->", u(2, 3)), {}, "sum"),
            Sample(("ij,ij->ij", u(2, 3), u(2, 3)), {}, "elementwise"),
            Sample(("ab,bc,cd->ad", u(2, 3), u(3, 2), u(2, 2)), {}, "three operands"),
            Sample(("ij,jk->ik", u(0, 3), u(3, 2)), {}, "empty"),
            Sample(("ij,jk->ik", Int([[1, 2], [3, 4]]), Int([[1, 0], [2, 1]])), {}, "int operands")]


def _tensordot(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(2, 3, 4), u(3, 4, 2)), {}, "dims 2"), Sample((u(2, 3), u(3, 2)), {"dims": 1}, "dims 1"),
            Sample((u(2, 3), u(4, 2)), {"dims": 0}, "dims 0 (outer)"),
            Sample((u(2, 3, 4), u(4, 2, 3)), {"dims": ([1, 2], [2, 0])}, "listed pairs"),
            Sample((u(2, 3), u(3, 4)), {"dims": ([1], [0])}, "one listed pair"),
            *operand(Int, [[1, 2], [3, 4]], "int operands", {"dims": 1}, True, (Int([[1, 0], [2, 1]]),))]


def _cross(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(3), u(3)), {}, "vectors"), Sample((u(2, 3), u(2, 3)), {}, "rows"),
            Sample((u(3, 2), u(3, 2)), {"dim": 0}, "dim 0"), Sample((u(2, 3), u(1, 3)), {}, "broadcast"),
            Sample((Int([1, 2, 3]), Int([4, 5, 7])), {}, "int operands"),
            Sample((EDGES[:3], EDGES[3:6]), {}, "edge ±0 ±inf nan", grad=False)]


def _svdvals(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    rank1 = np.outer(u(3), u(4))
    return [Sample((Const(u(3, 3)),), {}, "square"), Sample((Const(u(2, 4)),), {}, "wide"),
            Sample((Const(u(4, 2)),), {}, "tall"), Sample((Const(u(2, 3, 3)),), {}, "a batch"),
            Sample((Const(rank1),), {}, "rank 1"), Sample((Const(np.zeros((3, 3))),), {}, "zeros"),
            Sample((Const(np.diag([1e100, 1.0, 1e-100])),), {}, "large and small"),
            Sample((Const(np.diag([1e300, 1.0, 1e-300])),), {}, "huge and tiny",
                   differs="svdvals of a matrix with entries near 1e300 overflows to inf (the rotations square "
                           "the entries; PyTorch's LAPACK scales them)"),
            Sample((Const(np.zeros((0, 3))),), {}, "empty"), Sample((F32(u(3, 3)),), {}, "float32")]


ROWS = [
    Row("hg.matmul", _fn("matmul"),
        _pairs(("matrices", (2, 3), (3, 4)), ("vector @ vector", (3,), (3,)), ("matrix @ vector", (2, 3), (3,)),
               ("vector @ matrix", (3,), (3, 2)), ("batched", (2, 2, 3), (2, 3, 2)),
               ("broadcast batches", (2, 1, 2, 3), (3, 3, 2)), ("batch @ matrix", (2, 2, 3), (3, 2)),
               ("vector @ batch", (3,), (2, 3, 2)), ("empty inner dim", (2, 0), (0, 3)),
               ("empty outer dim", (0, 3), (3, 2)),
               ints=([[1, 2], [3, 4]], [[1, 0], [2, 1]]),
               edges=(np.array([[1.0, np.inf], [np.nan, 0.0]]), np.array([[0.0, 1.0], [2.0, -0.0]]))),
        also=("Tensor.matmul",)),
    Row("hg.mm", _fn("mm"), _pairs(("matrices", (2, 3), (3, 4)), ("empty", (0, 3), (3, 2)),
                                  ints=([[1, 2], [3, 4]], [[1, 0], [2, 1]])),
        also=("Tensor.mm",)),
    Row("hg.bmm", _fn("bmm"), _pairs(("batches", (2, 2, 3), (2, 3, 4)), ("empty batch", (0, 2, 3), (0, 3, 1)),
                                    ints=([[[1, 2], [3, 4]]], [[[1, 0], [2, 1]]])),
        also=("Tensor.bmm",)),
    Row("hg.dot", _fn("dot"), _pairs(("vectors", (4,), (4,)), ("empty", (0,), (0,)), ints=([1, 2, 3], [4, 5, 6]),
                                    edges=(EDGES, EDGES[::-1].copy())), also=("Tensor.dot",)),
    Row("hg.outer", _fn("outer"), _pairs(("vectors", (3,), (4,)), ("empty", (0,), (2,)), ints=([1, 2], [3, 4, 5])),
        also=("Tensor.outer",)),
    Row("hg.tensordot", _fn("tensordot"), _tensordot),
    Row("hg.einsum", _fn("einsum"), _einsum),
    Row("hg.kron", _fn("kron"), _pairs(("matrices", (2, 3), (2, 2)), ("empty", (0, 2), (2, 2)),
                                      ints=([[1, 2]], [[1], [3]])), also=("Tensor.kron",)),
    Row("hg.cross", _fn("cross"), _cross, also=("Tensor.cross",)),
    Row("hg.linalg.svdvals", lambda m, a: m.linalg.svdvals(a), _svdvals, grad=False,
        why="no gradient: svdvals refuses a tensor that requires grad (documented)"),
]
