"""Random calls to every public callable of hg, hg.nn.functional and hg.Tensor: each call returns or
raises hg.Error (hg.IndexError included), TypeError, IndexError or ValueError — never another
exception, never a dead interpreter.

Hypothesis draws the calls (tensors of rank 0–4 with sizes 0–4 in each dtype, some requiring
grad, some non-contiguous; ints from −6..6 up to ±2**64; floats with nan and ±inf; None, strings,
tuples, lists, NumPy arrays, slices, callables) as Python source. A child interpreter runs each
batch, printing every call before making it, so that a crash (a signal, an abort, an exit) names
its call; the rest of the batch then runs in a new child. A returned tensor is read back (its
element count against its shape, a contiguous copy, its repr) so that a view with bad strides
shows up. Calls that would allocate between 10**7 elements and an int64 overflow are skipped
(handgrad must refuse an overflowing size; a merely huge one it would try to allocate).

Not fuzzed: nothing opens a GUI or the network; hg.draw and hg.to_dot get tensors only (neither
writes a file). Run with -s to see the summary (calls made, outcomes by type).
"""

import collections
import inspect
import math
import re

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import handgrad as hg
from property_child import run_batch

F = hg.nn.functional
ALLOWED_NAMES = ("Error", "IndexError", "TypeError", "ValueError")  # as the child reports them
ELEMENT_CAP = 10**7


# ---------------------------------------------------------------- what is called

def param_names(fn):
    """Keyword names a callable takes: from its signature, or from nanobind's docstring."""
    try:
        sig = inspect.signature(fn)
        return sorted(n for n, p in sig.parameters.items()
                      if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n != "self")
    except (TypeError, ValueError):
        pass
    names = set()
    for line in (getattr(fn, "__doc__", None) or "").splitlines():
        if "(" in line and ")" in line:
            names.update(re.findall(r"[(,]\s*(\w+)\s*[:=,)]", line.split(") ->")[0] + ")"))
    return sorted(names - {"self", "arg", "args", "kwargs"})


def public(mod):
    names = set(getattr(mod, "__all__", [])) | {n for n in dir(mod) if not n.startswith("_")}
    return sorted(n for n in names if not n.startswith("_") and callable(getattr(mod, n, None))
                  and not inspect.ismodule(getattr(mod, n)))


HG_FUNCTIONS = public(hg)
F_FUNCTIONS = public(F)
TENSOR_METHODS, TENSOR_PROPS, TENSOR_RW_PROPS = [], [], []
for _n in sorted(n for n in dir(hg.Tensor) if not n.startswith("_")):
    _a = inspect.getattr_static(hg.Tensor, _n)
    if isinstance(_a, property):
        TENSOR_PROPS.append(_n)
        if _a.fset is not None:
            TENSOR_RW_PROPS.append(_n)
    elif callable(_a):
        TENSOR_METHODS.append(_n)
# the dunders a user reaches through syntax: S is the tensor, a and b drawn arguments
OPERATORS = ["(S) + (a)", "(a) + (S)", "(S) - (a)", "(a) - (S)", "(S) * (a)", "(a) * (S)", "(S) / (a)", "(a) / (S)",
             "(S) ** (a)", "(a) ** (S)", "(S) @ (a)", "(a) @ (S)", "-(S)", "(S)[a]", "exec:(S)[a] = b", "len(S)",
             "float(S)", "int(S)", "bool(S)", "list(S)", "np.asarray(S)", "repr(S)", "(S).__dlpack__()",
             "(S).__dlpack_device__()"]
TENSORS_ONLY = {"draw", "to_dot"}  # hg.draw / hg.to_dot: given tensors only (the brief's rule; neither writes)
# name -> why. Nothing public opens a GUI or the network. hg.dtype is a Python enum class (as
# torch.dtype is a type): called with arguments it is Python's own Enum functional API, whose
# errors (an AttributeError for a bad `type=`) are the standard library's, not handgrad's.
SKIPPED = {"dtype": "a Python enum class; calling it is the standard library's Enum API"}

TARGETS = ([("hg", n, tuple(param_names(getattr(hg, n)))) for n in HG_FUNCTIONS if n not in SKIPPED]
           + [("F", n, tuple(param_names(getattr(F, n)))) for n in F_FUNCTIONS]
           + [("method", n, tuple(param_names(getattr(hg.Tensor, n)))) for n in TENSOR_METHODS]
           + [("get", n, ()) for n in TENSOR_PROPS] + [("set", n, ()) for n in TENSOR_RW_PROPS]
           + [("op", o, ()) for o in OPERATORS])

# ---------------------------------------------------------------- arguments, as (source, value)

BIG = {2**31 - 1: "2**31-1", 2**31: "2**31", -2**31 - 1: "-2**31-1", 2**40: "2**40", 2**62: "2**62",
       -2**62: "-2**62", 2**63 - 1: "2**63-1", -2**63: "-2**63", 2**63: "2**63", -2**63 - 1: "-2**63-1",
       2**64: "2**64", 10**30: "10**30"}
