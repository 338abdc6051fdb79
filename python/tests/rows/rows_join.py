"""Rows of the ops that join or combine several tensors: cat, stack, hstack, vstack, dstack,
column_stack, meshgrid, cartesian_prod; and the indexed reads and writes gather, scatter,
scatter_add, masked_select, index_fill, index_add."""

import numpy as np

from . import Bool, Int, Row, Sample
from .samples import BOOLS, EDGES, INTS, uniform


def _list(name, **kw0):
    """fn(m, *tensors, **kw): hg.<name>([tensors...], **kw)."""
    return lambda m, *ts, **kw: getattr(m, name)(list(ts), **{**kw0, **kw})


def _joins(rng, same_rank_only=False):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    out = [Sample((u(2, 3), u(2, 3)), {}, "two (2, 3)"),
           Sample((u(2, 3), u(2, 3), u(2, 3)), {}, "three"),
           Sample((u(3), u(3)), {}, "vectors"),
           Sample((u(2, 3),), {}, "one tensor"),
           Sample((Int(INTS), Int(INTS)), {}, "int operands"),
           Sample((Bool(BOOLS), Bool(BOOLS)), {}, "bool operands")]
    if not same_rank_only:
        out.append(Sample((np.array(1.5), np.array(-2.0)), {}, "0-d"))
    return out


def _cat(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(2, 3), u(1, 3)), {}, "dim 0"),
            Sample((u(2, 3), u(2, 1), u(2, 2)), {"dim": 1}, "dim 1"),
            Sample((u(2, 3), u(2, 2)), {"dim": -1}, "dim -1"),
            Sample((u(2, 3), u(0, 3)), {}, "an empty part"),
            Sample((u(0, 3), u(0, 3)), {"dim": 1}, "empty"),
            Sample((u(3),), {}, "one tensor"),
            Sample((EDGES, EDGES), {}, "edge ±0 ±inf nan", grad=False),
            Sample((Int(INTS), Int(INTS)), {"dim": 1}, "int operands"),
            Sample((Bool(BOOLS), Bool(BOOLS)), {}, "bool operands")]


def _stack(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(2, 3), u(2, 3)), {}, "dim 0"), Sample((u(2, 3), u(2, 3)), {"dim": 2}, "dim 2"),
            Sample((u(2, 3), u(2, 3)), {"dim": -1}, "dim -1"), Sample((u(), u()), {}, "0-d"),
            Sample((u(0, 3), u(0, 3)), {"dim": 1}, "empty"), Sample((Int(INTS), Int(INTS)), {}, "int operands")]


def _meshgrid(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(2), u(3)), {"indexing": "ij"}, "ij"), Sample((u(2), u(3)), {"indexing": "xy"}, "xy"),
            Sample((u(2), u(3), u(4)), {"indexing": "ij"}, "three, ij"),
            Sample((u(2), u(3), u(4)), {"indexing": "xy"}, "three, xy"),
            Sample((u(3),), {"indexing": "ij"}, "one"), Sample((u(0), u(2)), {"indexing": "ij"}, "empty"),
            Sample((Int([1, 2]), Int([3, 4, 5])), {"indexing": "ij"}, "int operands")]


def _gather(rng):
    x = uniform(rng, (3, 4))
    return [Sample((x, 1, Int([[0, 3, 3], [1, 0, 2], [2, 2, 2]])), {}, "dim 1, repeats"),
            Sample((x, 0, Int([[2, 0, 1, 1]])), {}, "dim 0"),
            Sample((x, -1, Int([[0], [1], [2]])), {}, "dim -1"),
            Sample((x, 1, Int(np.zeros((3, 0), int))), {}, "empty index"),
            Sample((uniform(rng, ()), 0, Int(np.int64(0))), {}, "0-d"),
            Sample((Int(INTS), 1, Int([[2, 0], [1, 1]])), {}, "int operand")]


def _scatter(rng):
    x = uniform(rng, (3, 4))
    idx = Int([[0, 1, 2, 0], [1, 2, 0, 1]])  # distinct places per column: no repeated write
    return [Sample((x, 0, idx, uniform(rng, (2, 4))), {}, "src"),
            Sample((x, 1, Int([[3], [0], [2]]), uniform(rng, (3, 1))), {}, "dim 1"),
            # PyTorch's backward refuses a src larger than index (its gradient has index's shape)
            Sample((x, 1, Int([[3], [0], [2]]), uniform(rng, (3, 2))), {}, "dim 1, src larger than index", grad=False),
            Sample((x, 0, idx), {"value": 2.5}, "value"),
            Sample((x, 0, Int(np.zeros((0, 4), int)), uniform(rng, (0, 4))), {}, "empty index"),
            Sample((Int(INTS), 1, Int([[2], [0]]), Int([[9], [8]])), {}, "int operands")]


