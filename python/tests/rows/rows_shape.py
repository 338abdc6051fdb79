"""Rows of the ops that rearrange one tensor: reshape and view, permute and transpose, squeeze and
unsqueeze, flatten, movedim, narrow, select, expand, the diagonals and triangles, roll, tile,
repeat and repeat_interleave, clone and contiguous, as functions, methods and properties."""

import numpy as np

from . import Bool, Int, Row, Sample
from .samples import BOOLS, INTS, uniform


def _s(rng, shape):
    return uniform(rng, shape)


def _samples(*specs):
    """specs: (shape, args, kwargs, label): one sample each, the tensor drawn at shape, plus an int
    and a bool operand at the first spec's arguments when its shape is (2, 3)."""
    def make(rng):
        out = [Sample((_s(rng, shape), *args), kwargs, label) for shape, args, kwargs, label in specs]
        first = [s for s in specs if s[0] == (2, 3)]
        if first:
            _, args, kwargs, label = first[0]
            out.append(Sample((Int(INTS), *args), kwargs, "int operand, " + label))
            out.append(Sample((Bool(BOOLS), *args), kwargs, "bool operand, " + label))
        return out
    return make


def _fn(name):
    return lambda m, *args, **kw: getattr(m, name)(*args, **kw)


def _method(name):
    return lambda m, x, *args, **kw: getattr(x, name)(*args, **kw)


