"""register_hook and retain_grad from Python, and hooks that hold their own tensor collected."""

import gc

import pytest

import handgrad as hg


def test_a_leaf_hook_sees_and_replaces_the_gradient():
    x = hg.tensor([1.0, 2.0], dtype=hg.float64, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()))
    (x * 3.0).sum().backward()
    assert seen == [[3.0, 3.0]] and x.grad.tolist() == [3.0, 3.0]

    y = hg.tensor([1.0, 2.0], dtype=hg.float64, requires_grad=True)
    y.register_hook(lambda g: g * 2.0)
    (y * 3.0).sum().backward()
    assert y.grad.tolist() == [6.0, 6.0]


def test_a_non_leaf_hook_changes_what_flows_on():
    x = hg.tensor([1.0, 2.0], dtype=hg.float64, requires_grad=True)
    h = x * x
    h.register_hook(lambda g: g * 10.0)
    h.sum().backward()
    assert x.grad.tolist() == [20.0, 40.0]  # 10 · 2x


def test_hook_errors_reach_python():
    x = hg.tensor([1.0, 2.0], dtype=hg.float64, requires_grad=True)
    x.register_hook(lambda g: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        x.sum().backward()
    z = hg.tensor([1.0, 2.0], dtype=hg.float64, requires_grad=True)
    z.register_hook(lambda g: hg.zeros(3, dtype=hg.float64))
    with pytest.raises(hg.Error, match=r"register_hook: the hook returned .*\(3,\).* same shape"):
        z.sum().backward()
    with pytest.raises(hg.Error, match="does not require grad"):
        hg.zeros(2).register_hook(lambda g: g)


def test_retain_grad_keeps_a_non_leaf_gradient():
    x = hg.tensor([1.0, 2.0], dtype=hg.float64, requires_grad=True)
    h = x * x
    h.retain_grad()
    (h * 3.0).sum().backward(retain_graph=True)
    assert h.grad.tolist() == [3.0, 3.0]
    (h * 3.0).sum().backward()
    assert h.grad.tolist() == [6.0, 6.0]  # added up, as .grad is on leaves


def test_a_leaf_hook_holding_its_leaf_is_collected_in_one_pass():
    gc.collect()
    held = hg._C._live_bytes()
    for _ in range(100):
        x = hg.randn(1000, seed=1, dtype=hg.float64, requires_grad=True)
        x.register_hook(lambda g, x=x: g)
        del x
    gc.collect()
    assert hg._C._live_bytes() == held


def test_a_hook_holding_its_tensor_is_collected():
    gc.collect()
    nodes, held = hg._C._live_nodes(), hg._C._live_bytes()
    for _ in range(200):
        x = hg.randn(1000, seed=1, dtype=hg.float64, requires_grad=True)
        x.register_hook(lambda g, x=x: g + x * 0.0)  # the closure holds x
        h = x * 2.0
        h.register_hook(lambda g, h=h: g)  # and a non-leaf's closure holds h
        del x, h
    # h's cycle first; x is held from C++ by h's node until that goes, so its own cycle is
    # seen by the next pass of the collector
    gc.collect()
    gc.collect()
    assert hg._C._live_bytes() == held, "tensors held by their own hooks were not collected"
    assert hg._C._live_nodes() == nodes
