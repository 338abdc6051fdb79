"""Products that contract dims, as torch spells them: mm, bmm, dot, outer, tensordot and einsum
(with '...', a letter repeated within one operand for a diagonal, size-1 dims broadcast, and the
sublist form). Each is written with recorded ops — permute, reshape, diagonal, sum, the library's
matmul, or a broadcast product summed for integers (the library's matmul is float only) — so its
gradient is theirs.
"""
import math
import string

from . import _C, _args
from ._C import Tensor

_FLOATS = (_C.dtype.float32, _C.dtype.float64)


def _matmul(left, right):
    """left @ right of two matrices (or batches): the library's matmul for floats; for int64 and
    bool, Σ_k left[i, k] · right[k, j] as a broadcast product summed (exact in int64)."""
    if left.dtype in _FLOATS and right.dtype in _FLOATS:
        return left @ right
    return (left.unsqueeze(-1) * right.unsqueeze(-3)).sum(-2)


def _batched_product(op, input, mat2, rank, what):
    _args.tensor(op, input), _args.tensor(op, mat2, "mat2")
    if input.dim() != rank or mat2.dim() != rank:
        raise _C.Error(f"{op}(): expected {rank}-d {what}, got shapes {tuple(input.shape)} and {tuple(mat2.shape)}")
    if input.shape[-1] != mat2.shape[-2]:
        raise _C.Error(f"{op}(): shapes {tuple(input.shape)} and {tuple(mat2.shape)} cannot be multiplied "
                       f"({input.shape[-1]} columns against {mat2.shape[-2]} rows)")
    return _matmul(input, mat2)


def mm(input, mat2):
    """mm(a, b): the (n, m) × (m, p) matrix product; both must be 2-d."""
    return _batched_product("mm", input, mat2, 2, "matrices")


def bmm(input, mat2):
    """bmm(a, b): (B, n, m) × (B, m, p) batch by batch; both must be 3-d."""
    return _batched_product("bmm", input, mat2, 3, "batches")


def dot(input, other):
    """dot(a, b): Σ a_i b_i of two 1-d tensors."""
    _args.tensor("dot", input), _args.tensor("dot", other, "other")
    if input.dim() != 1 or other.dim() != 1:
        raise _C.Error(f"dot(): expected 1-d tensors, got shapes {tuple(input.shape)} and {tuple(other.shape)}")
    return (input * other).sum()


def outer(input, vec2):
    """outer(a, b): a_i b_j, (n, m) from 1-d tensors."""
    return _args.tensor("outer", input).reshape(-1, 1) * _args.tensor("outer", vec2, "vec2").reshape(1, -1)


