"""Rows of the factories: tensor, as_tensor, from_numpy, from_dlpack, zeros, ones, empty, full,
arange, eye (values compared with torch), and the random ones randn, rand, randint, randperm,
multinomial, bernoulli (shape and dtype compared with torch; the draws are handgrad's own
generator's, so each row checks what its draws must satisfy)."""

import numpy as np

from . import Const, Dtype, Row, Sample
from .samples import fixed, uniform


class Raw:
    """A value the harness passes as is (a NumPy array that must stay an array)."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"Raw({self.value!r})"


def _raw(v):
    return v.value if isinstance(v, Raw) else v


def _factory(name):
    return lambda m, *args, **kw: getattr(m, name)(*[_raw(a) for a in args], **kw)


def _sizes(extra=()):
    return fixed(Sample((2, 3), {}, "sizes as arguments"), Sample(((2, 3),), {}, "a tuple"),
                 Sample(([4],), {}, "a list"), Sample(((),), {}, "an empty tuple (0-d)"),
                 Sample((0, 3), {}, "empty"), Sample((2,), {"dtype": Dtype("float64")}, "float64"),
                 Sample((2, 2), {"dtype": Dtype("int64")}, "int64"), Sample((3,), {"dtype": Dtype("bool")}, "bool"),
                 Sample((np.int64(2),), {}, "a NumPy int"), *extra)


def _tensor_samples(rng):
    return [Sample(([[1.0, 2.0], [3.0, 4.0]],), {}, "nested floats (float32)"),
            Sample(([[1, 2], [3, 4]],), {}, "nested ints (int64)"),
            Sample(([True, False],), {}, "bools"),
            Sample(([1, 2.5],), {}, "ints and floats"),
            Sample((3.5,), {}, "a number (0-d)"),
            Sample((7,), {}, "an int (0-d)"),
            Sample(([],), {}, "an empty list"),
            Sample((Raw(uniform(rng, (2, 3))),), {}, "a float64 array"),
            Sample((Raw(uniform(rng, (2, 3)).astype(np.float32)),), {}, "a float32 array"),
            Sample((Raw(np.arange(6).reshape(2, 3)),), {}, "an int64 array"),
            Sample((Raw(np.array([True, False])),), {}, "a bool array"),
            Sample((Raw(np.arange(12.0).reshape(3, 4)[:, ::2]),), {}, "a non-contiguous array"),
            Sample((Raw(np.float64(2.5)),), {}, "a NumPy float64"),
            Sample(([1.5, 2.5],), {"dtype": Dtype("float64")}, "dtype float64"),
            Sample(([1.7, -2.7],), {"dtype": Dtype("int64")}, "floats to int64"),
            Sample(([0.0, 2.0],), {"dtype": Dtype("bool")}, "floats to bool"),
            Sample(([[np.inf, np.nan, -0.0]],), {}, "inf and nan"),
            Sample(([1e300, 1e-300],), {"dtype": Dtype("float64")}, "huge and tiny")]


def _full(rng):
    return [Sample(((2, 3), 1.5), {}, "a float"), Sample(((2,), 3), {}, "an int"),
            Sample(((2,), True), {}, "a bool"), Sample(((), 2.5), {}, "0-d"),
            Sample(((0, 2), 1.0), {}, "empty"), Sample(((2,), 3), {"dtype": Dtype("float64")}, "an int, dtype float64"),
            Sample(((2,), np.inf), {}, "inf"), Sample(((2,), np.nan), {"dtype": Dtype("float64")}, "nan"),
            Sample(([2, 2], -1), {"dtype": Dtype("int64")}, "a list of sizes, int64")]


def _arange(rng):
    return [Sample((5,), {}, "end"), Sample((1, 4), {}, "start, end"), Sample((1, 10, 3), {}, "step 3"),
            Sample((0, -3, -1), {}, "negative step"), Sample((0,), {}, "empty"), Sample((3, 3), {}, "start = end"),
            Sample((1.0, 2.0, 0.25), {}, "float step"), Sample((0.0, 1.0, 0.1), {}, "float step 0.1"),
            Sample((5,), {"dtype": Dtype("float64")}, "float64"),
            Sample((-1.5, 2.5), {"dtype": Dtype("float64")}, "float start"),
            Sample((2.5,), {}, "a float end"), Sample((np.int64(4),), {}, "a NumPy int"),
            Sample((0, 5, 2), {"dtype": Dtype("int64")}, "int64")]


def _eye(rng):
    return [Sample((3,), {}, "n"), Sample((2, 4), {}, "n, m"), Sample((4, 2), {}, "tall"), Sample((0,), {}, "0"),
            Sample((3,), {"dtype": Dtype("float64")}, "float64"), Sample((2,), {"dtype": Dtype("int64")}, "int64"),
            Sample((2, 3), {"dtype": Dtype("bool")}, "bool")]


def _gen(m, seed):
    return m.Generator(seed) if m.__name__ == "handgrad" else m.Generator().manual_seed(seed)


def _random(name):
    """fn for a random factory: generator=<int> becomes m's generator seeded with it."""
    def fn(m, *args, **kw):
        if "generator" in kw:
            kw = {**kw, "generator": _gen(m, kw["generator"])}
        return getattr(m, name)(*[_raw(a) for a in args], **kw)
    return fn


