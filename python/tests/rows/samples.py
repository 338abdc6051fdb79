"""Sample makers the row files share: random arrays in a domain, the edge values, and the usual
samples of an elementwise op (random, 0-d, size-1 dims, empty, edges, tiny and huge, int, bool and
float32 operands)."""

import handgrad as hg
import numpy as np

from . import F32, Bool, Int, Raises, Sample

EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.5])
TINY_HUGE = np.array([1e-300, -1e-300, 1e300, -1e300, 5e-324, -5e-324, 1e-30, 1e30])
INTS = np.array([[-3, -1, 0], [1, 2, 5]])
BOOLS = np.array([[True, False, True], [False, False, True]])
INT_REFUSED = ("int64 and bool tensors are refused with an hg.Error (PyTorch computes them, in float32 or keeping the "
               "integer dtype): convert with .to(hg.float32) first")
MIXED_REFUSED = ("arithmetic between float64 and float32 tensors raises hg.Error: the library does not promote between "
                 "float dtypes (PyTorch computes in float64): convert one with .to()")


def operand(wrap, value, label, kwargs, allowed, extra=()):
    """A sample of an int or bool operand: allowed True (compared with torch), or "refused" (hg
    raises hg.Error: the documented difference INT_REFUSED), or False (no sample)."""
    if not allowed:
        return []
    args = (wrap(value),) + tuple(extra)
    if allowed == "refused":
        return [Sample(args, kwargs, label, differs=INT_REFUSED, expect=Raises(hg.Error))]
    return [Sample(args, kwargs, label)]


def uniform(rng, shape, domain=(-2.0, 2.0), signed=False):
    """Uniform draws in domain; signed: ±[low, high] (away from 0 on both sides)."""
    low, high = domain
    x = rng.uniform(low, high, size=shape)
    if signed:
        x = x * rng.choice([-1.0, 1.0], size=shape)
    return np.asarray(x, dtype=np.float64)


def away_from_integers(rng, shape, low=-3, high=3):
    """Values k + 0.2 .. k + 0.4 or k + 0.6 .. k + 0.8: no integer or half-integer within 0.1,
    so floor, round and their kind are smooth (constant) within finite differences."""
    k = rng.integers(low, high, size=shape)
    frac = rng.uniform(0.2, 0.4, size=shape) + rng.choice([0.0, 0.4], size=shape)
    return np.asarray(k + frac, dtype=np.float64)


def unary(domain=(-2.0, 2.0), signed=False, ints=False, bools=False, edges=True, draw=None, kwargs=None, nan=None,
          kinks=()):
    """The samples of an elementwise op of one tensor. draw(rng, shape) replaces the uniform draw.
    ints/bools: the op takes int64/bool tensors (see operand). nan: (differs, value) where hg's
    result at nan is a documented difference: the edge sample then leaves nan out, and a sample of
    nan alone asserts hg's value. kinks: the points where the op is not differentiable, one sample
    whose gradient is compared with torch's subgradient there."""
    kwargs = kwargs or {}

    def make(rng):
        def x(shape):
            return draw(rng, shape) if draw else uniform(rng, shape, domain, signed)
        out = [Sample((x((3, 4)),), kwargs, "random"),
               Sample((x(()),), kwargs, "0-d"),
               Sample((x((1, 3, 1)),), kwargs, "size-1 dims"),
               Sample((x((0, 3)),), kwargs, "empty"),
               Sample((F32(x((2, 3))),), kwargs, "float32")]
        if kinks:
            out.append(Sample((np.array(kinks, dtype=float),), kwargs, "at the kinks", kink=True))
        if edges and nan:
            out += [Sample((EDGES[~np.isnan(EDGES)],), kwargs, "edge ±0 ±inf", grad=False),
                    Sample((np.array([np.nan]),), kwargs, "nan", grad=False, differs=nan[0],
                           expect=np.array([nan[1]]))]
        elif edges:
            out.append(Sample((EDGES.copy(),), kwargs, "edge ±0 ±inf nan", grad=False))
        if edges:
            out.append(Sample((TINY_HUGE.copy(),), kwargs, "tiny and huge", grad=False))
        out += operand(Int, INTS, "int operand", kwargs, ints)
        out += operand(Bool, BOOLS, "bool operand", kwargs, bools)
        return out
    return make


