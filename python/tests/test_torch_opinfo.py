"""PyTorch's own sample inputs (its OpInfo database, torch.testing._internal) run through handgrad's
same-named functions: every sample's forward must equal torch's, and handgrad may refuse at most
MAX_REFUSED of them. This is how an outside user's sample suite meets the package; the op table
(python/tests/rows/) holds the gradients.

An OpInfo whose callable wraps torch's function (a lambda that reorders the arguments, say) runs
with `torch` in its module's globals read as handgrad, so the wrapper calls handgrad the same way.
Samples of dtypes handgrad does not have (int32, uint8, complex, ...) are not run; random ops are
compared elsewhere (their values differ by design).

The tolerance rule is the op table's (python/tests/rows/__init__.py's check), widened for float32
to 1e-5 and for float64 to 1e-10 relative to the tensor's largest magnitude: torch's samples reach
1e10 and sums of many terms, whose summation order differs. Run it directly for the table:

    PYTHONPATH=build/python bench/.venv/bin/python python/tests/test_torch_opinfo.py [names...]
"""
import functools
import sys
import types
import warnings
from collections import defaultdict

import numpy as np
import pytest

torch = pytest.importorskip("torch")
try:
    from torch.testing._internal.common_methods_invocations import op_db
except Exception as error:  # noqa: BLE001 (expecttest missing, or the module moved)
    pytest.skip(f"torch's OpInfo database does not import: {error}", allow_module_level=True)

import handgrad as hg  # noqa: E402

MAX_REFUSED = 0.02  # of all samples run
DTYPES = {torch.float64: "float64", torch.float32: "float32", torch.int64: "int64", torch.bool: "bool"}
RANDOM = {"bernoulli", "multinomial", "rand_like", "randint", "randint_like", "randn", "randn_like", "empty",
          "empty_like", "nn.functional.dropout", "normal", "uniform", "cauchy", "exponential", "geometric",
          "log_normal", "empty_strided", "new_empty", "new_empty_strided", "randperm"}
# Where handgrad's answer is right and torch's is another right answer: (name, why).
SAME_UP_TO = {
    "topk": "indices among equal values: torch's order of ties is not stable, handgrad's is (the values agree)",
    "sort": "indices among equal values when stable=False: torch may reorder ties, handgrad keeps them in order",
    "argsort": "as sort",
}


class _AsHandgrad:
    """A module read through handgrad: torch.xxx inside an OpInfo wrapper becomes hg.xxx."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        value = getattr(self._module, name)
        return _AsHandgrad(value) if isinstance(value, types.ModuleType) else value


def _attribute(root, dotted):
    """root.a.b for dotted 'a.b', or None."""
    try:
        return functools.reduce(getattr, dotted.split("."), root)
    except AttributeError:
        return None


def _handgrad_function(op):
    """handgrad's callable for op, or None where handgrad has no same-named function."""
    direct = _attribute(hg, op.name)
    if direct is None or isinstance(direct, types.ModuleType):
        return None
    f = op.op
    if f is _attribute(torch, op.name) or not isinstance(f, types.FunctionType):
        return direct
    names = dict(f.__globals__, torch=_AsHandgrad(hg))
    if "F" in names:
        names["F"] = hg.nn.functional
    return types.FunctionType(f.__code__, names, f.__name__, f.__defaults__, f.__closure__)


def _to_handgrad(v):
    if isinstance(v, torch.Tensor):
        a = v.detach().numpy()
        return hg.tensor(a, dtype=getattr(hg, DTYPES[v.dtype])) if v.dtype in DTYPES else hg.tensor(a)
    if isinstance(v, (list, tuple)):
        return type(v)(_to_handgrad(x) for x in v)
    if isinstance(v, dict):
        return {k: _to_handgrad(x) for k, x in v.items()}
    if isinstance(v, torch.dtype):
        return getattr(hg, DTYPES.get(v, str(v).replace("torch.", "")), v)
    if isinstance(v, torch.device):
        return str(v)
    return v


def _dtypes_all_known(v):
    if isinstance(v, torch.Tensor):
        return v.dtype in DTYPES
    if isinstance(v, (list, tuple)):
        return all(_dtypes_all_known(x) for x in v)
    if isinstance(v, dict):
        return all(_dtypes_all_known(x) for x in v.values())
    return not isinstance(v, torch.dtype) or v in DTYPES


def _arrays(v):
    if isinstance(v, str):
        return v
    if isinstance(v, (torch.Tensor, hg.Tensor)):
        return v.detach().cpu().numpy() if isinstance(v, hg.Tensor) else v.detach().numpy()
    if isinstance(v, (list, tuple)):
        return [_arrays(x) for x in v]
    return np.asarray(v)


def _random_sample(op, sample):
    """A sample whose result is a random draw (attention's dropout): torch's seed is not handgrad's."""
    return op.name == "nn.functional.scaled_dot_product_attention" and sample.kwargs.get("dropout_p", 0) > 0


