"""Products with a scaled sum beside them, as torch spells them: addmm, addmv, baddbmm (β·input +
α·product), addcmul, addcdiv (input + value·t1·t2, input + value·t1/t2), and mv, vdot, inner.
Each is matmul, mul, div and add on the tape, so its gradient is the chain rule's through them.

As in PyTorch (BLAS's convention), β = 0 ignores input, and for addmm and addmv α = 0 ignores the
product: NaN and inf there do not reach the result, and their gradients are zeros. For integer
tensors a float β, α or value is truncated to an int first, as PyTorch does; the integer products
are a broadcast multiply and sum (the library's matmul is floating).
"""
import math

from . import _args
from ._args import shape


def _scalar(op, name, v, integral):
    _args.number(op, name, v)
    if integral and not float(v).is_integer():
        return math.trunc(v)
    return v


def _matmul(op, a, b):
    """a @ b; for int64 tensors (the library's matmul is floating) Σ_k a_ik b_kj as a broadcast
    product summed over k, exact as PyTorch's integer product."""
    if a.dtype in _args.FLOATS:
        return a @ b
    if a.dtype != _args.hg().int64:
        raise TypeError(f"{op}(): takes float32, float64 or int64 tensors, got {_args.dtype_name(a.dtype)}")
    column = b.unsqueeze(-1) if b.dim() == 1 else b
    out = (a.unsqueeze(-1) * column.unsqueeze(-3)).sum(-2)
    return out.squeeze(-1) if b.dim() == 1 else out


def _scaled(t, s):
    """s·t, where s = 0 is a zero of t's shape that ignores NaN and inf in t (BLAS's β = 0), yet
    passes zeros back to t."""
    hg = _args.hg()
    if s == 1:
        return t
    if s == 0:
        return hg.where(hg.zeros((), dtype=hg.bool, device=t.device), t, 0)
    return t * s


def _broadcasts_to(op, input, out_shape, what):
    """input must broadcast to the product's shape (it is expanded to it, never the other way)."""
    s = shape(input)
    fits = len(s) <= len(out_shape) and all(a in (1, b) for a, b in zip(s[::-1], out_shape[::-1]))
    if not fits:
        raise _args.hg().Error(f"{op}(): input {s} does not broadcast to the shape of {what}, {tuple(out_shape)}")


def _accumulate(op, input, product, beta, alpha, blas_alpha=True):
    """β·input + α·product, input broadcast to product's shape; α = 0 ignores the product where
    PyTorch's kernel does (BLAS's gemm and gemv: addmm, addmv), not for baddbmm."""
    _broadcasts_to(op, input, shape(product), "the product")
    integral = product.dtype not in _args.FLOATS
    beta, alpha = _scalar(op, "beta", beta, integral), _scalar(op, "alpha", alpha, integral)
    return _scaled(input, beta) + (_scaled(product, alpha) if blas_alpha or alpha == 1 else product * alpha)


