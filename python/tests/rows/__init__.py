"""The op table: every public name of handgrad as rows of samples (PyTorch's OpInfo), and the checks
each row goes through.

A row names a public function or method (``hg.exp``, ``Tensor.view``, ``F.gelu``,
``hg.linalg.vector_norm``), the code that calls it (``fn(m, *args, **kwargs)``, the same code for
``m`` = handgrad and ``m`` = torch) and its samples. ``load_rows()`` gathers ``ROWS`` from every
``rows_*.py`` beside this file; python/tests/test_rows.py runs them, and
python/tests/rows/docs.py writes docs/rows.md from them.

The checks, one function each:

- ``check_grad``: float64 ``hg.autograd.gradcheck``, ``gradgradcheck`` (second_order) and
  ``fwdcheck`` (forward_ad) over the sample's float64 array arguments (leaves that require grad),
  contiguous and on non-contiguous copies (the checks' ``noncontiguous=True``); not at a kink.
- ``check_layouts``: the forward on non-contiguous copies of every tensor argument equals the
  forward on the contiguous ones.
- ``check_also``: each ``also`` name (``Tensor.exp`` beside ``hg.exp``) gives fn's result.
- ``check_property``: the row's ``check`` (what a random op's draws must satisfy).
- ``check_torch``: the forward equals torch's on the same inputs (shape, dtype, values), contiguous
  and non-contiguous, and for grad samples the float64 gradient of <out, G> for a random G equals
  torch's. A documented difference (``differs``) is asserted instead: hg's result must still
  differ from torch's (and equal ``expect`` where given, or raise where expect is Raises), so a
  note that stops being true fails.

The checks live in checks.py, the tolerance rule's code in compare.py, the shared sample makers in
samples.py; names.py lists the public names and NOT_OPS; docs.py writes docs/rows.md.

The tolerance rule (one rule for every comparison with torch):

- float64 results: |hg − torch| ≤ 1e-12 · |torch| + 1e-12 · max|torch| elementwise (a few hundred
  ulps relative to the element, plus as much of the tensor's largest magnitude for elements near 0);
- float32 results: |hg − torch| ≤ 1e-5 · |torch| + 1e-5 · max(1, max|torch|) (torch.testing's absolute
  1e-5 for results of order 1, scaled up for larger ones: float32 rounding of an O(1) computation
  leaves ~1e-7 absolute, which no relative bound holds where the result crosses 0, e.g. sinc at an
  integer);
- nan exactly where torch has nan; ±inf exactly where torch has the same infinity (a zero's sign
  is not compared);
- int64 and bool results, and Python numbers that are ints or bools: exactly equal;
- shapes and dtypes: equal (a Python number's type too).
"""

import importlib
import pathlib
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


@dataclass
class Row:
    name: str              # the public name as a user writes it: "hg.exp", "Tensor.view", "F.gelu", "hg.linalg.norm"
    fn: Callable           # fn(m, *args, **kwargs) -> Tensor or tuple of Tensors; m is handgrad or torch
    samples: Callable      # samples(rng: np.random.Generator) -> list[Sample]
    grad: bool = True      # float64 gradcheck, gradgradcheck and fwdcheck over the float64 array arguments
    second_order: bool = True
    forward_ad: bool = True
    torch: bool = True     # compare the forward (and, with grad, the float64 gradients) with torch
    also: tuple = ()       # other public names the same row covers ("Tensor.exp"): held equal to fn's result
    why: str = ""          # where grad/second_order/forward_ad/torch is False: why (shown in the docs)
    # ---- optional extensions (defaults keep the fields above meaning what they say)
    differs: str = ""      # a deliberate difference from torch on every sample: what and why (docs/python.md)
    compare: str = "values"  # "values"; "meta": shape and dtype only (random draws), with `check` for the values
    check: Callable | None = None  # check(out, *args, **kwargs) on hg's result: raises AssertionError when wrong
    gen: str = ""          # what test_torch_generated.py draws for fn: "unary", "binary", "reduce" ("" = none)
    dtypes: tuple = ("float64", "float32")  # the dtypes the generator may draw for the tensor arguments
    domain: tuple = (-2.0, 2.0)  # (low, high) of the generator's gradient draws (away from the op's kinks)
    signed: bool = False   # the generator's gradient draws are ±[low, high] (domain away from 0 on both sides)
    layouts: bool = True   # False where the result is the layout itself (stride, is_contiguous): no layout check
    gen_skip: Callable | None = None  # gen_skip(sample) True: a drawn input meets a documented difference (asserted
    #                                   by the row's own samples), so the generator draws again


