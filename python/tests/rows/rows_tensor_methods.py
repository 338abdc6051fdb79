"""Rows of the Tensor methods that have no function form: conversions (to, float, double, long, int,
bool, cpu, type_as), reads (dim, size, stride, is_contiguous, item, tolist, numpy), the new_*
factories, the writes (fill_, zero_, copy_) and the in-place forms (x.add_(y) ...), each checked
against torch's and against the out-of-place op."""

import handgrad as hg
import numpy as np

from . import Bool, Const, Dtype, F32, Int, Raises, Row, Sample
from .samples import BOOLS, EDGES, INTS, uniform

IN_PLACE = "in place: refused on a tensor that requires grad (the library records no in-place op)"


def _inplace(name, make):
    """A row of x.<name>_(...) on a copy of x: the same numbers as torch's, and the tensor itself returned."""
    def fn(m, x, *args, **kw):
        target = x.clone()
        out = getattr(target, name + "_")(*args, **kw)
        assert out is target, f"{name}_ returned a new tensor, not the one it wrote into"
        return out
    return Row(f"Tensor.{name}_", fn, make, grad=False, why=IN_PLACE)


def _u(*shape, domain=(-2.0, 2.0), signed=False):
    return lambda rng: uniform(rng, shape, domain, signed)


def _one(*arg_makers, kwargs=None, edges=True):
    """Samples of x.<op>_(*args): random arguments, a non-contiguous-safe 0-d one, and the edges."""
    kwargs = kwargs or {}

    def make(rng):
        args = tuple(a(rng) if callable(a) else a for a in arg_makers)
        out = [Sample(tuple(Const(a) if isinstance(a, np.ndarray) else a for a in args), kwargs, "random")]
        if edges and len(args) == 1:
            out.append(Sample((Const(EDGES),), kwargs, "edge ±0 ±inf nan"))
        return out
    return make


POSITIVE = dict(domain=(0.2, 2.0))
_idx = Int([[0, 1, 2, 0], [1, 2, 0, 1]])

INPLACE_ROWS = [
    _inplace("add", _one(_u(2, 3), _u(3))), _inplace("sub", _one(_u(2, 3), _u(2, 3))),
    _inplace("mul", _one(_u(2, 3), 2.5)), _inplace("div", _one(_u(2, 3), _u(2, 3, domain=(0.2, 2), signed=True))),
    _inplace("pow", _one(_u(2, 3, **POSITIVE), 2.5)), _inplace("neg", _one(_u(2, 3))),
    _inplace("abs", _one(_u(2, 3))), _inplace("exp", _one(_u(2, 3))), _inplace("log", _one(_u(2, 3, **POSITIVE))),
    _inplace("sqrt", _one(_u(2, 3, **POSITIVE))), _inplace("tanh", _one(_u(2, 3))),
    _inplace("sigmoid", _one(_u(2, 3))), _inplace("relu", _one(_u(2, 3), edges=False)),
    _inplace("floor", _one(_u(2, 3))), _inplace("ceil", _one(_u(2, 3))), _inplace("round", _one(_u(2, 3))),
    _inplace("trunc", _one(_u(2, 3))), _inplace("sign", _one(_u(2, 3), edges=False)),
    _inplace("reciprocal", _one(_u(2, 3, domain=(0.2, 2), signed=True))), _inplace("square", _one(_u(2, 3))),
    _inplace("sin", _one(_u(2, 3))), _inplace("cos", _one(_u(2, 3))),
    _inplace("clamp", _one(_u(2, 3), -0.5, 0.5)), _inplace("clip", _one(_u(2, 3), kwargs={"min": -0.5, "max": 0.5})),
    _inplace("clamp_min", _one(_u(2, 3), 0.25)), _inplace("clamp_max", _one(_u(2, 3), -0.25)),
    _inplace("scatter", _one(_u(3, 4), 0, _idx, _u(2, 4))), _inplace("scatter_add", _one(_u(3, 4), 0, _idx, _u(2, 4))),
    _inplace("index_fill", _one(_u(3, 4), 1, Int([0, 2]), 1.5)),
    _inplace("index_add", _one(_u(3, 4), 0, Int([2, 0]), _u(2, 4))),
    _inplace("fmod", _one(_u(2, 3, domain=(-5, 5)), 0.75)), _inplace("remainder", _one(_u(2, 3, domain=(-5, 5)), 0.75)),
    _inplace("floor_divide", _one(_u(2, 3, domain=(-5, 5)), 0.75)),
    _inplace("lerp", _one(_u(2, 3), _u(2, 3), 0.3)), _inplace("tril", _one(_u(3, 4), edges=False)),
    _inplace("triu", _one(_u(3, 4), 1)), _inplace("nan_to_num", _one(_u(2, 3))),
]


