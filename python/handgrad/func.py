"""hg.func: jvp, jacrev, jacfwd and vmap, as torch.func spells them. jvp gives the outputs of a
function and their tangents along given directions in one forward pass (forward mode;
hg.autograd.forward_ad underneath); jacrev and jacfwd give its Jacobian by reverse mode (one
backward per output element) and by forward mode (one jvp per input element); vmap maps a
function over a batch dim by a Python loop."""

from . import _C, _args
from . import autograd_functional as _af
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


def _argnums(argnums, args, op):
    """The positions argnums names (an int or a tuple of ints, negatives from the end), checked."""
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums:
        raise ValueError(f"{op}: argnums must name at least one argument")
    out = []
    for n in nums:
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"{op}: argnums must be an int or a tuple of ints, got {argnums!r}")
        if not -len(args) <= n < len(args):
            raise ValueError(f"{op}: argnums {argnums!r} is out of range for a function of {len(args)} arguments")
        out.append(n % len(args))
    return out


def _jacobian_of(func, argnums, has_aux, op, jac_of):
    """The function args -> (the Jacobian of func w.r.t. args[argnums], aux where has_aux), the
    blocks made by jac_of(run, points, outputs) where run(*points) is func with the others fixed."""
    def jac(*args):
        nums = _argnums(argnums, args, op)
        aux = []

        def run(*points):
            full = list(args)
            for n, p in zip(nums, points):
                full[n] = p
            out = func(*full)
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise TypeError(f"{op}: has_aux=True wants the function to return (output, aux), got "
                                    f"{type(out).__name__}")
                out, extra = out
                aux.append(extra)
            return _af._as_tuple(out, "the function's output", op)

        tuple_out, blocks = jac_of(run, [args[n] for n in nums])
        result = _af._nest(blocks, tuple_out, isinstance(argnums, tuple))
        return (result, aux[0]) if has_aux else result
    return jac


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """jacrev(func, argnums=0, *, has_aux=False): the function computing func's Jacobian w.r.t. the
    argument(s) argnums by reverse mode, one backward per output element (torch.func.jacrev).
    Shapes as hg.autograd.functional.jacobian: out.shape + x.shape per block, a tuple over argnums
    when argnums is a tuple, a tuple over outputs when func returns one. With has_aux, func returns
    (output, aux) and jacrev's function (jacobian, aux). The result stays in the graph when an
    argument requires grad, so jacrev(jacrev(f)) is the Hessian. chunk_size is accepted (a loop)."""
    op = "hg.func.jacrev"

    def blocks(run, xs):
        hg = _args.hg()
        with hg.enable_grad():
            create_graph = any(x.requires_grad for x in xs)
            points = _af._points(xs, create_graph, op)
            tuple_out, outputs = run(*points)
            return tuple_out, _af._reverse(outputs, points, create_graph, False, op)
    return _jacobian_of(func, argnums, has_aux, op, blocks)


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """jacfwd(func, argnums=0, has_aux=False): the function computing func's Jacobian w.r.t. the
    argument(s) argnums by forward mode, one jvp (hg.func.jvp) per input element
    (torch.func.jacfwd); shapes and has_aux as jacrev's. randomness is accepted: each jvp runs
    func again, so random ops inside draw anew."""
    op = "hg.func.jacfwd"

    def blocks(run, xs):
        for j, x in enumerate(xs):
            if not x.dtype.is_floating_point:
                raise TypeError(f"{op}: argument {j} must be a float tensor (hg.float32 or hg.float64), got {x.dtype}")
        tuple_out, outputs = run(*xs)
        return tuple_out, _af._forward(lambda *points: run(*points)[1], tuple(xs), outputs, op)
    return _jacobian_of(func, argnums, has_aux, op, blocks)


def _batch_size(arg, dim, op):
    """The size of arg's batch dim (None for an argument that is not batched)."""
    if dim is None:
        return None
    if isinstance(arg, (tuple, list)):
        dims = dim if isinstance(dim, (tuple, list)) else (dim,) * len(arg)
        sizes = {_batch_size(a, d, op) for a, d in zip(arg, dims)} - {None}
        return sizes.pop() if len(sizes) == 1 else (None if not sizes else _differ(op, sizes))
    if not isinstance(arg, _C.Tensor):
        raise ValueError(f"{op}: in_dim {dim!r} given for an argument of type {type(arg).__name__}; only tensors can "
                         "be mapped over (give None for it)")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{op}: an in_dim must be an int or None, got {dim!r}")
    return arg.size(dim)


def _differ(op, sizes):
    raise ValueError(f"{op}: the mapped dims have different sizes {sorted(sizes)}; every batched argument must have "
                     "the same size along its in_dim")


def _pick(arg, dim, b):
    """Element b of arg's batch (arg itself when it is not batched)."""
    if dim is None:
        return arg
    if isinstance(arg, (tuple, list)):
        dims = dim if isinstance(dim, (tuple, list)) else (dim,) * len(arg)
        return type(arg)(_pick(a, d, b) for a, d in zip(arg, dims))
    return arg.select(dim, b)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """vmap(func, in_dims=0, out_dims=0): func mapped over a batch dim (torch.func.vmap), as a
    Python loop: func runs once per batch element, on each batched argument's slice along its in_dim
    (None: the argument is passed whole to every call), and each output's results are stacked
    along its out_dim (None: not stacked, the first call's). in_dims and out_dims are an int or
    None for all, or a tuple with one per argument / output (a tuple argument takes an int for all
    its tensors or a tuple). The loop is differentiable like any composition. randomness and
    chunk_size are accepted: each call draws anew."""
    op = "hg.func.vmap"
    if randomness not in ("error", "different", "same"):
        raise ValueError(f"{op}: randomness must be 'error', 'different' or 'same', got {randomness!r}")

    def mapped(*args):
        dims = tuple(in_dims) if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"{op}: in_dims {in_dims!r} has {len(dims)} entries for {len(args)} arguments")
        sizes = {_batch_size(a, d, op) for a, d in zip(args, dims)} - {None}
        if not sizes:
            raise ValueError(f"{op}: in_dims {in_dims!r} maps no argument; at least one must be batched")
        if len(sizes) > 1:
            _differ(op, sizes)
        size = sizes.pop()
        if size == 0:
            raise _C.Error(f"{op}: the batch has size 0, so the loop never calls the function and its outputs' "
                           "shapes are unknown")
        results = [func(*(_pick(a, d, b) for a, d in zip(args, dims))) for b in range(size)]
        single = not isinstance(results[0], (tuple, list))
        outs = [(r,) if single else tuple(r) for r in results]
        odims = tuple(out_dims) if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(outs[0])
        if len(odims) != len(outs[0]):
            raise ValueError(f"{op}: out_dims {out_dims!r} has {len(odims)} entries for {len(outs[0])} outputs")
        stacked = []
        for i, d in enumerate(odims):
            column = [o[i] for o in outs]
            if not all(isinstance(c, _C.Tensor) for c in column):
                raise ValueError(f"{op}: the function must return tensors, got {type(column[0]).__name__} at output {i}")
            stacked.append(column[0] if d is None else _args.hg().stack(column, d))
        return stacked[0] if single else tuple(stacked)
    return mapped


__all__ = ["jvp", "jacrev", "jacfwd", "vmap"]
