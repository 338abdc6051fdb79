"""docs/python.md held to the package: every `hg.<name>` it names exists (a function, a module, a
class or a dtype), and every name its "What is not built yet" section calls missing is really
refused on use. The page is what a learner reads first; a name it promises must be there."""
import re
from pathlib import Path

import pytest

import handgrad as hg

PAGE = Path(__file__).resolve().parents[2] / "docs" / "python.md"
TEXT = PAGE.read_text()
NOT_BUILT = TEXT[TEXT.index("## What is not built yet"):TEXT.index("## Differences from PyTorch that the op table")]
BUILT = TEXT.replace(NOT_BUILT, "")


def named(text):
    """The dotted names `hg.a.b` written in code spans of `text` (a call's parentheses dropped)."""
    names = set()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks: examples, not promises
    for span in re.findall(r"`([^`]+)`", text):
        names.update(re.findall(r"\bhg\.[A-Za-z_][A-Za-z0-9_.]*[A-Za-z0-9_]", span))
    return sorted(names)


def resolve(dotted):
    obj = hg
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", named(BUILT))
def test_every_name_the_page_promises_exists(name):
    try:
        resolve(name)
    except AttributeError:
        pytest.fail(f"docs/python.md names {name}, which the package does not have")


def test_the_page_names_enough_to_be_checked():
    assert len(named(BUILT)) >= 60


@pytest.mark.parametrize("name", named(NOT_BUILT))
def test_what_the_page_calls_not_built_is_refused_on_use(name):
    dtype = resolve(name)  # the name exists, as in PyTorch
    with pytest.raises((hg.Error, TypeError), match="handgrad has no"):
        hg.zeros(2).to(dtype)
    with pytest.raises((hg.Error, TypeError), match="handgrad has no"):
        hg.zeros(2, dtype=dtype)


def test_the_not_built_section_names_the_dtypes():
    assert {"hg.int32", "hg.float16", "hg.bfloat16", "hg.complex64"} <= set(named(NOT_BUILT))