ROWS = [
    Row("hg.reshape", _fn("reshape"), _samples(((2, 3), ((3, 2),), {}, "(2, 3) to (3, 2)"),
                                              ((2, 3, 2), ((-1, 3),), {}, "-1"), ((), ((1, 1),), {}, "0-d to (1, 1)"),
                                              ((1,), ((),), {}, "(1,) to 0-d"), ((0, 4), ((2, 0, 2),), {}, "empty"))),
    Row("Tensor.reshape", _method("reshape"), _samples(((2, 3), (3, 2), {}, "sizes as arguments"),
                                                      ((2, 3, 2), ((4, 3),), {}, "a tuple"),
                                                      ((2, 3), (-1,), {}, "-1"))),
    Row("Tensor.view", _method("view"), _samples(((2, 3), (3, 2), {}, "sizes as arguments"),
                                                ((2, 3, 2), ((4, -1),), {}, "a tuple with -1"),
                                                ((), (1,), {}, "0-d to (1,)"), ((0, 3), (3, 0), {}, "empty"))),
    Row("Tensor.view_as", lambda m, x, y: x.view_as(y),
        lambda rng: [Sample((_s(rng, (2, 3)), Int(np.zeros((3, 2), int))), {}, "(2, 3) as (3, 2)"),
                     Sample((_s(rng, (4,)), Int(np.zeros((2, 2), int))), {}, "(4,) as (2, 2)")]),
    Row("Tensor.reshape_as", lambda m, x, y: x.reshape_as(y),
        lambda rng: [Sample((_s(rng, (2, 3)), Int(np.zeros((3, 2), int))), {}, "(2, 3) as (3, 2)"),
                     Sample((_s(rng, ()), Int(np.zeros((1, 1), int))), {}, "0-d as (1, 1)")]),
    Row("hg.permute", lambda m, x, dims: m.permute(x, dims),
        _samples(((2, 3), ((1, 0),), {}, "(1, 0)"), ((2, 3, 4), ((2, 0, 1),), {}, "(2, 0, 1)"),
                 ((2, 3, 4), ((-1, 0, -2),), {}, "negative dims"), ((), ((),), {}, "0-d"),
                 ((0, 3), ((1, 0),), {}, "empty"))),
    Row("Tensor.permute", _method("permute"), _samples(((2, 3), (1, 0), {}, "dims as arguments"),
                                                      ((2, 3, 4), ((2, 0, 1),), {}, "a tuple"))),
    Row("hg.transpose", _fn("transpose"),
        _samples(((2, 3), (0, 1), {}, "(0, 1)"), ((2, 3, 4), (-1, 0), {}, "(-1, 0)"), ((), (0, -1), {}, "0-d"),
                 ((0, 3), (0, 1), {}, "empty")),
        also=("Tensor.transpose", "Tensor.swapaxes", "Tensor.swapdims")),
    Row("hg.t", _fn("t"), _samples(((2, 3), (), {}, "matrix"), ((4,), (), {}, "vector"), ((), (), {}, "0-d"),
                                  ((0, 3), (), {}, "empty")), also=("Tensor.t",)),
    Row("Tensor.T", lambda m, x: x.T, _samples(((2, 3), (), {}, "matrix"), ((2, 3, 4), (), {}, "3-d (reversed)"),
                                               ((4,), (), {}, "vector"), ((), (), {}, "0-d"))),
    Row("Tensor.mT", lambda m, x: x.mT, _samples(((2, 3), (), {}, "matrix"), ((2, 3, 4), (), {}, "a batch"),
                                                 ((0, 2, 3), (), {}, "empty"))),
    Row("Tensor.mH", lambda m, x: x.mH, _samples(((2, 3), (), {}, "matrix (real: mT)"),
                                                 ((2, 3, 4), (), {}, "a batch"))),
    Row("hg.squeeze", _fn("squeeze"),
        _samples(((1, 3, 1), (), {}, "every size-1 dim"), ((1, 3, 1), (0,), {}, "dim 0"),
                 ((2, 3), (1,), {}, "a dim not of size 1"), ((1, 3, 1), (-1,), {}, "dim -1"), ((), (), {}, "0-d"),
                 ((), (0,), {}, "0-d dim 0"), ((1, 0), (), {}, "empty")),
        also=("Tensor.squeeze",)),
    Row("hg.unsqueeze", _fn("unsqueeze"),
        _samples(((2, 3), (0,), {}, "dim 0"), ((2, 3), (-1,), {}, "dim -1"), ((2, 3), (2,), {}, "dim 2"),
                 ((), (0,), {}, "0-d"), ((0, 3), (1,), {}, "empty")),
        also=("Tensor.unsqueeze",)),
    Row("hg.flatten", _fn("flatten"),
        _samples(((2, 3), (), {}, "everything"), ((2, 3, 4), (1,), {}, "from dim 1"),
                 ((2, 3, 4, 2), (1, 2), {}, "dims 1 to 2"), ((2, 3, 4), (), {"start_dim": -2}, "start_dim -2"),
                 ((), (), {}, "0-d"), ((0, 3), (), {}, "empty")),
        also=("Tensor.flatten",)),
    Row("hg.unflatten", _fn("unflatten"),
        _samples(((2, 6), (1, (2, 3)), {}, "(2, 3)"), ((2, 6), (-1, (3, -1)), {}, "-1 size"),
                 ((6,), (0, (1, 6, 1)), {}, "size-1 dims"), ((0, 6), (1, (2, 3)), {}, "empty")),
        also=("Tensor.unflatten",)),
    Row("hg.movedim", _fn("movedim"),
        _samples(((2, 3, 4), (0, 2), {}, "0 to 2"), ((2, 3, 4), ((0, 1), (2, 0)), {}, "two dims"),
                 ((2, 3), (-1, 0), {}, "-1 to 0"), ((), (0, 0), {}, "0-d")),
        also=("hg.moveaxis", "Tensor.movedim", "Tensor.moveaxis")),
    Row("hg.narrow", _fn("narrow"),
        _samples(((2, 3), (1, 1, 2), {}, "dim 1"), ((4, 3), (0, 0, 0), {}, "length 0"),
                 ((4, 3), (-1, 2, 1), {}, "dim -1"), ((4, 3), (0, -2, 2), {}, "negative start")),
        also=("Tensor.narrow",)),
    Row("Tensor.select", _method("select"),
        _samples(((2, 3), (1, 2), {}, "dim 1"), ((2, 3, 4), (0, -1), {}, "index -1"),
                 ((2, 3), (-1, 0), {}, "dim -1"), ((2, 0), (0, 1), {}, "empty"))),
    Row("Tensor.expand", _method("expand"),
        _samples(((2, 1), (2, 3), {}, "a size-1 dim"), ((3,), (2, 3), {}, "a new dim"),
                 ((2, 1), (-1, 4), {}, "-1 keeps a size"), ((), (2, 2), {}, "0-d"),
                 ((1, 3), ((0, 3),), {}, "to empty"))),
    Row("Tensor.expand_as", lambda m, x, y: x.expand_as(y),
        lambda rng: [Sample((_s(rng, (2, 1)), Int(np.zeros((2, 3), int))), {}, "(2, 1) as (2, 3)"),
                     Sample((_s(rng, ()), Int(np.zeros((3,), int))), {}, "0-d as (3,)")]),
    Row("hg.broadcast_to", _fn("broadcast_to"),
        _samples(((2, 1), ((2, 3),), {}, "a size-1 dim"), ((3,), ((4, 3),), {}, "a new dim"),
                 ((), ((2,),), {}, "0-d"), ((1, 3), ((0, 3),), {}, "to empty")),
        also=("Tensor.broadcast_to",)),
    Row("Tensor.repeat", _method("repeat"),
        _samples(((2, 3), (2, 1), {}, "(2, 1)"), ((2, 3), ((1, 2, 2),), {}, "a new dim"),
                 ((), (3,), {}, "0-d"), ((2, 3), (0, 1), {}, "zero repeats"))),
    Row("hg.tile", _fn("tile"),
        _samples(((2, 3), ((2, 1),), {}, "(2, 1)"), ((2, 3), ((2,),), {}, "fewer counts than dims"),
                 ((3,), ((2, 2),), {}, "more counts than dims"), ((), ((3,),), {}, "0-d")),
        also=("Tensor.tile",)),
    Row("hg.repeat_interleave", _fn("repeat_interleave"),
        _samples(((2, 3), (2,), {}, "flattened"), ((2, 3), (2, 1), {}, "dim 1"),
                 ((2, 3), (3,), {"dim": 0}, "dim 0"), ((), (2,), {}, "0-d"), ((2, 3), (0, 0), {}, "zero repeats")),
        also=("Tensor.repeat_interleave",)),
    Row("hg.roll", _fn("roll"),
        _samples(((2, 3), (1,), {}, "flattened"), ((2, 3), (1, 1), {}, "dim 1"),
                 ((2, 3), ((1, -1), (0, 1)), {}, "two dims"), ((2, 3), (-4, 1), {}, "past the size"),
                 ((), (1,), {}, "0-d"), ((0, 3), (1, 1), {}, "empty")),
        also=("Tensor.roll",)),
    Row("hg.diagonal", _fn("diagonal"),
        _samples(((3, 3), (), {}, "square"), ((2, 4), (1,), {}, "offset 1"), ((4, 2), (-1,), {}, "offset -1"),
                 ((2, 3, 4), (0, 1, 2), {}, "dims 1, 2"), ((2, 3, 4), (), {"dim1": -1, "dim2": 0}, "dims -1, 0"),
                 ((2, 3), (5,), {}, "offset past the end")),
        also=("Tensor.diagonal",)),
    Row("hg.diag", _fn("diag"),
        _samples(((3,), (), {}, "vector to matrix"), ((3,), (1,), {}, "vector, offset 1"),
                 ((3, 4), (), {}, "matrix to vector"), ((3, 4), (-1,), {}, "matrix, offset -1"),
                 ((0,), (), {}, "empty vector")),
        also=("Tensor.diag",)),
    Row("hg.diag_embed", _fn("diag_embed"),
        _samples(((2, 3), (), {}, "a batch"), ((3,), (1,), {}, "offset 1"), ((2, 3), (-1, 0, 2), {}, "dims 0, 2"),
                 ((0, 3), (), {}, "empty")),
        also=("Tensor.diag_embed",)),
    Row("hg.tril", _fn("tril"),
        _samples(((3, 4), (), {}, "matrix"), ((3, 4), (1,), {}, "diagonal 1"), ((3, 4), (-2,), {}, "diagonal -2"),
                 ((2, 3, 3), (), {}, "a batch"), ((0, 3), (), {}, "empty"), ((2, 3), (), {}, "(2, 3)")),
        also=("Tensor.tril",)),
    Row("hg.triu", _fn("triu"),
        _samples(((3, 4), (), {}, "matrix"), ((3, 4), (1,), {}, "diagonal 1"), ((3, 4), (-2,), {}, "diagonal -2"),
                 ((2, 3, 3), (), {}, "a batch"), ((0, 3), (), {}, "empty"), ((2, 3), (), {}, "(2, 3)")),
        also=("Tensor.triu",)),
    Row("hg.clone", _fn("clone"), _samples(((2, 3), (), {}, "(2, 3)"), ((), (), {}, "0-d"), ((0, 3), (), {}, "empty")),
        also=("Tensor.clone",)),
    Row("Tensor.contiguous", _method("contiguous"),
        _samples(((2, 3), (), {}, "(2, 3)"), ((), (), {}, "0-d"), ((0, 3), (), {}, "empty"))),
    Row("Tensor.detach", _method("detach"), _samples(((2, 3), (), {}, "(2, 3)"), ((), (), {}, "0-d")),
        grad=False, why="cuts the graph: no gradient by definition"),
    Row("hg.atleast_1d", _fn("atleast_1d"), _samples(((), (), {}, "0-d"), ((3,), (), {}, "1-d"),
                                                    ((2, 3), (), {}, "(2, 3)"))),
    Row("hg.atleast_2d", _fn("atleast_2d"), _samples(((), (), {}, "0-d"), ((3,), (), {}, "1-d"),
                                                    ((2, 3), (), {}, "(2, 3)"), ((2, 3, 1), (), {}, "3-d"))),
    Row("hg.atleast_3d", _fn("atleast_3d"), _samples(((), (), {}, "0-d"), ((3,), (), {}, "1-d"),
                                                    ((2, 3), (), {}, "(2, 3)"), ((2, 3, 1, 2), (), {}, "4-d"))),
    Row("hg.unbind", _fn("unbind"), _samples(((2, 3), (), {}, "(2, 3)"), ((2, 3), (1,), {}, "dim 1"),
                                            ((2, 3), (-1,), {}, "dim -1"), ((0, 3), (1,), {}, "empty")),
        also=("Tensor.unbind",)),
    Row("hg.chunk", _fn("chunk"), _samples(((2, 3), (2, 1), {}, "(2, 3)"), ((5, 2), (3,), {}, "uneven"),
                                          ((4, 2), (6,), {}, "more chunks than rows"), ((2, 3), (1, -1), {}, "dim -1")),
        also=("Tensor.chunk",)),
    Row("hg.split", _fn("split"), _samples(((2, 3), (2, 1), {}, "(2, 3)"), ((5, 2), (2,), {}, "uneven"),
                                          ((5, 2), ([1, 4],), {}, "sections"),
                                          ((5, 2), ([0, 5],), {}, "an empty section"),
                                          ((2, 3), (1, -1), {}, "dim -1")),
        also=("Tensor.split",)),
]
