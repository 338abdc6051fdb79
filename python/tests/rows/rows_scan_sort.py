"""Rows of the ops of ops/scan.cpp and ops/sort.cpp: cumprod (its gradient exact at zeros, to
second order), sort, argsort, msort and topk (values are gather(x, dim, indices): the gradient goes
back where each value came from). Gradient samples have distinct values (a tie would move a
value's gradient between its places); ties, NaN and int64 inputs are forward samples."""
import numpy as np

from . import Bool, Int, Row, Sample

NAN, INF = np.nan, np.inf


def _distinct(rng, shape):
    """Values at least 0.1 apart, shuffled: no tie within finite differences' reach."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.3 + rng.uniform(0, 0.1, n) - 0.15 * n).reshape(shape)


def _cumprod(rng):
    zeros = np.array([[0.5, 0.0, 1.5, -2.0], [0.0, 1.2, 0.7, 0.9], [1.1, -0.8, 0.0, 0.0], [0.0, 0.0, 0.8, 0.0]])
    return [
        Sample((rng.uniform(-1.5, 1.5, (3, 4)), 1), label="dim 1"),
        Sample((rng.uniform(-1.5, 1.5, (4, 2, 3)), 0), label="dim 0 of (4, 2, 3)"),
        Sample((zeros, 1), label="rows with one, two and three zeros"),
        Sample((np.array(1.7), 0), label="0-d"),
        Sample((np.zeros((2, 0)), 1), label="empty", grad=False),
        Sample((np.array([[2.0, INF, 0.0], [NAN, 1.0, 3.0]]), 1), label="edge: inf times 0, nan", grad=False),
        Sample((Int(np.array([[1, -2, 3], [4, 5, -6]])), 1), label="int64 (exact)", grad=False),
        Sample((Bool(np.array([True, True, False])), 0), label="bool (int64 counts)", grad=False),
    ]


def _sorting(rng, k=None):
    extra = () if k is None else (k,)
    return [
        Sample((_distinct(rng, (3, 5)), *extra), label="(3, 5), last dim"),
        Sample((_distinct(rng, (4, 3)), *extra), {"dim": 0, "descending" if k is None else "largest": True},
               label="dim 0, largest first"),
        Sample((np.array([[1.0, NAN, -INF, 2.0, INF, 0.0]]), *(() if k is None else (3,))),
               label="edge: nan sorts as the largest, ±inf", grad=False),
        Sample((Int(np.array([[3, -1, 7, 0], [5, 4, -2, 9]])), *(() if k is None else (2,))), label="int64", grad=False),
    ]


def _ties(rng):
    return [Sample((np.array([[2.0, 1.0, 2.0, 1.0, 3.0]]),), {"stable": True}, label="ties keep their order (stable)",
                   grad=False)]


ROWS = [
    Row("hg.cumprod", lambda m, x, dim: m.cumprod(x, dim), _cumprod, also=("Tensor.cumprod",)),
    Row("hg.sort", lambda m, x, **kw: m.sort(x, **kw).values, lambda rng: _sorting(rng) + _ties(rng)),
    Row("Tensor.sort", lambda m, x, **kw: x.sort(**kw).values, lambda rng: _sorting(rng)),
    Row("hg.sort", lambda m, x, **kw: m.sort(x, **kw).indices, lambda rng: _sorting(rng) + _ties(rng), grad=False,
        why="the indices: integers"),
    Row("hg.argsort", lambda m, x, **kw: m.argsort(x, **kw), lambda rng: _sorting(rng) + _ties(rng), grad=False,
        why="integers", also=("Tensor.argsort",)),
    Row("hg.msort", lambda m, x: m.msort(x), lambda rng: [Sample((_distinct(rng, (4, 3)),), label="(4, 3)")],
        also=("Tensor.msort",)),
    Row("hg.topk", lambda m, x, k, **kw: m.topk(x, k, **kw).values, lambda rng: _sorting(rng, 2)),
    Row("Tensor.topk", lambda m, x, k, **kw: x.topk(k, **kw).values, lambda rng: _sorting(rng, 2)),
    Row("hg.topk", lambda m, x, k, **kw: m.topk(x, k, **kw).indices, lambda rng: _sorting(rng, 2), grad=False,
        why="the indices: integers"),
]