def binary(domain=(-2.0, 2.0), signed=False, other_domain=None, other_signed=None, ints=True, bools=False,
           edges=True, numbers=(), kwargs=None, mixed=True):
    """The samples of an elementwise op of two tensors: random, broadcast (size-1 and missing dims),
    0-d with a matrix, empty, edges against each other, int and bool operands, a Python number on
    the right (numbers: the values tried), a float64 with a float32 operand (mixed: True, or
    "refused" for MIXED_REFUSED)."""
    kwargs = kwargs or {}
    other_domain = other_domain or domain
    other_signed = signed if other_signed is None else other_signed

    def make(rng):
        def x(shape):
            return uniform(rng, shape, domain, signed)

        def y(shape):
            return uniform(rng, shape, other_domain, other_signed)
        out = [Sample((x((3, 4)), y((3, 4))), kwargs, "random"),
               Sample((x((2, 1, 4)), y((3, 1))), kwargs, "broadcast"),
               Sample((x(()), y((2, 3))), kwargs, "0-d with a matrix"),
               Sample((x(()), y(())), kwargs, "0-d"),
               Sample((x((0, 3)), y((1, 3))), kwargs, "empty"),
               Sample((F32(x((2, 3))), F32(y((2, 3)))), kwargs, "float32")]
        if mixed == "refused":
            out.append(Sample((x((2, 3)), F32(y((3,)))), kwargs, "float64 with float32", differs=MIXED_REFUSED,
                              expect=Raises(hg.Error)))
        elif mixed:
            out.append(Sample((x((2, 3)), F32(y((3,)))), kwargs, "float64 with float32 (float64)"))
        if ints:
            out.append(Sample((F32(x((2, 3))), Int(INTS[0])), kwargs, "float32 with int64 (float32)"))
        if edges:
            e = EDGES
            out.append(Sample((np.repeat(e, len(e)), np.tile(e, len(e))), kwargs, "edge ±0 ±inf nan", grad=False))
            out.append(Sample((TINY_HUGE.copy(), TINY_HUGE[::-1].copy()), kwargs, "tiny and huge", grad=False))
        out += operand(Int, INTS, "int operands", kwargs, ints, (Int(INTS[::-1] + 7),))
        out += operand(Bool, BOOLS, "bool operands", kwargs, bools, (Bool(BOOLS[::-1]),))
        for v in numbers:
            out.append(Sample((x((2, 3)), v), kwargs, f"number {v}", grad=bool(np.isfinite(v)) and None))
        return out
    return make


def fixed(*samples):
    """Samples that do not depend on the generator."""
    return lambda rng: list(samples)


def reduction(domain=(-2.0, 2.0), signed=False, tuples=True, keepdim=True, ints=True, bools=True, empty=True,
              edges=True, extra=None, one_element_grad=True, empty_grad=True):
    """The samples of a reduction over dim: everything, one dim, a negative dim with keepdim, a
    tuple of dims (tuples), 0-d (dim None, 0 and -1), an empty tensor over the empty dim and over
    another (empty), edges, float32, int and bool operands. extra: more kwargs on every sample.
    one_element_grad False: the 0-d samples are forward-only (var of one element is nan);
    empty_grad False: so are the samples over an empty dim (var of nothing is nan)."""
    extra = extra or {}

    def make(rng):
        def x(shape):
            return uniform(rng, shape, domain, signed)

        def kw(**k):
            return {**k, **extra}
        keep = {"keepdim": True} if keepdim else {}
        out = [Sample((x((3, 4, 2)),), kw(), "every dim"),
               Sample((x((3, 4, 2)),), kw(dim=1), "dim 1"),
               Sample((x((3, 4, 2)),), kw(dim=-1, **keep), "dim -1" + (" keepdim" if keepdim else "")),
               Sample((x(()),), kw(), "0-d", grad=one_element_grad and None),
               Sample((x(()),), kw(dim=0), "0-d dim 0", grad=one_element_grad and None),
               Sample((x(()),), kw(dim=-1, **keep), "0-d dim -1" + (" keepdim" if keepdim else ""),
                      grad=one_element_grad and None),
               Sample((F32(x((2, 3))),), kw(dim=1), "float32")]
        if tuples:
            out.append(Sample((x((3, 4, 2)),), kw(dim=(0, 2)), "dims (0, 2)"))
        if empty:
            nothing = empty_grad and None
            out += [Sample((x((0, 3)),), kw(dim=1), "empty, over a non-empty dim"),
                    Sample((x((0, 3)),), kw(dim=0), "empty, over the empty dim", grad=nothing),
                    Sample((x((0, 3)),), kw(), "empty, every dim", grad=nothing)]
        if edges:
            out.append(Sample((np.stack([EDGES, EDGES[::-1], np.ones(7)]),), kw(dim=1), "edge ±0 ±inf nan",
                              grad=False))
            # one sign per row, so that no sum cancels (an order-dependent result): huge overflows, tiny underflows
            huge_tiny = np.stack([np.array([1e300, 2e300, 3e300, 1e-300]), np.array([1e-300, 2e-300, 3e-300, 5e-324])])
            out.append(Sample((huge_tiny,), kw(dim=1), "tiny and huge", grad=False))
        out += operand(Int, INTS, "int operand", kw(dim=1), ints)
        out += operand(Int, INTS, "int operand, every dim", kw(), ints)
        out += operand(Bool, BOOLS, "bool operand", kw(dim=0), bools)
        return out
    return make