def _contracted(a, b, dims):
    """tensordot's dims as two lists of wrapped dims of a and b."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, bool) or not (hasattr(dims, "__index__") or isinstance(dims, (list, tuple))):
        raise TypeError(f"tensordot(): dims must be an int or a pair of sequences of dims, not {dims!r}")
    if hasattr(dims, "__index__"):
        n = dims.__index__()
        if not 0 <= n <= min(a.dim(), b.dim()):
            raise _C.Error(f"tensordot(): dims {n} must be from 0 to the smaller rank, {min(a.dim(), b.dim())} "
                           f"(shapes {tuple(a.shape)} and {tuple(b.shape)})")
        return list(range(a.dim() - n, a.dim())), list(range(n))
    if len(dims) != 2:
        raise TypeError(f"tensordot(): dims must be an int or a pair of sequences of dims, not {dims!r}")
    da, db = [list(d) if isinstance(d, (list, tuple)) else [d] for d in dims]
    if len(da) != len(db):
        raise _C.Error(f"tensordot(): both sides must name as many dims, got {da} and {db}")
    da, db = [_args.dim("tensordot", a, d) for d in da], [_args.dim("tensordot", b, d) for d in db]
    if len(set(da)) != len(da) or len(set(db)) != len(db):
        raise _C.Error(f"tensordot(): a dim is named twice in {dims!r}")
    return da, db


def tensordot(a, b, dims=2):
    """tensordot(a, b, dims=2): Σ over the contracted dims of a ⊗ b — a's last dims with b's first
    (an int), or the listed pairs ((a_dims, b_dims)); the result has a's other dims, then b's.
    As PyTorch's, a contracted dim of size 1 on one side broadcasts: the other side is summed
    over it first."""
    _args.tensor("tensordot", a), _args.tensor("tensordot", b, "b")
    da, db = _contracted(a, b, dims)
    for i, j in zip(da, db):
        if b.shape[j] == 1 and a.shape[i] != 1:
            a = a.sum(i, True)
        elif a.shape[i] == 1 and b.shape[j] != 1:
            b = b.sum(j, True)
        elif a.shape[i] != b.shape[j]:
            raise _C.Error(f"tensordot(): contracted dims must match, but a has size {a.shape[i]} in dim {i} and b "
                           f"size {b.shape[j]} in dim {j} (shapes {tuple(a.shape)} and {tuple(b.shape)})")
    keep_a = [d for d in range(a.dim()) if d not in da]
    keep_b = [d for d in range(b.dim()) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    left = a.permute(*keep_a, *da).reshape(math.prod(a.shape[d] for d in keep_a), k)
    right = b.permute(*db, *keep_b).reshape(k, math.prod(b.shape[d] for d in keep_b))
    return _matmul(left, right).reshape(*[a.shape[d] for d in keep_a], *[b.shape[d] for d in keep_b])


# ---------------------------------------------------------------- einsum

def _sublist_label(op, s):
    if s is Ellipsis:
        return "..."
    if isinstance(s, bool) or not hasattr(s, "__index__") or not 0 <= s.__index__() < 52:
        raise ValueError(f"{op}(): a sublist names dims by ints from 0 to 51 (or ...), got {s!r}")
    s = s.__index__()
    return chr(ord("A") + s) if s < 26 else chr(ord("a") + s - 26)  # sorted as the ints are


def _from_sublists(args):
    """einsum(a, [0, 1], b, [1, 2], [0, 2]): the equation 'AB,BC->AC' and the operands."""
    out = args[-1] if len(args) % 2 else None  # an odd count ends with the output's sublist
    pairs = args[:-1] if out is not None else args
    operands, terms = list(pairs[0::2]), list(pairs[1::2])
    for k, term in enumerate(terms + ([out] if out is not None else [])):
        if not isinstance(term, (list, tuple)):
            raise TypeError(f"einsum(): the sublist form is einsum(op1, sublist1, op2, sublist2, ..., [output]); "
                            f"sublist {k} is a {type(term).__name__}")
    lhs = ",".join("".join(_sublist_label("einsum", s) for s in term) for term in terms)
    return lhs + ("" if out is None else "->" + "".join(_sublist_label("einsum", s) for s in out)), operands


def _labels(term, t, where):
    """A term's labels for operand t: its letters, with '...' spread over the dims it covers as
    ('.', k) labels counted from the right (so that ellipses broadcast as NumPy's shapes do)."""
    if term.count("...") > 1 or "." in term.replace("...", ""):
        raise ValueError(f"einsum(): {where} {term!r} has '.' outside one '...'")
    head, dots, tail = term.partition("...")
    for c in head + tail:
        if c not in string.ascii_letters:
            raise ValueError(f"einsum(): {where} {term!r} holds {c!r}; subscripts are letters (a-z, A-Z) and '...'")
    if t is None:
        return list(head), bool(dots), list(tail)
    spread = t.dim() - len(head) - len(tail)
    if spread < 0 or (spread and not dots):
        raise ValueError(f"einsum(): {where} {term!r} does not fit an operand of shape {tuple(t.shape)}")
    return list(head) + [(".", k) for k in range(spread, 0, -1)] + list(tail)


def _diagonals(t, labels):
    """A label repeated within one operand reads its diagonal: t.diagonal over the two dims,
    which moves it to the end."""
    while len(set(labels)) != len(labels):
        i = next(k for k, c in enumerate(labels) if labels.index(c) != k)
        first = labels.index(labels[i])
        if t.shape[first] != t.shape[i]:
            raise _C.Error(f"einsum(): subscript {labels[i]} is repeated in an operand of shape {tuple(t.shape)} but "
                           f"its sizes differ, {t.shape[first]} != {t.shape[i]}")
        t = t.diagonal(0, first, i)
        labels = [c for k, c in enumerate(labels) if k not in (first, i)] + [labels[i]]
    return t, labels


def einsum(*args):
    """einsum('ij,jk->ik', a, b): each operand's subscripts aligned on one set of axes (permute and
    unsqueeze), multiplied with broadcasting (a size-1 dim broadcasts against its letter's size),
    summed over the subscripts the output leaves out. '...' stands for the dims no letter names
    (broadcast among operands, from the right); a letter repeated within one operand takes its
    diagonal. Without '->' the output is '...' then the letters used once, in alphabetical order.
    The sublist form einsum(a, [0, 1], b, [1, 2], [0, 2]) names dims by ints."""
    if args and isinstance(args[0], Tensor):
        equation, operands = _from_sublists(args)
    else:
        if not args:
            raise TypeError("einsum(): give an equation and the operands")
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): the equation must be a str, not {type(equation).__name__}")
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): {equation!r} names {len(terms)} operands, {len(operands)} given")
    aligned, sizes = [], {}
    for k, (term, t) in enumerate(zip(terms, operands)):
        _args.tensor("einsum", t, f"operand {k}")
        t, labels = _diagonals(t, _labels(term, t, f"term {k}"))
        for c, n in zip(labels, t.shape):
            if sizes.get(c, 1) not in (1, n) and n != 1:
                raise _C.Error(f"einsum(): subscript {c if isinstance(c, str) else '...'} has size {n} in operand {k} "
                               f"but {sizes[c]} before (sizes must match or be 1)")
            sizes[c] = n if sizes.get(c, 1) == 1 else sizes[c]
        aligned.append((t, labels))
    spread = sorted((c for c in sizes if not isinstance(c, str)), key=lambda c: -c[1])  # '...', left to right
    if arrow:
        head, dots, tail = _labels(rhs, None, "the output")
        out = head + (spread if dots else []) + tail
        for c in head + tail:
            if c not in sizes:
                raise ValueError(f"einsum(): the output {rhs!r} names {c!r}, which no operand has")
        if len(set(out)) != len(out):
            raise ValueError(f"einsum(): the output {rhs!r} names a subscript twice")
    else:
        once = [c for c in sizes if isinstance(c, str) and lhs.count(c) == 1]  # a diagonal's letter counts twice
        out = spread + sorted(once)
    order = out + [c for c in sizes if c not in out]
    product = None
    for t, labels in aligned:
        present = [c for c in order if c in labels]
        t = t.permute(*[labels.index(c) for c in present]) if t.dim() > 1 else t
        size = dict(zip(present, t.shape))
        t = t.reshape(*[size.get(c, 1) for c in order]) if order else t
        product = t if product is None else product * t
    summed = list(range(len(out), len(order)))
    return product.sum(summed) if summed else product


FUNCTIONS = ["mm", "bmm", "dot", "outer", "tensordot", "einsum"]


def attach():
    """x.mm(y), x.bmm(y), x.dot(y), x.outer(y) as Tensor methods."""
    for name in ("mm", "bmm", "dot", "outer"):
        setattr(Tensor, name, globals()[name])
