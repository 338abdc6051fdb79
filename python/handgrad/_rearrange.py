"""var, std, cumsum and the rearranging ops with PyTorch's argument forms, as functions and Tensor
methods (the extrema amax, amin, min, argmin and logsumexp are _extrema.py's, attached here too).

The library does the work (ops/statistics.h, ops/rearrange.h); this file only reads the forms
PyTorch accepts — a dim or a tuple of dims, ``unbiased`` or ``correction``, ``x.flip(0, 1)`` or
``x.flip((0, 1))`` — and refuses anything else with a TypeError naming the op.
"""

from . import _C, _args
from ._C import Tensor
from ._extrema import amax, amin, argmin, logsumexp, min  # noqa: A004 (attached below with the rest)
from ._indexed import repeat_interleave, scatter  # noqa: F401 (attached below with the rest)


def _ints(op, name, v):
    """An int or a sequence of ints, as a list."""
    if isinstance(v, (list, tuple)):
        return [_args.integer(op, name, d) for d in v]
    return [_args.integer(op, name, v)]


def _spread(op, fn):
    def spread(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
        _args.tensor(op, input)
        if isinstance(dim, bool):  # x.var(False): PyTorch's overload whose first argument is unbiased
            if unbiased is not None:
                raise TypeError(f"{op}(): unbiased given twice")
            dim, unbiased = None, dim
        if unbiased is not None and correction is not None:
            raise TypeError(f"{op}(): give unbiased or correction, not both")
        if unbiased is not None:
            if not isinstance(unbiased, bool):
                raise TypeError(f"{op}(): unbiased must be a bool, not {type(unbiased).__name__}")
            c = 1.0 if unbiased else 0.0
        elif correction is None:
            c = 1.0
        else:
            if isinstance(correction, bool) or not isinstance(correction, (int, float)):
                raise TypeError(f"{op}(): correction must be a number, not {type(correction).__name__}")
            c = float(correction)
        if not isinstance(keepdim, bool):
            raise TypeError(f"{op}(): keepdim must be a bool, not {type(keepdim).__name__}")
        dims = [] if dim is None else _ints(op, "dim", dim)
        return fn(input, dims, c, keepdim)
    spread.__name__ = op
    spread.__doc__ = (f"{op}(input, dim=None, unbiased=True, keepdim=False, *, correction=1): "
                      f"{'the variance' if op == 'var' else 'the standard deviation'} over dim (every dim when None); "
                      "correction 1 (unbiased) divides by N − 1, 0 by N.")
    return spread


var = _spread("var", _C._var)
std = _spread("std", _C._std)


def _bool(op, name, v):
    if not isinstance(v, bool):
        raise TypeError(f"{op}(): {name} must be a bool, not {type(v).__name__}")
    return v


def cumsum(input, dim, dtype=None):
    """Running sums along dim."""
    _args.tensor("cumsum", input)
    out = _C._cumsum(input if dtype is None else input.to(dtype), _args.integer("cumsum", "dim", dim))
    return out


def index_select(input, dim, index):
    """input's entries at index (a 1-d int64 tensor) along dim."""
    _args.tensor("index_select", input)
    if not isinstance(index, Tensor):
        raise TypeError(f"index_select(): index must be a handgrad int64 Tensor, not {type(index).__name__}")
    dim = _args.integer("index_select", "dim", dim)
    if input.dim() == 0:  # PyTorch's rule: one index (0) into the 0-d tensor gives it back, 0-d
        _scalar_dim("index_select", dim)
        if index.numel() != 1 or index.dim() > 1:
            raise _C.Error(f"index_select(): the input is 0-d, so the index must hold exactly one value, got shape "
                           f"{tuple(index.shape)}")
        return _C._index_select(input.reshape(1), 0, index.reshape(1)).reshape(())
    return _C._index_select(input, dim, index.reshape(1) if index.dim() == 0 else index)  # a 0-d index: one entry


def _scalar_dim(op, dim):
    if dim not in (0, -1):
        raise IndexError(f"{op}(): dim {dim} is out of range for a 0-d tensor (accepted: -1 and 0)")


def masked_select(input, mask):
    """The entries of input where mask (a bool tensor, broadcast) is true, as a 1-d tensor: input[mask]."""
    _args.tensor("masked_select", input)
    if not isinstance(mask, Tensor):
        raise TypeError(f"masked_select(): mask must be a handgrad bool Tensor, not {type(mask).__name__}")
    return _C._masked_select(input, mask)


def flip(input, *args, dims=None):
    """input with the order of each dim in dims reversed: flip(x, (0, 1)), flip(x, dims=(0, 1)),
    x.flip(0, 1)."""
    _args.tensor("flip", input)
    if dims is not None and args:
        raise TypeError("flip(): dims given twice (as arguments and as dims=)")
    if dims is None:
        dims = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    elif not isinstance(dims, (list, tuple)):
        dims = (dims,)
    return _C._flip(input, [_args.integer("flip", "dims", d) for d in dims])


def roll(input, shifts, dims=None):
    """input's entries moved shifts places along dims, wrapping round (flattened when dims is None)."""
    _args.tensor("roll", input)
    shifts = _ints("roll", "shifts", shifts)
    return _C._roll(input, shifts, [] if dims is None else _ints("roll", "dims", dims))


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal of the (dim1, dim2) planes, as the last dim."""
    _args.tensor("diagonal", input)
    return _C._diagonal(input, _args.integer("diagonal", "offset", offset), _args.integer("diagonal", "dim1", dim1),
                        _args.integer("diagonal", "dim2", dim2))


def diag(input, diagonal=0):
    """1-d: the square matrix with input on that diagonal; 2-d: that diagonal."""
    _args.tensor("diag", input)
    return _C._diag(input, _args.integer("diag", "diagonal", diagonal))


def tril(input, diagonal=0):
    """The lower triangle of the last two dims (on and below that diagonal); zeros above."""
    _args.tensor("tril", input)
    return _C._tril(input, _args.integer("tril", "diagonal", diagonal))


def triu(input, diagonal=0):
    """The upper triangle of the last two dims (on and above that diagonal); zeros below."""
    _args.tensor("triu", input)
    return _C._triu(input, _args.integer("triu", "diagonal", diagonal))


def flatten(input, start_dim=0, end_dim=-1):
    """Dims start_dim..end_dim merged into one."""
    _args.tensor("flatten", input)
    return _C._flatten(input, _args.integer("flatten", "start_dim", start_dim),
                       _args.integer("flatten", "end_dim", end_dim))


def unflatten(input, dim, sizes):
    """dim split into sizes (one of them may be -1)."""
    _args.tensor("unflatten", input)
    if not isinstance(sizes, (list, tuple)):
        raise TypeError(f"unflatten(): sizes must be a tuple or list of ints, not {type(sizes).__name__}")
    return _C._unflatten(input, _args.integer("unflatten", "dim", dim),
                         [_args.integer("unflatten", "sizes", s) for s in sizes])


def movedim(input, source, destination):
    """Dims source moved to the places destination (an int or a tuple each)."""
    _args.tensor("movedim", input)
    return _C._movedim(input, _ints("movedim", "source", source), _ints("movedim", "destination", destination))


moveaxis = movedim


def narrow(input, dim, start, length):
    """length entries of dim from start."""
    _args.tensor("narrow", input)
    if isinstance(start, Tensor):
        start = start.item()
    return _C._narrow(input, _args.integer("narrow", "dim", dim), _args.integer("narrow", "start", start),
                      _args.integer("narrow", "length", length))


def stack(tensors, dim=0):
    """The tensors (one shape) joined along a new dim."""
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError("stack(): tensors must be a list or tuple of handgrad Tensors")
    return _C._stack(list(tensors), _args.integer("stack", "dim", dim))


def _sizes(op, sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
        sizes = sizes[0]
    return [_args.integer(op, "sizes", s) for s in sizes]


def repeat(input, *sizes):
    """input tiled sizes[k] times along dim k: x.repeat(2, 1) or x.repeat((2, 1))."""
    _args.tensor("repeat", input)
    return _C._repeat(input, _sizes("repeat", sizes))


def tile(input, dims):
    """repeat, with fewer counts than dims allowed (leading 1s added)."""
    _args.tensor("tile", input)
    return _C._tile(input, _ints("tile", "dims", dims))


def _integral_pick(input, other, keep_input):
    """maximum or minimum of two int64/bool tensors in their own dtype (the library's computes in
    floating point): PyTorch's promotion, bool with int64 giving int64."""
    if input.dtype != other.dtype:
        input, other = input.to(_C.dtype.int64), other.to(_C.dtype.int64)
    return _C.where(keep_input(input, other), input, other)


_INTEGRAL = (_C.dtype.int64, _C.dtype.bool)


def _promoted_floats(input, other):
    """float32 with float64 is float64 (PyTorch's promotion; the library takes one dtype)."""
    if {input.dtype, other.dtype} == {_C.dtype.float32, _C.dtype.float64}:
        return input.to(_C.dtype.float64), other.to(_C.dtype.float64)
    return input, other


def maximum(input, other):
    """The larger of input and other elementwise (NaN wins; a tie shares the gradient)."""
    _args.tensor("maximum", input)
    _args.tensor("maximum", other)
    if input.dtype in _INTEGRAL and other.dtype in _INTEGRAL:
        return _integral_pick(input, other, lambda a, b: a >= b)
    return _C._maximum(*_promoted_floats(input, other))


def minimum(input, other):
    """The smaller of input and other elementwise (NaN wins; a tie shares the gradient)."""
    _args.tensor("minimum", input)
    _args.tensor("minimum", other)
    if input.dtype in _INTEGRAL and other.dtype in _INTEGRAL:
        return _integral_pick(input, other, lambda a, b: a <= b)
    return _C._minimum(*_promoted_floats(input, other))


def lerp(input, end, weight):
    """input + weight (end − input); weight a number or a tensor."""
    _args.tensor("lerp", input)
    _args.tensor("lerp", end)
    if isinstance(weight, Tensor):
        return _C._lerp(input, end, weight)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise TypeError(f"lerp(): weight must be a number or a handgrad Tensor, not {type(weight).__name__}")
    return _C._lerp_number(input, end, float(weight))


def _index_of(op, index):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): index must be a handgrad int64 Tensor, not {type(index).__name__}")
    return index


