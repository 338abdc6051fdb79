"""hg.autograd.forward_ad: dual tensors, as torch.autograd.forward_ad spells them.

    import handgrad as hg
    fwAD = hg.autograd.forward_ad
    with fwAD.dual_level():
        x = fwAD.make_dual(x0, u)            # x0 carrying the tangent u
        y = hg.softmax(x @ w, dim=-1)
        ydot = fwAD.unpack_dual(y).tangent   # J u, computed beside y

Each op pushes the tangent on with its tangent rule, written beside its backward in the C++
library (engine/forward.h; docs/forward-mode.md). One level at a time; leaving it drops the
tangents. hg.func.jvp does the same for a function, the level opened and closed for you.
"""

import collections as _collections

from . import _C

UnpackedDualTensor = _collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])


class dual_level:
    """The scope tangents live in (torch.autograd.forward_ad.dual_level); one at a time per thread."""

    def __enter__(self):
        self._guard = _C._DualLevel()
        return self._guard.__enter__()

    def __exit__(self, *exc):
        self._guard.__exit__(*exc)
        return False


def make_dual(tensor, tangent, *, level=None):
    """An alias of `tensor` carrying `tangent` (same shape, dtype and device), inside a dual_level."""
    return _C._make_dual(tensor, tangent)


def unpack_dual(tensor, *, level=None):
    """(primal, tangent): the value without its tangent, and the tangent (None when it carries none)."""
    primal, tangent = _C._unpack_dual(tensor)
    return UnpackedDualTensor(primal, tangent)


__all__ = ["dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor"]