TO_INT_REFUSED = ("a float ±inf or nan converted to an integer raises hg.Error naming the position (PyTorch gives an "
                  "undefined integer)")


def _conversions(to_int=False):
    def make(rng):
        x = uniform(rng, (2, 3), (-3, 3))
        edges = np.array([0.0, -0.0, np.inf, -np.inf, 0.5, -1.5])
        refused = dict(differs=TO_INT_REFUSED, expect=Raises(hg.Error)) if to_int else {}
        return [Sample((x,), {}, "float64"), Sample((F32(x),), {}, "float32"), Sample((Int(INTS),), {}, "int64"),
                Sample((Bool(BOOLS),), {}, "bool"), Sample((edges[[0, 1, 4, 5]],), {}, "±0, halves"),
                Sample((edges,), {}, "±inf", grad=False, **refused), Sample((uniform(rng, ()),), {}, "0-d"),
                Sample((uniform(rng, (0, 2)),), {}, "empty")]
    return make


def _to_samples(rng):
    x = uniform(rng, (2, 3), (-3, 3))
    return [Sample((x, Dtype("float64")), {}, "float64 to float64"),
            Sample((Const(x), Dtype("float32")), {}, "float64 to float32"),
            Sample((Const(x), Dtype("int64")), {}, "float64 to int64 (toward 0)"),
            Sample((Const(np.array([0.0, -0.0, 0.5, np.nan, np.inf])), Dtype("bool")), {}, "float64 to bool"),
            Sample((Int(INTS), Dtype("float32")), {}, "int64 to float32"),
            Sample((Int(INTS), Dtype("bool")), {}, "int64 to bool"),
            Sample((Bool(BOOLS), Dtype("float64")), {}, "bool to float64"),
            Sample((F32(x), Dtype("float64")), {}, "float32 to float64"),
            Sample((x, "cpu"), {}, "'cpu'"),
            Sample((Const(x), "cpu", Dtype("float32")), {}, "'cpu', float32"),
            Sample((x,), {"dtype": Dtype("float64")}, "dtype= float64")]


def _reads(rng):
    return [Sample((Const(uniform(rng, (2, 3))),), {}, "(2, 3)"), Sample((Const(uniform(rng, ())),), {}, "0-d"),
            Sample((Const(uniform(rng, (0, 3))),), {}, "empty"), Sample((Int(INTS),), {}, "int64"),
            Sample((Bool(BOOLS),), {}, "bool")]


def _one_element(rng):
    return [Sample((Const(np.array(2.5)),), {}, "0-d float64"), Sample((Const(np.array([[-1.5]])),), {}, "(1, 1)"),
            Sample((F32(np.array(0.1)),), {}, "float32"), Sample((Int(np.array(-7)),), {}, "int64"),
            Sample((Bool(np.array(True)),), {}, "bool"), Sample((Const(np.array(np.nan)),), {}, "nan")]


def _new(name, *args):
    return lambda m, x, *a, **kw: getattr(x, name)(*args, *a, **kw)


def _new_samples(rng):
    return [Sample((Const(uniform(rng, (2,))), (2, 3)), {}, "float64, a size"),
            Sample((Int(INTS), (3,)), {}, "int64"), Sample((F32(uniform(rng, (2,))), (0, 2)), {}, "empty"),
            Sample((Const(uniform(rng, (2,))), (2,)), {"dtype": Dtype("float32")}, "dtype float32")]


