"""The torch.* functions that are a Tensor method under the same name (hg.reshape(x, s) is
x.reshape(*s)), each checking that it was given a tensor; hg.norm (torch.norm's forms over
hg.linalg) and hg.round (with decimals) are attached as methods too.
"""
from . import _args, _extras, linalg
from ._C import Tensor


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """norm(input, p='fro', dim=None, keepdim=False): torch.norm. A number p (None: 2) is the vector
    p-norm of the entries over dim (hg.linalg.vector_norm); 'fro' over dim None, one dim or two is
    the 2-norm of those entries; 'nuc' (or 'fro' over more dims) is hg.linalg.matrix_norm over dim
    (every dim when None: a 2-d input)."""
    _args.tensor("hg.norm", input)
    if isinstance(p, str):
        if p == "fro" and (dim is None or not isinstance(dim, (list, tuple)) or len(dim) <= 2):
            return linalg.vector_norm(input, 2, dim, keepdim, dtype=dtype)
        dim = tuple(range(input.dim())) if dim is None else dim
        return linalg.matrix_norm(input, p, dim, keepdim, dtype=dtype)
    return linalg.vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype)


def argmax(input, dim=None, keepdim=False):
    """argmax(x, dim=None, keepdim=False): the flat position of the largest entry, or per dim."""
    return _args.tensor("hg.argmax", input).argmax(dim, keepdim)


def chunk(input, chunks, dim=0):
    """chunk(x, chunks, dim=0): x cut into chunks pieces of one size along dim (the last smaller), as views."""
    return _args.tensor("hg.chunk", input).chunk(chunks, dim)


def split(tensor, split_size_or_sections, dim=0):
    """split(x, size_or_sizes, dim=0): x cut along dim into pieces of that size (or those sizes), as views."""
    return _args.tensor("hg.split", tensor).split(split_size_or_sections, dim)


def sqrt(input):
    """sqrt(x): the square root, elementwise."""
    return _args.tensor("hg.sqrt", input).sqrt()


def transpose(input, dim0, dim1):
    """transpose(x, dim0, dim1): x with the two dims swapped (a view)."""
    return _args.tensor("hg.transpose", input).transpose(dim0, dim1)


def permute(input, dims):
    """permute(x, dims): x with its dims in the order dims names (a view)."""
    return _args.tensor("hg.permute", input).permute(*dims)


def reshape(input, shape):
    """reshape(x, shape): x's entries in a new shape (a view where the layout allows, else a copy)."""
    return _args.tensor("hg.reshape", input).reshape(*shape)


def squeeze(input, dim=None):
    """squeeze(x, dim=None): x without its size-1 dims (or without dim, when it has size 1)."""
    _args.tensor("hg.squeeze", input)
    return input.squeeze() if dim is None else input.squeeze(dim)


def unsqueeze(input, dim):
    """unsqueeze(x, dim): x with a size-1 dim inserted at dim (a view)."""
    return _args.tensor("hg.unsqueeze", input).unsqueeze(dim)


def t(input):
    """t(x): a matrix transposed (0-d and 1-d tensors as they are)."""
    return _args.tensor("hg.t", input).t()


def numel(input):
    """numel(x): the number of entries."""
    return _args.tensor("hg.numel", input).numel()


def clone(input):
    """clone(x): a copy, in the graph (its gradient passes through)."""
    return _args.tensor("hg.clone", input).clone()


def round(input, decimals=0):  # noqa: A001
    """round(x, decimals=0): half to even, as PyTorch's; with decimals, round(x · 10^d) / 10^d."""
    return _extras.round_(_args.tensor("hg.round", input), decimals)


def sum(input, dim=None, keepdim=False, *, axis=None, dtype=None):  # noqa: A001
    """sum(x, dim=None, keepdim=False, *, dtype=None): the sum over dim (every dim when None; axis= too)."""
    return _args.tensor("hg.sum", input).sum(dim, keepdim, axis=axis, dtype=dtype)


def _round_method(self, decimals=0):
    """x.round(decimals=0): half to even, as PyTorch's; with decimals, round(x · 10^d) / 10^d."""
    return round(self, decimals)


def attach():
    Tensor.norm = norm
    Tensor.round = _round_method