FLOATS = ["0.0", "-0.0", "0.5", "-2.5", "3.0", "nan", "inf", "-inf", "1e308", "-1e308", "5e-324"]
STRINGS = ["''", "'cpu'", "'cuda'", "'cuda:1'", "'meta'", "'mean'", "'sum'", "'none'", "'tanh'", "'tiled'",
           "'materialized'", "'automatic'", "'float32'", "'x' * 3", "'\\u00e9'"]
MISC = ["None", "True", "False", "...", "slice(None, None, 2)", "slice(1, -1)", "slice(None, None, -1)",
        "slice(2**62, None)", "slice(None, None, 0)", "object()", "{}", "b'ab'", "1+2j", "(lambda *a, **k: None)",
        "hg.Generator(1)", "hg.float32", "hg.float64", "hg.int64", "hg.bool", "np.float64(1.5)", "np.int64(-1)",
        "np.int32(2)", "np.zeros((2, 3))", "np.zeros((2, 3), dtype=np.float32)[:, ::2]", "np.arange(6, dtype=np.int32)",
        "np.array(['a', 'b'])", "np.zeros(2, dtype=np.complex64)", "np.ones((0, 3), dtype=bool)",
        "np.zeros((2, 3)).T", "[1, 2.5]", "[[1, 2], [3]]", "[True, False]", "[[0.5, 1.0], [2.0, 3.0]]", "()"]
SHAPES = st.lists(st.integers(0, 4), max_size=4).map(tuple)
DTYPES = st.sampled_from(["float32", "float64", "int64", "bool"])


def ints():
    return st.one_of(st.integers(-5, 5), st.integers(-2, 4), st.sampled_from(sorted(BIG))).map(
        lambda i: (BIG.get(i, str(i)), i))


@st.composite
def tensors(draw, like=None):
    shape = draw(st.one_of(st.just(like), SHAPES) if like is not None else SHAPES)
    dtype = draw(DTYPES)
    grad = dtype.startswith("float") and draw(st.integers(0, 3)) == 0
    nc = len(shape) >= 2 and draw(st.integers(0, 3)) == 0
    return (f"T({shape}, '{dtype}'" + (", grad=True" if grad else "") + (", nc=True" if nc else "") + ")", None)


@st.composite
def sequences(draw):
    items = draw(st.lists(ints(), max_size=4))
    codes, vals = [c for c, _ in items], tuple(v for _, v in items)
    if draw(st.booleans()):
        return "[" + ", ".join(codes) + "]", list(vals)
    return "(" + ", ".join(codes) + ("," if len(codes) == 1 else "") + ")", vals


@st.composite
def index_tuples(draw, like):
    parts = draw(st.lists(st.one_of(ints(), st.sampled_from(
        ["None", "...", "slice(None)", "slice(1, None)", "slice(-1, 1)", "slice(None, None, 3)"]).map(
        lambda c: (c, None)), tensors(like)), min_size=2, max_size=4))
    return "(" + ", ".join(c for c, _ in parts) + ")", None


def values(like=None):
    """One argument: ints most often, then tensors (often of the self tensor's shape), then the rest."""
    return st.one_of(
        ints(), ints(), tensors(like), st.sampled_from(FLOATS).map(lambda c: (c, float(c))), sequences(),
        st.sampled_from(MISC + STRINGS).map(lambda c: (c, None)),
        st.lists(tensors(like), max_size=3).map(lambda ts: ("[" + ", ".join(c for c, _ in ts) + "]", None)),
        index_tuples(like) if like is not None else st.just(("None", None)))