ROWS = INPLACE_ROWS + [
    Row("Tensor.to", lambda m, x, *a, **kw: x.to(*a, **kw), _to_samples),
    Row("Tensor.float", lambda m, x: x.float(), _conversions(), grad=False,
        why="a float32 result, beyond float64 finite differences (Tensor.to's float64 samples check the cast's "
            "gradient)"),
    Row("Tensor.double", lambda m, x: x.double(), _conversions()),
    Row("Tensor.long", lambda m, x: x.long(), _conversions(to_int=True), grad=False, why="an int64 result"),
    Row("Tensor.int", lambda m, x: x.int(), _conversions(to_int=True), grad=False, why="an integer result",
        differs="x.int() is int64, handgrad's one integer dtype (PyTorch: int32; the values are the same "
                "where int32 holds them)"),
    Row("Tensor.bool", lambda m, x: x.bool(), _conversions(), grad=False, why="a bool result"),
    Row("Tensor.half", lambda m, x: x.half(),
        lambda rng: [Sample((Const(uniform(rng, (2, 3))),), {}, "float64", expect=Raises(hg.Error),
                            differs="handgrad has no float16: x.half() raises hg.Error saying so (PyTorch: a float16 "
                                    "tensor)")],
        grad=False, why="no float16 in handgrad"),
    Row("Tensor.cpu", lambda m, x: x.cpu(), _conversions()),
    Row("Tensor.type_as", lambda m, x, y: x.type_as(y),
        lambda rng: [Sample((uniform(rng, (2, 3)), Const(np.zeros(1))), {}, "float64 as float64"),
                     Sample((Const(uniform(rng, (2, 3))), F32(np.zeros(1))), {}, "float64 as float32"),
                     Sample((Int(INTS), Bool(np.zeros(1, bool))), {}, "int64 as bool")]),
    Row("Tensor.dim", lambda m, x: x.dim(), _reads, grad=False, why="a Python int"),
    Row("Tensor.size", lambda m, x, *a: tuple(x.size()) if not a else x.size(*a),
        lambda rng: _reads(rng) + [Sample((Const(uniform(rng, (2, 3))), 1), {}, "dim 1"),
                                   Sample((Const(uniform(rng, (2, 3))), -2), {}, "dim -2")],
        grad=False, why="Python ints"),
    Row("Tensor.stride", lambda m, x, *a: tuple(x.stride()) if not a else x.stride(*a),
        lambda rng: _reads(rng)[:2] + _reads(rng)[3:] + [Sample((Const(uniform(rng, (2, 3))), -1), {}, "dim -1")],
        grad=False, why="Python ints", layouts=False),
    Row("Tensor.is_contiguous", lambda m, x: x.is_contiguous(), _reads, grad=False, why="a Python bool",
        layouts=False),
    Row("Tensor.item", lambda m, x: x.item(), _one_element, grad=False, why="a Python number"),
    Row("Tensor.tolist", lambda m, x: x.tolist(), _reads, grad=False, why="Python lists of numbers"),
    Row("Tensor.numpy", lambda m, x: x.numpy(), _reads, grad=False, why="a NumPy array sharing the tensor's memory"),
    Row("Tensor.new_zeros", _new("new_zeros"), _new_samples, grad=False, why="a factory: no gradient"),
    Row("Tensor.new_ones", _new("new_ones"), _new_samples, grad=False, why="a factory: no gradient"),
    Row("Tensor.new_empty", _new("new_empty"), _new_samples, grad=False,
        compare="meta", why="PyTorch leaves the values unset: shape and dtype compared"),
    Row("Tensor.new_full", lambda m, x, size, **kw: x.new_full(size, 2.5, **kw), _new_samples, grad=False,
        why="a factory: no gradient"),
    Row("Tensor.new_tensor", lambda m, x, size, **kw: x.new_tensor(np.zeros(size) + 1.5, **kw), _new_samples,
        grad=False, why="a factory: no gradient"),
    Row("Tensor.fill_", lambda m, x, v: x.clone().fill_(v),
        lambda rng: [Sample((Const(uniform(rng, (2, 3))), 2.5), {}, "a float"),
                     Sample((Int(INTS), 3), {}, "int64, an int"),
                     Sample((Const(uniform(rng, ())), np.inf), {}, "0-d, inf"),
                     Sample((Const(uniform(rng, (0, 2))), 1.0), {}, "empty")],
        grad=False, why=IN_PLACE),
    Row("Tensor.zero_", lambda m, x: x.clone().zero_(), _reads, grad=False, why=IN_PLACE),
    Row("Tensor.copy_", lambda m, x, src: x.clone().copy_(src),
        lambda rng: [Sample((Const(uniform(rng, (2, 3))), Const(uniform(rng, (2, 3)))), {}, "same shape"),
                     Sample((Const(uniform(rng, (2, 3))), Const(uniform(rng, (3,)))), {}, "broadcast"),
                     Sample((Const(uniform(rng, (2, 3))), F32(uniform(rng, (2, 3)))), {}, "float32 into float64"),
                     Sample((Int(INTS), Const(uniform(rng, (2, 3)))), {}, "float64 into int64"),
                     Sample((Const(uniform(rng, ())), Const(uniform(rng, ()))), {}, "0-d")],
        grad=False, why=IN_PLACE),
]
