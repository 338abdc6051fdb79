"""Every public name of the package exists and is used by at least one other test file, so a
name added to an __all__ without a test fails here."""

import pathlib
import re

import pytest

import handgrad as hg

MODULES = {"hg": hg, "hg.autograd": hg.autograd, "hg.autograd.forward_ad": hg.autograd.forward_ad, "hg.func": hg.func,
           "hg.nn": hg.nn, "hg.nn.functional": hg.nn.functional, "hg.nn.init": hg.nn.init, "hg.linalg": hg.linalg,
           "hg.optim": hg.optim}
HERE = pathlib.Path(__file__).parent
SOURCES = "\n".join(p.read_text() for p in sorted(HERE.glob("test_*.py")) if p.name != pathlib.Path(__file__).name)
NOTEBOOKS = "\n".join(p.read_text() for p in sorted((HERE.parent.parent / "notebooks").glob("*.ipynb")))
DUNDER = {"__version__"}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_public_name_exists_and_is_tested(module):
    mod = MODULES[module]
    names = getattr(mod, "__all__", None)
    assert names, f"{module} has no __all__"
    untested = []
    for name in names:
        assert hasattr(mod, name), f"{module}.{name} is in __all__ but not defined"
        if name in DUNDER or isinstance(getattr(mod, name), type(hg)):
            continue
        # used as an attribute (F.softmax, hg.tensor), called bare after an import, or as a dtype
        if not re.search(rf"(\.|\b){re.escape(name)}\b", SOURCES + NOTEBOOKS):
            untested.append(name)
    assert not untested, f"{module}: public names no test uses: {untested}"
