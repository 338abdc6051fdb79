"""hg.autograd.functional: jacobian and hessian of a Python function, as
torch.autograd.functional spells them, built on the tape's reverse mode (one backward per output
element, each giving one row of J) or on forward mode (one jvp per input element, each giving one
column). Shapes are PyTorch's: d out / d x for an output of shape O and an input of shape I has
shape O + I; a tuple of inputs (or outputs) gives a tuple, and both give a tuple of tuples
jac[i][j] = d outputs[i] / d inputs[j].

The helpers _reverse and _forward are shared with hg.func.jacrev and hg.func.jacfwd.
"""
from . import _C, _args
from ._C import Error, Tensor


def _as_tuple(x, what, op):
    """(was it a tuple, the tensors as a tuple)."""
    if isinstance(x, Tensor):
        return False, (x,)
    if isinstance(x, (tuple, list)) and all(isinstance(t, Tensor) for t in x):
        return True, tuple(x)
    raise TypeError(f"{op}: {what} must be a tensor or a tuple of tensors, got {type(x).__name__}")


def _points(inputs, create_graph, op):
    """The points to differentiate at: fresh leaves, or, under create_graph, views of inputs that
    require grad, so that the result stays in the graph of the user's tensors."""
    points = []
    for j, x in enumerate(inputs):
        if not x.dtype.is_floating_point:
            raise TypeError(f"{op}: input {j} must be a float tensor (hg.float32 or hg.float64), got {x.dtype}")
        points.append(x.view_as(x) if create_graph and x.requires_grad else x.detach().requires_grad_())
    return tuple(points)


def _independent(op, i, j):
    return Error(f"{op}: output {i} of the function is independent of input {j}, which strict=True refuses "
                 "(strict=False gives zeros there)")


def _reverse(outputs, points, create_graph, strict, op):
    """jac[i][j] = d outputs[i] / d points[j], shape O_i + I_j: for each element e of each output,
    one backward of <outputs[i], one_hot(e)> gives row e of every block jac[i][·]."""
    hg = _args.hg()
    jac = []
    for i, out in enumerate(outputs):
        n = out.numel()
        rows = [[] for _ in points]
        if out.requires_grad and n:
            basis = hg.eye(n, dtype=out.dtype, device=out.device)
            for e in range(n):
                grads = _C._grad([out], list(points), [basis[e].reshape(out.shape)], True, create_graph, True)
                for j, (g, x) in enumerate(zip(grads, points)):
                    if g is None and strict:
                        raise _independent(op, i, j)
                    rows[j].append(hg.zeros_like(x) if g is None else g)
        elif strict and n:
            raise _independent(op, i, 0)
        jac.append([hg.stack(r).reshape(out.shape + x.shape) if r else
                    hg.zeros(out.shape + x.shape, dtype=x.dtype, device=x.device) for r, x in zip(rows, points)])
    return jac


def _forward(func, inputs, outputs, op):
    """jac[i][j] = d outputs[i] / d inputs[j] from forward mode: for each element k of each input,
    one jvp along the one-hot direction gives column k of every block jac[·][j]. outputs are
    func(*inputs) (for the shapes when an input has no elements)."""
    hg = _args.hg()
    from .func import jvp
    jac = [[] for _ in outputs]
    for j, x in enumerate(inputs):
        n = x.numel()
        columns = [[] for _ in outputs]
        basis = hg.eye(n, dtype=x.dtype, device=x.device) if n else None
        for k in range(n):
            tangents = tuple(basis[k].reshape(x.shape) if jj == j else None for jj in range(len(inputs)))
            _, dots = jvp(lambda *xs: _as_tuple(func(*xs), "the function's output", op)[1], inputs, tangents)
            for i, dot in enumerate(dots):
                columns[i].append(dot)
        for i, out in enumerate(outputs):
            jac[i].append(hg.stack(columns[i], -1).reshape(out.shape + x.shape) if n else
                          hg.zeros(out.shape + x.shape, dtype=x.dtype, device=x.device))
    return jac


def _nest(jac, tuple_out, tuple_in):
    """The tensor, tuple or tuple of tuples PyTorch returns for jac[i][j]."""
    rows = tuple(tuple(row) if tuple_in else row[0] for row in jac)
    return rows if tuple_out else rows[0]


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
    strategy='reverse-mode'): the Jacobian of func at inputs (torch.autograd.functional.jacobian).
    inputs is a tensor or a tuple of tensors; func returns a tensor or a tuple of them. The block
    d out / d x has shape out.shape + x.shape; tuple inputs or outputs give tuples, both a tuple of
    tuples [output][input]. 'reverse-mode' runs one backward per output element, 'forward-mode'
    one jvp per input element (vectorize is accepted; both are loops). create_graph=True keeps
    the result in the graph, so it can be differentiated again; strict=True refuses an output
    independent of an input (zeros otherwise)."""
    op = "hg.autograd.functional.jacobian"
    tuple_in, inputs = _as_tuple(inputs, "inputs", op)
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f"{op}: strategy must be 'reverse-mode' or 'forward-mode', got {strategy!r}")
    hg = _args.hg()
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(f"{op}: strategy='forward-mode' with create_graph=True is not supported "
                                      "(as PyTorch's); use strategy='reverse-mode'")
        if strict:
            raise NotImplementedError(f"{op}: strategy='forward-mode' with strict=True is not supported (as "
                                      "PyTorch's)")
        with hg.no_grad():
            inputs = tuple(x.detach() for x in inputs)
            tuple_out, outputs = _as_tuple(func(*inputs), "the function's output", op)
            return _nest(_forward(func, inputs, outputs, op), tuple_out, tuple_in)
    with hg.enable_grad():
        points = _points(inputs, create_graph, op)
        tuple_out, outputs = _as_tuple(func(*points), "the function's output", op)
        return _nest(_reverse(outputs, points, create_graph, strict, op), tuple_out, tuple_in)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
    outer_jacobian_strategy='reverse-mode'): the Hessian of a function with one output element at
    inputs (torch.autograd.functional.hessian): the Jacobian of its gradient, shape x.shape +
    x.shape for a tensor input, a tuple of tuples [i][j] of shape xi.shape + xj.shape for a tuple.
    The gradient is kept in the graph (create_graph) and differentiated again by
    outer_jacobian_strategy; create_graph=True keeps the Hessian itself in the graph (third
    derivatives)."""
    op = "hg.autograd.functional.hessian"
    tuple_in, inputs = _as_tuple(inputs, "inputs", op)

    def value(*xs):
        out = func(*xs)
        if not isinstance(out, Tensor):
            raise TypeError(f"{op}: the function must return one tensor, got {type(out).__name__}")
        if out.numel() != 1:
            raise Error(f"{op}: the function must return a tensor of one element, got shape {tuple(out.shape)}")
        return out.reshape(())

    def gradient(*xs):
        return jacobian(value, xs, create_graph=True, strict=strict)

    jac = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, strategy=outer_jacobian_strategy)
    return jac if tuple_in else jac[0][0]


__all__ = ["jacobian", "hessian"]
