"""mypy reads handgrad as an editor does: typed_example.py (README's API with annotations) checks
without an error against the package under test, its _C.pyi (nanobind's stub of the extension,
written at build time) and py.typed; and a wrong call is an error, so the stub is really read.
Skips where mypy is not installed (scripts/setup-python installs the pinned one).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import handgrad as hg

mypy = pytest.importorskip("mypy", reason="mypy is not installed (scripts/setup-python installs mypy==2.4.1)")

HERE = Path(__file__).resolve().parent
PACKAGE = Path(hg.__file__).resolve().parent


def run_mypy(path, cwd):
    """mypy on path, reading the handgrad this test imported (mypy searches the interpreter's path)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PACKAGE.parent), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull,
                           "--no-error-summary", str(path)], cwd=cwd, env=env, capture_output=True, text=True)


def test_the_package_ships_its_types():
    assert (PACKAGE / "py.typed").is_file(), f"no py.typed in {PACKAGE}"
    stub = PACKAGE / "_C.pyi"
    assert stub.is_file(), f"no _C.pyi in {PACKAGE}: the build writes it (target handgrad_python_stub)"
    text = stub.read_text()
    for line in ("class Tensor:", "    def backward(", "    def flip(", "    def __getitem__(", "__version__: str"):
        assert line in text, f"_C.pyi has no {line!r}"


def test_the_typed_example_checks(tmp_path):
    result = run_mypy(HERE / "typed_example.py", tmp_path)
    assert result.returncode == 0, f"mypy reports errors:\n{result.stdout}{result.stderr}"


def test_a_wrong_call_is_an_error(tmp_path):
    wrong = tmp_path / "wrong.py"
    wrong.write_text("import handgrad as hg\n"
                     "x: int = hg.tensor([1.0])\n"
                     "hg.exp('a')\n"
                     "hg.ones(2).backward(create_graph='yes')\n"
                     "hg.ones(2).no_such_method()\n")
    out = run_mypy(wrong, tmp_path).stdout
    for line in (2, 3, 4, 5):
        assert f"wrong.py:{line}: error" in out, f"mypy does not see the error on line {line}:\n{out}"