def _operands(op, names, tensors, ranks, added=True):
    """Each operand a tensor of its rank, all of one dtype; with added, the first is the input
    added to the product, of at most the product's rank."""
    for name, t in zip(names, tensors):
        _args.tensor(op, t, name)
    for k, (name, t, rank) in enumerate(zip(names, tensors, ranks)):
        at_most = added and k == 0
        if (t.dim() > rank) if at_most else (t.dim() != rank):
            got = ", ".join(f"{n} {shape(x)}" for n, x in zip(names, tensors))
            need = f"at most {rank}-d" if at_most else f"{rank}-d"
            raise _args.hg().Error(f"{op}(): {name} must be {need}, got {got}")
    _args.same_dtype(op, *tensors)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """addmm(input, mat1, mat2, *, beta=1, alpha=1): β·input + α·(mat1 @ mat2), mat1 (n, m),
    mat2 (m, p), input broadcast to (n, p). β = 0 ignores input (NaN and inf in it too), α = 0
    the product, as in PyTorch."""
    _operands("addmm", ("input", "mat1", "mat2"), (input, mat1, mat2), (2, 2, 2))
    if mat1.shape[1] != mat2.shape[0]:
        raise _args.hg().Error(f"addmm(): mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} "
                               f"and {mat2.shape[0]}x{mat2.shape[1]})")
    return _accumulate("addmm", input, _matmul("addmm", mat1, mat2), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """addmv(input, mat, vec, *, beta=1, alpha=1): β·input + α·(mat @ vec), mat (n, m), vec (m),
    input broadcast to (n); β = 0 ignores input, α = 0 the product."""
    _operands("addmv", ("input", "mat", "vec"), (input, mat, vec), (1, 2, 1))
    if mat.shape[1] != vec.shape[0]:
        raise _args.hg().Error(f"addmv(): size mismatch, mat {shape(mat)} and vec {shape(vec)}")
    return _accumulate("addmv", input, _matmul("addmv", mat, vec), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """baddbmm(input, batch1, batch2, *, beta=1, alpha=1): β·input + α·(batch1 @ batch2) batch by
    batch, batch1 (b, n, m), batch2 (b, m, p), input broadcast to (b, n, p); β = 0 ignores input
    (α = 0 multiplies the product by 0, NaN staying NaN, as in PyTorch)."""
    _operands("baddbmm", ("input", "batch1", "batch2"), (input, batch1, batch2), (3, 3, 3))
    if batch1.shape[0] != batch2.shape[0] or batch1.shape[2] != batch2.shape[1]:
        raise _args.hg().Error(f"baddbmm(): batch1 {shape(batch1)} and batch2 {shape(batch2)} do not multiply: "
                               "expected (b, n, m) and (b, m, p)")
    return _accumulate("baddbmm", input, _matmul("baddbmm", batch1, batch2), beta, alpha, blas_alpha=False)


def _pointwise_three(op, input, tensor1, tensor2, value):
    for name, t in (("input", input), ("tensor1", tensor1), ("tensor2", tensor2)):
        _args.tensor(op, t, name)
    hg = _args.hg()
    try:
        hg.broadcast_shapes(shape(input), shape(tensor1), shape(tensor2))
    except hg.Error:
        raise hg.Error(f"{op}(): input {shape(input)}, tensor1 {shape(tensor1)} and tensor2 {shape(tensor2)} do not "
                       "broadcast to one shape (sizes must match or be 1, aligned from the right)") from None
    integral = _args.promoted(input, tensor1, tensor2) not in _args.FLOATS
    return _scalar(op, "value", value, integral)


def addcmul(input, tensor1, tensor2, *, value=1):
    """addcmul(input, tensor1, tensor2, *, value=1): input + value·tensor1·tensor2, the three
    broadcast together (PyTorch's order of operations: (value·tensor1)·tensor2)."""
    value = _pointwise_three("addcmul", input, tensor1, tensor2, value)
    return input + (tensor1 * value if value != 1 else tensor1) * tensor2


def addcdiv(input, tensor1, tensor2, *, value=1):
    """addcdiv(input, tensor1, tensor2, *, value=1): input + value·tensor1/tensor2, the three
    broadcast together. As in PyTorch, tensor1 and tensor2 may not both be integer tensors (write
    the division you mean)."""
    value = _pointwise_three("addcdiv", input, tensor1, tensor2, value)
    if tensor1.dtype not in _args.FLOATS and tensor2.dtype not in _args.FLOATS:
        raise TypeError(f"addcdiv(): tensor1 ({_args.dtype_name(tensor1.dtype)}) and tensor2 "
                        f"({_args.dtype_name(tensor2.dtype)}) are both integer; "
                        "integer division is not supported: convert one with .double(), or use floor_divide")
    return input + (tensor1 * value if value != 1 else tensor1) / tensor2


def mv(input, vec):
    """mv(mat, vec): the (n, m) matrix times the (m) vector, shape (n)."""
    _operands("mv", ("mat", "vec"), (input, vec), (2, 1), added=False)
    if input.shape[1] != vec.shape[0]:
        raise _args.hg().Error(f"mv(): size mismatch, input {shape(input)} and vec {shape(vec)}")
    return _matmul("mv", input, vec)


def vdot(input, other):
    """vdot(a, b): Σ a_i b_i of two 1-d tensors of one size and dtype (real tensors: no conjugate)."""
    _operands("vdot", ("input", "other"), (input, other), (1, 1), added=False)
    if input.shape[0] != other.shape[0]:
        raise _args.hg().Error(f"vdot(): the two vectors differ in size, {shape(input)} and {shape(other)}")
    return (input * other).sum()


def inner(input, other):
    """inner(a, b): Σ over the last dim of a_...i b_...i, shape a.shape[:-1] + b.shape[:-1]; a 0-d
    operand multiplies the other."""
    _args.tensor("inner", input), _args.tensor("inner", other, "other")
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise _args.hg().Error(f"inner(): the last dimension must match on both tensors, got shapes {shape(input)} "
                               f"and {shape(other)}")
    _args.same_dtype("inner", input, other)
    k = input.shape[-1]
    left = input.reshape(math.prod(shape(input)[:-1]), k)
    right = other.reshape(math.prod(shape(other)[:-1]), k)
    return _matmul("inner", left, right.transpose(0, 1)).reshape(*shape(input)[:-1], *shape(other)[:-1])


FUNCTIONS = ["addmm", "addmv", "baddbmm", "addcmul", "addcdiv", "mv", "vdot", "inner"]


def attach():
    """The same calls as Tensor methods: x.addmm(m1, m2), x.addcmul(a, b, value=0.5), ..."""
    from ._C import Tensor
    for name in FUNCTIONS:
        setattr(Tensor, name, globals()[name])
