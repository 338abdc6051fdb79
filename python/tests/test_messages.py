"""Errors raised into Python speak Python: hg.float64 / .double(), hg.bool, 'cpu', hg.no_grad(),
retain_graph=True; a tensor by its shape and dtype (or its name), never by an internal id; no C++
source line unless anomaly mode is on. (conftest.py holds every message the suite provokes to
the same rule; these are the cases a learner meets first.)"""
import pytest

import handgrad as hg
from conftest import cpp_spellings


def message(f):
    with pytest.raises(Exception) as info:
        f()
    text = str(info.value)
    assert cpp_spellings(text) == [], text
    return text


def test_dtype_mismatch_says_what_python_calls_the_conversion():
    text = message(lambda: hg.ones(2, dtype=hg.float64) @ hg.ones(2))
    assert "a float64 tensor of shape (2,) vs a float32 tensor of shape (2,)" in text
    assert ".double()" in text


def test_an_integer_mask_names_the_python_dtypes():
    q = hg.ones(1, 3, 2)
    text = message(lambda: hg.nn.functional.scaled_dot_product_attention(
        q, q, q, attn_mask=hg.ones(3, 3, dtype=hg.int64)))
    assert "an int64 tensor of shape (3, 3)" in text and "True = may attend" in text and ".float()" in text


def test_a_named_tensor_keeps_its_name():
    q = hg.ones(2, 3)
    q.name = "q"
    assert "q (2, 3) float32" in message(lambda: q @ hg.ones(3, dtype=hg.float64))


def test_backward_twice_says_retain_graph_true_and_no_cpp_line():
    x = hg.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    text = message(y.backward)
    assert "retain_graph=True" in text and "called from" not in text


def test_anomaly_mode_keeps_where_the_node_was_recorded():
    with hg.autograd.detect_anomaly():
        x = hg.tensor([-1.0], requires_grad=True)
        with pytest.raises(hg.Error, match=r"anomaly: .*called from \S+:[0-9]+"):
            hg.log(x)


@pytest.mark.skipif(hg.cuda.is_available(), reason="a GPU is present: the tensor moves")
def test_no_gpu_points_to_cpu_as_python_writes_it():
    assert "use 'cpu'" in message(lambda: hg.ones(2).to("cuda"))


def test_cross_entropy_names_the_shapes_as_given_and_the_class_dim_1():
    text = message(lambda: hg.nn.functional.cross_entropy(hg.randn(2, 5, 10), hg.randint(0, 10, (2, 5))))
    assert "target (2, 5) does not fit input (2, 5, 10)" in text
    assert "dimension 1, of size 5" in text and "(2, 10)" in text
    with pytest.raises(RuntimeError):  # PyTorch's class for it; hg.Error is one
        hg.nn.functional.cross_entropy(hg.randn(2, 5, 10), hg.randint(0, 10, (2, 5)))