def _values(out):
    return np.asarray(out.detach().numpy(), dtype=np.float64)


def _check_randn(out, *args, **kw):
    v = _values(out)
    assert np.isfinite(v).all(), "randn drew a non-finite number"
    if v.size >= 10000:
        assert abs(v.mean()) < 0.05 and abs(v.std() - 1) < 0.05, f"randn: mean {v.mean()}, std {v.std()}"


def _check_rand(out, *args, **kw):
    v = _values(out)
    assert ((v >= 0) & (v < 1)).all(), "rand drew outside [0, 1)"
    if v.size >= 10000:
        assert abs(v.mean() - 0.5) < 0.02, f"rand: mean {v.mean()}"


def _check_randint(out, *args, **kw):
    v = _values(out)
    low, high = (0, args[0]) if len(args) == 2 else args[:2]
    assert ((v >= low) & (v < high)).all(), f"randint drew outside [{low}, {high})"
    if v.size >= 1000:
        assert set(np.unique(v)) == set(range(low, high)), "randint: some value never drawn in 1000 draws"


def _check_randperm(out, n, **kw):
    assert sorted(_values(out).tolist()) == list(range(n)), "randperm: not a permutation"


def _check_multinomial(out, probs, num_samples, replacement=False, **kw):
    v = out.numpy()
    p = np.atleast_2d(probs.numpy())
    rows = np.atleast_2d(v)
    for r, w in zip(rows, p):
        assert (w[r] > 0).all(), "multinomial drew a category of weight 0"
        if not replacement:
            assert len(set(r.tolist())) == len(r), "multinomial without replacement drew a category twice"


def _check_bernoulli(out, x, p=None, **kw):
    v, probs = _values(out), np.broadcast_to(x.numpy() if p is None else p, out.shape)
    assert np.isin(v, (0.0, 1.0)).all(), "bernoulli drew other than 0 and 1"
    assert (v[probs == 0] == 0).all() and (v[probs == 1] == 1).all(), "bernoulli: p 0 or 1 not respected"


def _check_zeros(out, *args, **kw):
    assert not _values(out).any(), "hg.empty: handgrad fills zeros"


def _shapes(extra=()):
    return fixed(Sample((2, 3), {}, "sizes as arguments"), Sample(((2, 3),), {}, "a tuple"),
                 Sample(((),), {}, "0-d"), Sample((0, 3), {}, "empty"),
                 Sample((3,), {"dtype": Dtype("float64")}, "float64"),
                 Sample((2,), {"generator": 5}, "a generator"), Sample((100, 100), {}, "10000 draws"), *extra)