def _scatter_add(rng):
    x = uniform(rng, (3, 4))
    return [Sample((x, 0, Int([[0, 1, 2, 0], [0, 1, 0, 0]]), uniform(rng, (2, 4))), {}, "repeated places add up"),
            Sample((x, 1, Int([[3, 3], [0, 1], [2, 2]]), uniform(rng, (3, 2))), {}, "dim 1"),
            Sample((x, -1, Int([[1], [1], [1]]), uniform(rng, (3, 1))), {}, "dim -1"),
            Sample((x, -1, Int([[1], [1], [1]]), uniform(rng, (3, 3))), {}, "dim -1, src larger than index",
                   grad=False),
            Sample((Int(INTS), 1, Int([[2, 2], [0, 0]]), Int([[9, 1], [8, 1]])), {}, "int operands")]


def _masked_select(rng):
    x = uniform(rng, (3, 4))
    m = rng.random((3, 4)) > 0.5
    return [Sample((x, Bool(m)), {}, "random mask"), Sample((x, Bool(m[0])), {}, "broadcast mask"),
            Sample((x, Bool(np.zeros((3, 4), bool))), {}, "nothing selected"),
            Sample((uniform(rng, ()), Bool(True)), {}, "0-d"), Sample((Int(INTS), Bool(BOOLS)), {}, "int operand")]


def _index_fill(rng):
    x = uniform(rng, (3, 4))
    return [Sample((x, 1, Int([0, 2]), 1.5), {}, "dim 1"), Sample((x, 0, Int([2, 2]), -1.0), {}, "repeated"),
            Sample((x, -1, Int(np.zeros(0, int)), 3.0), {}, "empty index"),
            Sample((Int(INTS), 1, Int([1]), 7), {}, "int operand")]


def _index_add(rng):
    x = uniform(rng, (3, 4))
    return [Sample((x, 1, Int([0, 2, 0]), uniform(rng, (3, 3))), {}, "dim 1, repeated"),
            Sample((x, 0, Int([2]), uniform(rng, (1, 4))), {}, "dim 0"),
            Sample((x, 0, Int([1, 0]), uniform(rng, (2, 4))), {"alpha": 2.5}, "alpha"),
            Sample((Int(INTS), 1, Int([2, 2]), Int([[1, 2], [3, 4]])), {}, "int operands")]


def _method_or_fn(name):
    return lambda m, *args, **kw: getattr(m, name)(*args, **kw)


ROWS = [
    Row("hg.cat", _list("cat"), _cat),
    Row("hg.stack", _list("stack"), _stack),
    Row("hg.hstack", _list("hstack"), lambda rng: _joins(rng)),
    Row("hg.vstack", _list("vstack"), lambda rng: _joins(rng)),
    Row("hg.dstack", _list("dstack"), lambda rng: _joins(rng)),
    Row("hg.column_stack", _list("column_stack"), lambda rng: _joins(rng)),
    Row("hg.meshgrid", lambda m, *ts, **kw: m.meshgrid(*ts, **kw), _meshgrid),
    Row("hg.cartesian_prod", lambda m, *ts: m.cartesian_prod(*ts),
        lambda rng: [Sample((uniform(rng, (2,)), uniform(rng, (3,))), {}, "two"),
                     Sample((uniform(rng, (2,)), uniform(rng, (3,)), uniform(rng, (2,))), {}, "three"),
                     Sample((uniform(rng, (3,)),), {}, "one"), Sample((Int([1, 2]), Int([3, 4])), {}, "int operands")]),
    Row("hg.gather", _method_or_fn("gather"), _gather, also=("Tensor.gather",)),
    Row("hg.scatter", _method_or_fn("scatter"), _scatter, also=("Tensor.scatter",)),
    Row("hg.scatter_add", _method_or_fn("scatter_add"), _scatter_add, also=("Tensor.scatter_add",)),
    Row("hg.masked_select", _method_or_fn("masked_select"), _masked_select, also=("Tensor.masked_select",)),
    Row("hg.index_fill", _method_or_fn("index_fill"), _index_fill, also=("Tensor.index_fill",)),
    Row("hg.index_add", _method_or_fn("index_add"), _index_add, also=("Tensor.index_add",)),
]
