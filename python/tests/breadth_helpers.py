"""Helpers the breadth-op tests share (test_breadth_ops.py, test_breadth_shapes.py,
test_breadth_torch.py): float64 and int64 tensors from arrays, a non-contiguous copy, the three
gradient checks in one call, and a comparison to NumPy's values."""
import math

import numpy as np

import handgrad as hg

nan, inf = math.nan, math.inf
MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def f64(a, grad=False):
    return hg.tensor(np.asarray(a, dtype=np.float64), dtype=hg.float64, requires_grad=grad)


def i64(a):
    return hg.tensor(np.asarray(a, dtype=np.int64))


def strided(a):
    """a's values in a non-contiguous float64 tensor (every second column of a wider one)."""
    a = np.asarray(a, dtype=np.float64)
    wide = np.full(a.shape[:-1] + (2 * a.shape[-1],), nan)
    wide[..., ::2] = a
    return hg.tensor(wide, dtype=hg.float64)[..., ::2]


def checks(fn, *arrays, second=True, forward=True):
    """gradcheck, gradgradcheck and fwdcheck of fn over float64 leaves made from arrays."""
    inputs = [f64(a, True) for a in arrays]
    assert hg.autograd.gradcheck(fn, inputs)
    if second:
        assert hg.autograd.gradgradcheck(fn, inputs)
    if forward:
        assert hg.autograd.fwdcheck(fn, inputs)


def close(t, expected, **kw):
    np.testing.assert_allclose(t.detach().numpy() if isinstance(t, hg.Tensor) else t, expected,
                               **({"rtol": 1e-12, "atol": 1e-12} | kw))
