"""hg.autograd.functional.jacobian / hessian and hg.func.jacrev / jacfwd / vmap, held to torch's
meaning (shapes, nesting, values, create_graph); skipped where torch is not installed."""
import pytest

import handgrad as hg
from torch_pairs import F, _pair, _same, needs_torch, torch


# ---------------------------------------------------------------- jacobian and hessian

FUNCS = {  # name -> (function of m, input shapes)
    "elementwise": (lambda m: lambda x: m.sin(x) * x.sum(), [(3,)]),
    "matrix": (lambda m: lambda x: m.tanh(x @ x.t()), [(2, 3)]),
    "0-d input": (lambda m: lambda x: m.exp(x) * x, [()]),
    "0-d output": (lambda m: lambda x: (x ** 3).sum(), [(2, 2)]),
    "two inputs, two outputs": (lambda m: lambda x, y: (x * y.sum(), m.exp(x) + y[:2]), [(2,), (3,)]),
    "two inputs, one output": (lambda m: lambda x, y: (x[:, None] * y).sum(0), [(2,), (2, 3)]),
}


def _call_inputs(shapes, xs):
    return xs if len(shapes) > 1 else xs[0]


@needs_torch
@pytest.mark.parametrize("name", list(FUNCS))
@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian_as_torch(name, strategy):
    make, shapes = FUNCS[name]
    h_in, t_in = _pair(*shapes)
    h = F.jacobian(make(hg), _call_inputs(shapes, h_in), strategy=strategy)
    t = torch.autograd.functional.jacobian(make(torch), _call_inputs(shapes, t_in), strategy=strategy,
                                           vectorize=strategy == "forward-mode")
    _same(h, t)
    assert not any(j.requires_grad for j in (h if isinstance(h, tuple) else (h,)) if isinstance(j, hg.Tensor))


@needs_torch
def test_jacobian_tuple_input_of_one_gives_tuples():
    h_in, t_in = _pair((3,))
    _same(F.jacobian(lambda x: x.exp(), h_in), torch.autograd.functional.jacobian(lambda x: x.exp(), t_in))
    _same(F.jacobian(lambda x: (x.exp(),), h_in[0]), torch.autograd.functional.jacobian(lambda x: (x.exp(),), t_in[0]))


@needs_torch
def test_jacobian_independent_output_and_strict_as_torch():
    h_in, t_in = _pair((2,), (3,))
    f = lambda x, y: x * 2  # noqa: E731
    _same(F.jacobian(f, h_in), torch.autograd.functional.jacobian(f, t_in))
    with pytest.raises(RuntimeError):
        torch.autograd.functional.jacobian(f, t_in, strict=True)
    with pytest.raises(hg.Error, match="independent of input 1"):
        F.jacobian(f, h_in, strict=True)


@needs_torch
def test_jacobian_create_graph_differentiates_again_as_torch():
    (hx,), (tx,) = _pair((3,))
    hx.requires_grad_()
    tx.requires_grad_()
    f = {m: (lambda x, m=m: m.sin(x) * x.sum()) for m in (hg, torch)}
    hj = F.jacobian(f[hg], hx, create_graph=True)
    tj = torch.autograd.functional.jacobian(f[torch], tx, create_graph=True)
    _same(hj, tj)
    assert hj.requires_grad
    _same(hg.autograd.grad((hj ** 2).sum(), hx)[0], torch.autograd.grad((tj ** 2).sum(), tx)[0])


@needs_torch
@pytest.mark.parametrize("shapes", [[(3,)], [()], [(2, 2)], [(2,), (3,)]])
def test_hessian_as_torch(shapes):
    h_in, t_in = _pair(*shapes)
    f = {m: (lambda *xs, m=m: sum(((m.tanh(x) * x.sum()) ** 2).sum() for x in xs) + (xs[0].sum() * xs[-1].sum())
             ) for m in (hg, torch)}
    _same(F.hessian(f[hg], _call_inputs(shapes, h_in)), torch.autograd.functional.hessian(f[torch], _call_inputs(shapes, t_in)))


@needs_torch
def test_hessian_create_graph_gives_third_derivatives_as_torch():
    (hx,), (tx,) = _pair((3,))
    hx.requires_grad_()
    tx.requires_grad_()
    f = {m: (lambda x, m=m: (m.sin(x) * x.sum()).sum()) for m in (hg, torch)}
    hh = F.hessian(f[hg], hx, create_graph=True)
    th = torch.autograd.functional.hessian(f[torch], tx, create_graph=True)
    _same(hh, th)
    assert hh.requires_grad
    _same(hg.autograd.grad((hh * hh).sum(), hx)[0], torch.autograd.grad((th * th).sum(), tx)[0])


def test_hessian_refuses_an_output_of_many_elements():
    with pytest.raises(hg.Error, match="one element"):
        F.hessian(lambda x: x * 2, hg.ones(3))
    with pytest.raises(TypeError, match="tensor or a tuple of tensors"):
        F.jacobian(lambda x: x, [1.0])
    with pytest.raises(TypeError, match="float tensor"):
        F.jacobian(lambda x: x, hg.arange(3))


# ---------------------------------------------------------------- hg.func: jacrev, jacfwd, vmap

