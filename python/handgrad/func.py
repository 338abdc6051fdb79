"""hg.func: jvp, as torch.func spells it — the outputs of a function and their tangents along
given directions, in one forward pass (forward mode; hg.autograd.forward_ad underneath)."""

from . import _C
from . import forward_ad as _fwad


def _zeros_like(x):
    from . import zeros_like  # the package's factory (this module is imported at its end)
    return zeros_like(x)


def jvp(func, primals, tangents):
    """(func(*primals), J · tangents) (torch.func.jvp). primals and tangents are tuples of tensors
    of the same shapes; a tangent of None means that primal does not move. func returns a tensor
    or a tuple of them; an output that depends on no moving primal gets a zero tangent."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise _C.Error(f"jvp: {len(tangents)} tangents for {len(primals)} primals; give one per primal "
                       "(None for one that does not move)")
    with _fwad.dual_level():
        duals = [p if t is None else _fwad.make_dual(p, t) for p, t in zip(primals, tangents)]
        out = func(*duals)
        single = isinstance(out, _C.Tensor)
        outs = (out,) if single else tuple(out)
        values, dots = [], []
        for o in outs:
            primal, tangent = _fwad.unpack_dual(o)
            values.append(primal)
            dots.append(tangent if tangent is not None else _zeros_like(o))
    if single:
        return values[0], dots[0]
    return tuple(values), tuple(dots)


__all__ = ["jvp"]