def gather(input, dim, index):
    """gather(input, dim, index): out[i][j][k] = input[i][index[i][j][k]][k] for dim 1, and so on;
    out has index's shape. The gradient adds back into the entries read."""
    _args.tensor("gather", input)
    return _C._gather(input, _args.integer("gather", "dim", dim), _index_of("gather", index))


def scatter_add(input, dim, index, src):
    """scatter_add(input, dim, index, src): a copy of input with src[i][j][k] added at
    out[i][index[i][j][k]][k] (dim 1); repeated places add up."""
    _args.tensor("scatter_add", input)
    _args.tensor("scatter_add", src)
    return _C._scatter_add(input, _args.integer("scatter_add", "dim", dim), _index_of("scatter_add", index), src)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """prod(input, dim=None, keepdim=False): the product over dim (every entry when None); int64 for
    integer and bool inputs. Its gradient is the product of the other entries, zeros included."""
    _args.tensor("prod", input)
    if dtype is not None:
        input = input.to(dtype)
    if not isinstance(keepdim, bool):
        raise TypeError(f"prod(): keepdim must be a bool, not {type(keepdim).__name__}")
    return _C._prod(input, None if dim is None else _args.integer("prod", "dim", dim), keepdim)


def unfold(input, dimension, size, step):
    """x.unfold(dimension, size, step): every window of size entries along dimension, step apart,
    as a new last dim."""
    _args.tensor("unfold", input)
    dimension, size, step = (_args.integer("unfold", "dimension", dimension), _args.integer("unfold", "size", size),
                             _args.integer("unfold", "step", step))
    if input.dim() == 0:  # PyTorch's rule: the 0-d tensor is one entry, and its window is (size,)
        _scalar_dim("unfold", dimension)
        return _C._unfold(input.reshape(1), 0, size, step).select(0, 0)
    return _C._unfold(input, dimension, size, step)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """diag_embed(input, offset=0, dim1=-2, dim2=-1): input's last dim on the offset diagonal of
    the (dim1, dim2) plane of a new tensor, zeros elsewhere."""
    _args.tensor("diag_embed", input)
    return _C._diag_embed(input, _args.integer("diag_embed", "offset", offset),
                          _args.integer("diag_embed", "dim1", dim1), _args.integer("diag_embed", "dim2", dim2))


FUNCTIONS = ["prod", "unfold", "diag_embed", "gather", "scatter", "scatter_add", "repeat", "tile", "repeat_interleave", "maximum", "minimum", "lerp", "var", "std", "amax", "amin", "min", "argmin", "logsumexp", "cumsum", "index_select", "masked_select", "flip", "roll", "diagonal", "diag", "tril", "triu", "flatten", "unflatten",
             "movedim", "moveaxis", "narrow"]


def attach():
    """The same calls as Tensor methods (x.var(1), x.flip(0), ...)."""
    for name in FUNCTIONS:
        setattr(Tensor, name, globals()[name])