def sizes_of(args):
    """The sizes a factory's positional arguments name (hg.zeros(2, 3) or hg.zeros((2, 3)))."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    out = []
    for v in args:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return None  # refused before any allocation
        out.append(int(v))
    return out


def too_big(kind, name, args, kwargs):
    """Whether the call would allocate more than ELEMENT_CAP elements without overflowing int64
    (handgrad would try; the test must not ask it to)."""
    if kind != "hg":
        return False
    if name in ("zeros", "ones", "randn", "full"):
        sizes = sizes_of(args[:1] if name == "full" else args)
        if sizes is None or any(s <= 0 for s in sizes):  # a negative size is refused, a 0 allocates nothing
            return False
        n = math.prod(sizes)
        return ELEMENT_CAP < n and n < 2**63  # every dtype fits when n < 2**63 / itemsize: take the smallest
    if name == "arange":
        nums = [v for v in args[:3] if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(nums) != len(args[:3]) or not nums or not all(math.isfinite(v) for v in nums):
            return False
        start, end, step = (0, nums[0], 1) if len(nums) == 1 else (nums + [1])[:3]
        if step == 0:
            return False
        n = (end - start) / step
        return ELEMENT_CAP < n < 2**63
    return False


@st.composite
def calls(draw):
    kind, name, kwnames = draw(st.sampled_from(TARGETS))
    shape = draw(SHAPES)
    self_code = draw(tensors(shape))[0]
    if name in TENSORS_ONLY:
        args = [draw(tensors())]
    else:
        args = draw(st.lists(values(shape), max_size=4))
    kws = draw(st.lists(st.sampled_from(kwnames), max_size=2, unique=True)) if kwnames and kind != "op" else []
    kwargs = {k: draw(values(shape)) for k in kws}
    if too_big(kind, name, [v for _, v in args], {k: v for k, (_, v) in kwargs.items()}):
        return None
    a = ", ".join([c for c, _ in args] + [f"{k}={c}" for k, (c, _) in kwargs.items()])
    if kind == "hg":
        return f"hg.{name}({a})"
    if kind == "F":
        return f"F.{name}({a})"
    if kind == "method":
        return f"{self_code}.{name}({a})"
    if kind == "get":
        return f"{self_code}.{name}"
    if kind == "set":
        return f"exec:t = {self_code}; t.{name} = {args[0][0] if args else 'None'}"
    first = args[0][0] if args else "1"
    second = args[1][0] if len(args) > 1 else "0.5"
    return name.replace("S", self_code).replace("(a)", f"({first})").replace("[a]", f"[{first}]").replace(
        "= b", f"= {second}")


# ---------------------------------------------------------------- the tests

class Tally:
    def __init__(self):
        self.outcomes = collections.Counter()
        self.problems = []  # (kind, call, detail)
        self.skipped = 0

    def add(self, batch, results):
        for k, code in batch:
            r = results.get(k, ("lost", "no result reported"))
            if isinstance(r, str):
                self.outcomes["returned" if r == "ok" else f"raised {r}"] += 1
            else:
                self.outcomes[r[0]] += 1
                self.problems.append((r[0], code, r[1]))

    def report(self, title):
        kinds = collections.Counter(k for k, _, _ in TARGETS)
        lines = [f"{title}: {sum(self.outcomes.values())} calls ({self.skipped} skipped as too large to allocate) over "
                 f"{len(TARGETS)} targets ({kinds['hg']} hg functions, {kinds['F']} hg.nn.functional, "
                 f"{kinds['method']} Tensor methods, {kinds['get']} properties ({kinds['set']} writable), "
                 f"{kinds['op']} operators)"]
        lines += [f"  {n:6d}  {what}" for what, n in self.outcomes.most_common()]
        for kind, code, detail in self.problems:
            lines.append(f"  {kind.upper()}: {code}  ->  {detail}")
        return "\n".join(lines)


def assert_clean(tally, title):
    report = tally.report(title)
    print("\n" + report)
    assert not tally.problems, report


BATCH = 150


def test_random_calls_return_or_raise_allowed_errors():
    tally = Tally()

    @settings(max_examples=30, deadline=None, derandomize=True, database=None, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=[getattr(HealthCheck, n) for n in ("too_slow", "data_too_large", "filter_too_much",
                                                                      "large_base_example") if hasattr(HealthCheck, n)])
    @given(st.lists(calls(), min_size=BATCH, max_size=BATCH))
    def run(drawn):
        batch = [(k, c) for k, c in enumerate(drawn) if c is not None]
        tally.skipped += len(drawn) - len(batch)
        tally.add(batch, run_batch(batch))

    run()
    assert_clean(tally, "random calls")


EXTREMES = ["2**31", "2**62", "-2**62", "2**63-1", "-2**63", "2**63", "-2**63-1", "2**64", "nan", "inf", "-inf"]


def test_extreme_numbers_in_every_position():
    """Every callable with each huge or non-finite number as its first, second or only argument
    (the rest small), on a small tensor: deterministic, beside the random calls."""
    S = "T((2, 3), 'float64')"
    tally, codes = Tally(), []
    for kind, name, _ in TARGETS:
        if kind in ("get", "set") or name in TENSORS_ONLY:
            continue
        if kind == "op":
            if "(a)" in name or "[a]" in name:
                codes += [name.replace("S", S).replace("(a)", f"({x})").replace("[a]", f"[{x}]").replace("= b", "= 1.0")
                          for x in EXTREMES]
            continue
        for x in EXTREMES:
            for args in ([x], [x, "1"], ["1", x]):
                if kind == "method":
                    codes.append(f"{S}.{name}({', '.join(args)})")
                    continue
                prefix = "hg" if kind == "hg" else "F"
                value = [eval(a, {"nan": math.nan, "inf": math.inf}) for a in args]
                if too_big(kind, name, value, {}):
                    tally.skipped += 1
                else:
                    codes.append(f"{prefix}.{name}({', '.join(args)})")
                codes.append(f"{prefix}.{name}({', '.join([S] + args)})")
    batch = list(enumerate(dict.fromkeys(codes)))
    tally.add(batch, run_batch(batch))
    assert_clean(tally, "extreme numbers")
