"""Tensor methods PyTorch spells as another method under a new name or with another's shape:
x.t(), x.mT, x.type_as(y), x.new_zeros(...), x.view_as(y), x.swapaxes(a, b), x.clamp_min(v), ...
Each is one call of the library's own method, so its gradient is that method's.
"""
from . import _args
from ._C import Tensor


def t(self):
    """x.t(): a matrix transposed (0-d and 1-d tensors as they are; a view)."""
    return self.transpose(0, 1) if self.dim() == 2 else self


def _mT(self):
    """x.mT: the last two dims swapped (each matrix of a batch transposed; a view)."""
    return self.transpose(-2, -1)


def type_as(self, other):
    """x.type_as(other): x in other's dtype."""
    return self.to(_args.tensor("type_as", other).dtype)


def _sizes(size):
    return size[0] if len(size) == 1 and isinstance(size[0], (list, tuple)) else size


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    """x.new_zeros(*size, dtype=None, device=None, requires_grad=False): zeros of that size, in x's
    dtype and on x's device unless given (new_empty is the same: the library has no uninitialised tensors)."""
    hg = _args.hg()
    out = hg.zeros(*_sizes(size), dtype=dtype or self.dtype, device=device or self.device)
    return out.requires_grad_() if requires_grad else out


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    """x.new_ones(*size, dtype=None, device=None, requires_grad=False): ones of that size, in x's dtype
    and on x's device unless given."""
    hg = _args.hg()
    out = hg.ones(*_sizes(size), dtype=dtype or self.dtype, device=device or self.device)
    return out.requires_grad_() if requires_grad else out


def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    """x.new_full(size, fill_value, dtype=None, device=None, requires_grad=False): fill_value
    everywhere, in x's dtype and on x's device unless given."""
    return _args.hg().full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                           requires_grad=requires_grad)


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    """x.new_tensor(data, dtype=None, device=None, requires_grad=False): hg.tensor(data) in x's dtype
    and on x's device unless given."""
    return _args.hg().tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                             requires_grad=requires_grad)


def view_as(self, other):
    """x.view_as(other): x.view(*other.shape)."""
    return self.view(*_args.tensor("view_as", other).shape)


def reshape_as(self, other):
    """x.reshape_as(other): x.reshape(*other.shape)."""
    return self.reshape(*_args.tensor("reshape_as", other).shape)


def expand_as(self, other):
    """x.expand_as(other): x.expand(*other.shape)."""
    return self.expand(*_args.tensor("expand_as", other).shape)


def nelement(self):
    """x.nelement(): the number of elements (x.numel())."""
    return self.numel()


def swapaxes(self, axis0, axis1):
    """x.swapaxes(axis0, axis1): x.transpose(axis0, axis1) (swapdims is the same)."""
    return self.transpose(axis0, axis1)


def clamp_min(self, min):  # noqa: A002 (PyTorch's name)
    """x.clamp_min(min): max(x, min), elementwise."""
    return _args.hg().clamp(self, min=min)


def clamp_max(self, max):  # noqa: A002 (PyTorch's name)
    """x.clamp_max(max): min(x, max), elementwise."""
    return _args.hg().clamp(self, max=max)


def attach():
    Tensor.t = t
    Tensor.mT = Tensor.mH = property(_mT)  # mH: the conjugate transpose, the same for real tensors
    Tensor.type_as = type_as
    Tensor.new_zeros = Tensor.new_empty = new_zeros
    Tensor.new_ones = new_ones
    Tensor.new_full = new_full
    Tensor.new_tensor = new_tensor
    Tensor.view_as = view_as
    Tensor.reshape_as = reshape_as
    Tensor.expand_as = expand_as
    Tensor.nelement = nelement
    Tensor.swapaxes = Tensor.swapdims = swapaxes
    Tensor.clamp_min = clamp_min
    Tensor.clamp_max = clamp_max