@needs_torch
@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1,)])
def test_jacrev_jacfwd_as_torch(transform, argnums):
    h_in, t_in = _pair((2,), (2, 3))
    f = {m: (lambda x, y, m=m: ((m.sin(x)[:, None] * y).sum(0), x.exp())) for m in (hg, torch)}
    # torch.func.jacfwd gives zeros for a negative argnums (torch 2.15); its jacrev and hg's both read -1 as 1
    t_argnums = 1 if argnums == -1 else argnums
    _same(getattr(hg.func, transform)(f[hg], argnums)(*h_in), getattr(torch.func, transform)(f[torch], t_argnums)(*t_in))


@needs_torch
@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_jacrev_jacfwd_0d_and_aux_as_torch(transform):
    (hx,), (tx,) = _pair(())
    f = {m: (lambda x, m=m: (m.exp(x) * x, x * 2)) for m in (hg, torch)}
    hj, haux = getattr(hg.func, transform)(f[hg], has_aux=True)(hx)
    tj, taux = getattr(torch.func, transform)(f[torch], has_aux=True)(tx)
    _same(hj, tj)
    _same(haux, taux)


@needs_torch
def test_jacrev_of_jacrev_is_the_hessian_as_torch():
    (hx,), (tx,) = _pair((3,))
    f = {m: (lambda x, m=m: (m.tanh(x) * x.sum()).sum()) for m in (hg, torch)}
    _same(hg.func.jacrev(hg.func.jacrev(f[hg]))(hx), torch.func.hessian(f[torch])(tx))


def test_jacrev_refuses_bad_argnums():
    with pytest.raises(ValueError, match="out of range"):
        hg.func.jacrev(lambda x: x, argnums=1)(hg.ones(2))
    with pytest.raises(TypeError, match="argnums"):
        hg.func.jacfwd(lambda x: x, argnums=0.5)(hg.ones(2))


VMAPPED = {  # name -> (function of m, in_dims, out_dims, input shapes)
    "in_dims 0": (lambda m: lambda x, y: m.mv(x, y), 0, 0, [(4, 2, 3), (4, 3)]),
    "in_dims None for one argument": (lambda m: lambda x, w: m.tanh(x @ w), (0, None), 0, [(4, 3), (3, 2)]),
    "in_dims 1 and -1": (lambda m: lambda x, y: x * y.sum(), (1, -1), 0, [(2, 5), (3, 5)]),
    "out_dims 1": (lambda m: lambda x: m.outer(x, x), 0, 1, [(3, 2)]),
    "two outputs, out_dims per output": (lambda m: lambda x: (x.sum(), x * 2), 0, (0, 1), [(3, 2)]),
    "0-d slices": (lambda m: lambda x: m.exp(x) * x, 0, 0, [(5,)]),
    "tuple argument": (lambda m: lambda xs, s: xs[0] * xs[1] + s, ((0, 1), None), 0, [(3, 2), (2, 3), ()]),
}


@needs_torch
@pytest.mark.parametrize("name", list(VMAPPED))
def test_vmap_as_torch(name):
    make, in_dims, out_dims, shapes = VMAPPED[name]
    h_in, t_in = _pair(*shapes)
    if name == "tuple argument":
        h_in, t_in = ((h_in[0], h_in[1]), h_in[2]), ((t_in[0], t_in[1]), t_in[2])
    _same(hg.func.vmap(make(hg), in_dims, out_dims)(*h_in), torch.func.vmap(make(torch), in_dims, out_dims)(*t_in))


@needs_torch
def test_vmap_gradient_as_torch():
    h_in, t_in = _pair((4, 3), (3, 2))
    for x in (*h_in, *t_in):
        x.requires_grad_()
    hy = hg.func.vmap(lambda x, w: hg.tanh(x @ w), (0, None))(*h_in)
    ty = torch.func.vmap(lambda x, w: torch.tanh(x @ w), (0, None))(*t_in)
    _same(hg.autograd.grad((hy ** 2).sum(), h_in), torch.autograd.grad((ty ** 2).sum(), t_in))


def test_vmap_refusals():
    with pytest.raises(ValueError, match="different sizes"):
        hg.func.vmap(lambda x, y: x + y)(hg.ones(2), hg.ones(3))
    with pytest.raises(ValueError, match="at least one"):
        hg.func.vmap(lambda x: x, in_dims=None)(hg.ones(2))
    with pytest.raises(ValueError, match="only tensors"):
        hg.func.vmap(lambda x, s: x * s)(hg.ones(2), 3.0)
    with pytest.raises(ValueError, match="must return tensors"):
        hg.func.vmap(lambda x: 1.0)(hg.ones(2))
    with pytest.raises(hg.Error, match="size 0"):
        hg.func.vmap(lambda x: x)(hg.ones(0, 2))


def test_docstrings():
    for f in (hg.Size, hg.device, hg.get_default_dtype, hg.set_default_dtype, hg.save, hg.load, hg.cuda.is_available,
              hg.cuda.device_count, hg.cuda.current_device, F.jacobian, F.hessian, hg.func.jacrev, hg.func.jacfwd,
              hg.func.vmap):
        assert f.__doc__ and f.__doc__.strip(), f
    assert "loop" in hg.func.vmap.__doc__
