"""The op table's tolerance rule (python/tests/rows/__init__.py states it), as assert_close, and
the helpers that read a result of either library back as NumPy."""

import numpy as np

RTOL = {"float64": 1e-12, "float32": 1e-5}


def outputs(out):
    """fn's result as a flat list (a Tensor, a tuple or list of them, a number or a bool)."""
    if isinstance(out, (tuple, list)):
        return [o for x in out for o in outputs(x)]
    return [out]


def to_numpy(x):
    if hasattr(x, "detach"):
        x = x.detach()
        x = x.cpu() if getattr(x, "device", "cpu") not in ("cpu",) and str(x.device) != "cpu" else x
        return np.array(x.numpy())
    return x


def dtype_name(x):
    """'float64', 'float32', 'int64', 'bool' for a tensor of either library (or torch's other
    dtypes by name), the type's name for a Python value."""
    if isinstance(x, np.ndarray) or (hasattr(x, "dtype") and hasattr(x, "detach")):
        return str(x.dtype).split(".")[-1]
    return type(x).__name__


def assert_close(actual, expected, what):
    """The tolerance rule (module docstring): actual is hg's value, expected the reference."""
    a_type, e_type = dtype_name(actual), dtype_name(expected)
    if a_type != e_type:
        raise AssertionError(f"{what}: dtype {a_type}, expected {e_type}")
    a, e = to_numpy(actual), to_numpy(expected)
    if not isinstance(a, np.ndarray):
        if isinstance(e, float) and isinstance(a, float):
            a, e = np.asarray(a), np.asarray(e)
        else:
            if a != e and not (a is not None and e is not None and a is e):
                raise AssertionError(f"{what}: {a!r}, expected {e!r}")
            return
    if a.shape != e.shape:
        raise AssertionError(f"{what}: shape {a.shape}, expected {e.shape}")
    if e.dtype.kind != "f":
        bad = a != e
        if bad.any():
            i = tuple(int(k) for k in np.argwhere(bad)[0])
            raise AssertionError(f"{what}: {int(bad.sum())} of {a.size} differ; first at {i}: {a[i]!r}, "
                                 f"expected {e[i]!r}")
        return
    rtol = RTOL["float32" if e.dtype == np.float32 else "float64"]
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    nan_a, nan_e = np.isnan(a64), np.isnan(e64)
    finite = np.isfinite(e64)
    scale = float(np.abs(e64[finite]).max()) if finite.any() else 0.0
    if e.dtype == np.float32:
        scale = max(scale, 1.0)
    with np.errstate(invalid="ignore"):
        bound = rtol * np.abs(e64) + rtol * scale
        bad = (nan_a != nan_e) | (np.isinf(e64) & (a64 != e64)) | (np.isinf(a64) & (a64 != e64))
        bad |= finite & np.isfinite(a64) & ~(np.abs(a64 - e64) <= bound)
    if bad.any():
        err = np.where(finite & np.isfinite(a64), np.abs(a64 - e64) / np.maximum(bound, 1e-300), np.inf)
        err = np.where(bad, err, -1)
        i = np.unravel_index(int(np.argmax(err)), a.shape) if a.ndim else ()
        raise AssertionError(f"{what}: {int(bad.sum())} of {a.size} outside rtol {rtol:g} (+{rtol:g}·max|ref| = "
                             f"{rtol * scale:.3g}); worst at {tuple(int(k) for k in i)}: {a64[i]!r}, expected "
                             f"{e64[i]!r}")


def assert_same(actual, expected, what):
    """Equal results (an alias against its name, one layout against another): the tolerance rule."""
    a, e = outputs(actual), outputs(expected)
    if len(a) != len(e):
        raise AssertionError(f"{what}: {len(a)} results, expected {len(e)}")
    for k, (x, y) in enumerate(zip(a, e)):
        assert_close(x, y, what + (f" (result {k})" if len(a) > 1 else ""))
