"""What the tests of PyTorch's names share: torch where it is installed, and the comparison of a
handgrad result with torch's (the nesting of tuples, and per tensor shape, dtype and values)."""
import numpy as np
import pytest

import handgrad as hg

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed: the comparison with torch is skipped")
F = hg.autograd.functional


def _np(x):
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def _same(h, t, rtol=1e-10, atol=1e-12):
    """hg's result equals torch's: the same nesting of tuples (torch's forward-mode jacobian gives
    lists), and per tensor shape, dtype and values."""
    if isinstance(t, (tuple, list)):
        assert isinstance(h, tuple) and len(h) == len(t), f"{type(h).__name__} of {len(h)}: torch's {len(t)}"
        for a, b in zip(h, t):
            _same(a, b, rtol, atol)
        return
    assert isinstance(h, hg.Tensor), f"expected a tensor, got {type(h).__name__}"
    assert tuple(h.shape) == tuple(t.shape), f"shape {tuple(h.shape)}, torch's {tuple(t.shape)}"
    assert str(h.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(_np(h), t.detach().numpy(), rtol=rtol, atol=atol)


def _pair(*shapes, seed=0):
    """The same float64 values as hg and torch tensors (a tuple of each)."""
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1.5, 1.5, s) for s in shapes]
    return tuple(hg.tensor(a) for a in arrays), tuple(torch.tensor(a) for a in arrays)