@dataclass
class Sample:
    args: tuple            # np.ndarray float64 -> float64 tensor (a grad leaf on grad rows); Const, Int, Bool, F32
    kwargs: dict = field(default_factory=dict)
    label: str = ""
    grad: bool | None = None   # False: forward-only (edges: inf, nan)
    # ---- optional extensions
    differs: str = ""      # a deliberate difference from torch on this sample: what and why
    expect: Any = None     # where differs: hg's documented forward (an array, or a tuple of arrays), or Raises
    kink: bool = False     # a point where the op is not differentiable: its gradient is compared with torch's (the
    #                        subgradient PyTorch chooses) but not with finite differences


class _Wrapped:
    dtype = "float64"

    def __init__(self, value):
        self.value = np.asarray(value)

    def __repr__(self):
        return f"{type(self).__name__}({self.value.tolist()!r})"


class Const(_Wrapped):
    """A float64 tensor that requires no grad."""


class Int(_Wrapped):
    """An int64 tensor."""
    dtype = "int64"


class Bool(_Wrapped):
    """A bool tensor."""
    dtype = "bool"


class F32(_Wrapped):
    """A float32 tensor (no grad)."""
    dtype = "float32"


class Dtype:
    """A dtype by name, in args or kwargs: Dtype("float64") is hg.float64 for handgrad and
    torch.float64 for torch, so one sample serves both."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Dtype({self.name!r})"


class Raises:
    """A sample's expect when hg refuses the input (a documented difference): the exception types."""

    def __init__(self, *types):
        self.types = types

    def __repr__(self):
        return f"Raises({', '.join(t.__name__ for t in self.types)})"


# ---------------------------------------------------------------- loading

LOAD_ERRORS = {}  # rows file name -> the exception its import raised (test_rows.py fails on each)


def load_rows():
    """ROWS of every rows_*.py in this folder, in file order; a name given twice is numbered. A file
    that fails to import is left out and its error kept in LOAD_ERRORS, so the others still run."""
    rows, seen = [], {}
    for path in sorted(pathlib.Path(__file__).parent.glob("rows_*.py")):
        try:
            module = importlib.import_module(f"{__name__}.{path.stem}")
        except Exception as e:  # noqa: BLE001 (reported by test_rows.py, not hidden)
            LOAD_ERRORS[path.name] = e
            continue
        for row in getattr(module, "ROWS", []):
            row.source = path.name
            seen[row.name] = seen.get(row.name, 0) + 1
            row.id = row.name if seen[row.name] == 1 else f"{row.name}#{seen[row.name]}"
            rows.append(row)
    return rows


def samples_of(row):
    """The row's samples, drawn from a generator seeded by the row's name (the same on every run).
    Where samples() raises, none, and the error is kept in row.samples_error for test_rows.py."""
    try:
        return list(row.samples(np.random.default_rng(zlib.crc32(row.name.encode()))))
    except Exception as e:  # noqa: BLE001 (reported by test_rows.py, not hidden)
        row.samples_error = e
        return []


def canonical(name):
    """'hg.nn.functional.relu' -> 'F.relu', 'linalg.norm' -> 'hg.linalg.norm'."""
    for long, short in (("hg.nn.functional.", "F."), ("nn.functional.", "F."), ("torch.", "hg.")):
        if name.startswith(long):
            name = short + name[len(long):]
    if name.startswith("linalg."):
        name = "hg." + name
    return name


def covered_names(rows):
    return {canonical(n) for row in rows for n in (row.name, *row.also)}


from .compare import RTOL, assert_close, assert_same, dtype_name, outputs, to_numpy  # noqa: E402,F401
from .checks import (_compare, _results, check_also, check_grad, check_layouts, check_property,  # noqa: E402,F401
                     check_torch, make_tensor, materialize, refused, resolve, wants_grad)