ROWS = [
    Row("hg.tensor", _factory("tensor"), _tensor_samples, grad=False, why="a factory: no tensor argument"),
    Row("hg.as_tensor", _factory("as_tensor"), lambda rng: _tensor_samples(rng)[:14], grad=False,
        why="a factory: no tensor argument"),
    Row("hg.tensor", lambda m, x: (m.tensor(x.value, requires_grad=True).requires_grad,
                                   m.tensor(x.value, requires_grad=True).is_leaf),
        fixed(Sample((Raw(np.array([1.0, 2.0])),), {}, "requires_grad")), grad=False,
        why="a factory: its result is a leaf that requires grad (the flags compared with torch's)"),
    Row("hg.from_numpy", lambda m, a: m.from_numpy(a.value.copy()),
        lambda rng: [Sample((Raw(uniform(rng, (2, 3))),), {}, "float64"),
                     Sample((Raw(uniform(rng, (2, 3)).astype(np.float32)),), {}, "float32"),
                     Sample((Raw(np.arange(4)),), {}, "int64"), Sample((Raw(np.array([True])),), {}, "bool"),
                     Sample((Raw(np.array(3.0)),), {}, "0-d"),
                     Sample((Raw(np.zeros((0, 2))),), {}, "empty")],
        grad=False, why="shares a NumPy array's memory: no tensor argument"),
    Row("hg.from_dlpack", lambda m, a: m.from_dlpack(a.value.copy()),
        lambda rng: [Sample((Raw(uniform(rng, (2, 3))),), {}, "float64"),
                     Sample((Raw(np.arange(4)),), {}, "int64"), Sample((Raw(np.zeros((0, 2))),), {}, "empty")],
        grad=False, why="shares another library's memory: no tensor argument"),
    Row("hg.zeros", _factory("zeros"), _sizes(), grad=False, why="a factory: no tensor argument"),
    Row("hg.ones", _factory("ones"), _sizes(), grad=False, why="a factory: no tensor argument"),
    Row("hg.empty", _factory("empty"), _sizes(), grad=False, compare="meta", check=_check_zeros,
        why="PyTorch leaves the values unset: shape and dtype compared; handgrad's zeros checked"),
    Row("hg.full", _factory("full"), _full, grad=False, why="a factory: no tensor argument"),
    Row("hg.arange", _factory("arange"), _arange, grad=False, why="a factory: no tensor argument"),
    Row("hg.eye", _factory("eye"), _eye, grad=False, why="a factory: no tensor argument"),
    Row("hg.randn", _random("randn"), _shapes(), grad=False, compare="meta", check=_check_randn,
        why="random draws from handgrad's own generator: shape and dtype compared, the draws checked"),
    Row("hg.rand", _random("rand"), _shapes(), grad=False, compare="meta", check=_check_rand,
        why="random draws from handgrad's own generator: shape and dtype compared, the draws checked"),
    Row("hg.randint", _random("randint"),
        fixed(Sample((5, (2, 3)), {}, "high, size"), Sample((-2, 3, (4,)), {}, "low, high, size"),
              Sample((0, 10, (1000,)), {}, "1000 draws"), Sample((3, (0,)), {}, "empty"),
              Sample((4, (2,)), {"generator": 3}, "a generator"), Sample((2, ()), {}, "0-d")),
        grad=False, compare="meta", check=_check_randint,
        why="random draws from handgrad's own generator: shape and dtype compared, the draws checked"),
    Row("hg.randperm", _random("randperm"),
        fixed(Sample((5,), {}, "5"), Sample((0,), {}, "0"), Sample((1,), {}, "1"), Sample((100,), {}, "100"),
              Sample((6,), {"generator": 2}, "a generator")),
        grad=False, compare="meta", check=_check_randperm,
        why="random draws from handgrad's own generator: shape and dtype compared, the permutation checked"),
    Row("hg.multinomial", _random("multinomial"),
        lambda rng: [Sample((Const(np.array([0.2, 0.0, 0.5, 0.3])), 2), {}, "1-d, without replacement"),
                     Sample((Const(np.array([[1.0, 0.0, 3.0], [0.0, 2.0, 2.0]])), 2), {}, "2-d"),
                     Sample((Const(np.array([0.0, 1.0, 2.0])), 5), {"replacement": True}, "with replacement"),
                     ],
        grad=False, compare="meta", check=_check_multinomial,
        why="random draws from handgrad's own generator: shape and dtype compared, the draws checked"),
    Row("hg.bernoulli", _random("bernoulli"),
        lambda rng: [Sample((Const(np.array([0.0, 1.0, 0.5, 0.25])),), {}, "probabilities"),
                     Sample((Const(uniform(rng, (3, 4), (0, 1))),), {}, "random probabilities"),
                     Sample((Const(np.zeros((2, 3))),), {"p": 1.0}, "p 1"),
                     Sample((Const(np.ones(()) * 0.5),), {}, "0-d")],
        grad=False, compare="meta", check=_check_bernoulli, also=("Tensor.bernoulli",),
        why="random draws from handgrad's own generator: shape and dtype compared, the draws checked"),
]
