"""Every row of the op table (python/tests/rows/) through its checks: float64 gradcheck,
gradgradcheck and fwdcheck; the forward on non-contiguous inputs; the also names; the row's own
property check; and, where torch imports, the forward and float64 gradients against torch's under
the tolerance rule of python/tests/rows/__init__.py (skipped without torch). A public name without
rows fails here, and so does docs/rows.md when it is out of date."""

import pytest

from rows import (LOAD_ERRORS, check_also, check_grad, check_layouts, check_property, check_torch, covered_names,
                  load_rows, samples_of, wants_grad)
from rows.names import NOT_OPS, public_names

try:
    import torch
except ImportError:
    torch = None

ROWS = load_rows()
CASES = [(row, sample) for row in ROWS for sample in samples_of(row)]


def _ids(cases):
    seen = {}
    out = []
    for row, sample in cases:
        base = f"{row.id}:{sample.label}"
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return out


def _cases(keep):
    chosen = [c for c in CASES if keep(*c)]
    return pytest.mark.parametrize("row, sample", chosen, ids=_ids(chosen))


def test_row_files_import_and_make_samples():
    broken = [f"{name}: {type(e).__name__}: {e}" for name, e in LOAD_ERRORS.items()]
    broken += [f"{row.id} ({row.source}): samples() raised {type(row.samples_error).__name__}: {row.samples_error}"
               for row in ROWS if hasattr(row, "samples_error")]
    assert not broken, "rows that cannot run:\n" + "\n".join(broken)


@_cases(lambda row, sample: wants_grad(row, sample) and not sample.kink)
def test_grad(row, sample):
    check_grad(row, sample)


@_cases(lambda row, sample: True)
def test_layouts(row, sample):
    check_layouts(row, sample)


@_cases(lambda row, sample: bool(row.also))
def test_also(row, sample):
    check_also(row, sample)


@_cases(lambda row, sample: row.check is not None)
def test_property(row, sample):
    check_property(row, sample)


@pytest.mark.skipif(torch is None, reason="torch is not installed: the comparison with torch is skipped")
@_cases(lambda row, sample: row.torch)
def test_torch(row, sample):
    check_torch(row, sample, torch)


# ---------------------------------------------------------------- every public name has rows

def test_every_public_name_has_rows():
    names = public_names()
    covered = covered_names(ROWS)
    missing = sorted(names - covered - set(NOT_OPS))
    assert not missing, (f"{len(missing)} public names have no rows in python/tests/rows/ (add a Row, or, if a name "
                         "is not an op, an entry with its reason to NOT_OPS in python/tests/rows/names.py): "
                         + ", ".join(missing))


def test_not_ops_are_public_and_without_rows():
    names, covered = public_names(), covered_names(ROWS)
    stale = sorted(n for n in NOT_OPS if n not in names)
    assert not stale, f"NOT_OPS names that are not public names: {stale}"
    both = sorted(n for n in NOT_OPS if n in covered)
    assert not both, f"NOT_OPS names that have rows (take them out of NOT_OPS): {both}"


def test_rows_name_public_names():
    names = public_names()
    unknown = sorted(n for n in covered_names(ROWS) if n not in names)
    assert not unknown, f"rows name what is not a public name (a typo, or a name removed): {unknown}"


def test_docs_rows_md_is_current():
    from rows import docs
    command = "`python/.venv/bin/python python/tests/rows/docs.py`"
    current = docs.DOC.read_text() if docs.DOC.exists() else ""
    assert current == docs.render(ROWS), f"docs/rows.md is out of date; regenerate it with {command}"
    python_md = docs.PYTHON_MD.read_text()
    assert docs.python_md_section(ROWS) in python_md, (f"docs/python.md's section of differences from the op table is "
                                                       f"out of date; regenerate it with {command}")