def _shapes_and_dtypes(v):
    if isinstance(v, (torch.Tensor, hg.Tensor)):
        return f"shape {tuple(v.shape)}, {str(v.dtype).split('.')[-1]}"
    if isinstance(v, (list, tuple)):
        return [_shapes_and_dtypes(x) for x in v]
    return v


def mismatch(got, want):
    """Why got differs from want under the tolerance rule (None: they agree)."""
    if isinstance(got, str) or isinstance(want, str):
        return None if got == want else f"{got} vs torch's {want}"
    if isinstance(want, list) or isinstance(got, list):
        if not (isinstance(want, list) and isinstance(got, list)) or len(got) != len(want):
            return f"a {type(got).__name__} of {len(got) if isinstance(got, list) else '-'} vs torch's structure"
        return next((m for m in map(mismatch, got, want) if m), None)
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} vs torch's {want.shape}"
    if want.dtype.kind in "biu" and got.dtype.kind in "biu":
        return None if np.array_equal(got, want) else f"{got.ravel()[:6]} vs torch's {want.ravel()[:6]}"
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(w)):
        return f"NaN where torch has none, or none where it has one: {g.ravel()[:6]} vs {w.ravel()[:6]}"
    finite = np.isfinite(w)
    if not np.array_equal(g[~finite & ~np.isnan(w)], w[~finite & ~np.isnan(w)]):
        return "an infinity differs"
    rtol = 1e-5 if want.dtype == np.float32 else 1e-10
    scale = np.abs(w[finite]).max() if finite.any() else 0.0
    bad = np.abs(g[finite] - w[finite]) > rtol * (np.abs(w[finite]) + scale) + 1e-300
    if bad.any():
        i = int(np.argmax(bad))
        return f"{g[finite][i]!r} vs torch's {w[finite][i]!r}"
    return None


def run(only=None):
    """{name: [samples, wrong, refused, examples]} over the OpInfo database."""
    table = defaultdict(lambda: [0, 0, 0, []])
    warnings.filterwarnings("ignore")
    for op in op_db:
        if op.name in RANDOM or (only and op.name not in only):
            continue
        fn = _handgrad_function(op)
        if fn is None:
            continue
        for dtype in DTYPES:
            if dtype not in op.supported_dtypes("cpu"):
                continue
            try:
                samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))
            except Exception:  # noqa: BLE001 (a sample generator torch itself cannot run here)
                continue
            for s in samples:
                if not _dtypes_all_known((s.input, s.args, s.kwargs)):
                    continue
                try:
                    want = op(s.input, *s.args, **s.kwargs)
                except Exception:  # noqa: BLE001 (torch refuses it too)
                    continue
                row = table[op.name]
                row[0] += 1
                try:
                    got = fn(_to_handgrad(s.input), *_to_handgrad(s.args), **_to_handgrad(s.kwargs))
                except Exception as error:  # noqa: BLE001
                    row[2] += 1
                    if len(row[3]) < 3:
                        row[3].append(f"refused ({DTYPES[dtype]}) {s}: {type(error).__name__}: {str(error)[:200]}")
                    continue
                if _random_sample(op, s):  # one random draw each: compare what does not depend on it
                    got, want = _shapes_and_dtypes(got), _shapes_and_dtypes(want)
                why = mismatch(_arrays(got), _arrays(want))
                if why and op.name not in SAME_UP_TO:
                    row[1] += 1
                    if len(row[3]) < 3:
                        row[3].append(f"WRONG ({DTYPES[dtype]}) {s}: {why}")
    return table


def report(table):
    lines, totals = [], [0, 0, 0]
    for name in sorted(table):
        n, wrong, refused, examples = table[name]
        totals = [totals[0] + n, totals[1] + wrong, totals[2] + refused]
        if wrong or refused:
            lines.append(f"{name}: {n} samples, {wrong} wrong, {refused} refused")
            lines.extend("    " + e for e in examples)
    lines.append(f"{len(table)} functions, {totals[0]} samples: {totals[1]} wrong, {totals[2]} refused "
                 f"({100 * totals[2] / max(totals[0], 1):.1f} %)")
    return lines, totals


@pytest.fixture(scope="module")
def table():
    return run()


def test_no_wrong_value_on_torchs_samples(table):
    lines, (n, wrong, _) = report(table)
    assert n > 1000, f"only {n} of torch's samples ran: the database or its conversion changed"
    assert wrong == 0, "handgrad differs from torch on its own samples:\n" + "\n".join(lines)


def test_few_refusals_on_torchs_samples(table):
    lines, (n, _, refused) = report(table)
    assert refused <= MAX_REFUSED * n, (f"handgrad refuses {refused} of {n} samples (at most {MAX_REFUSED:.0%}):\n"
                                        + "\n".join(lines))


if __name__ == "__main__":
    print("\n".join(report(run(set(sys.argv[1:]) or None))[0]))
