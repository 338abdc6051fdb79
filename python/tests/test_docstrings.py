"""Every public name of the Python API has a docstring that help() shows: the functions and classes
of hg, hg.nn, hg.nn.functional, hg.nn.init, hg.linalg, hg.autograd (and forward_ad), hg.optim and
hg.func, hg.Tensor's methods and properties, and the public methods of hg.nn's and hg.optim's
classes. A C++ binding without one shows only its signature (nanobind's __doc__), so for those the
text after the signature counts. A public module lists only its API: dir() shows no helper
imports (math, Tensor, ...) that a user might take for part of it.
"""

import ast
import inspect
import types
from pathlib import Path

import pytest

import handgrad as hg
import handgrad.nn.functional as F
import handgrad.nn.init

MODULES = {
    "hg": hg, "hg.nn": hg.nn, "hg.nn.functional": F, "hg.nn.init": hg.nn.init, "hg.linalg": hg.linalg,
    "hg.autograd": hg.autograd, "hg.autograd.forward_ad": hg.autograd.forward_ad, "hg.optim": hg.optim,
    "hg.func": hg.func,
}
NOT_DOCUMENTED_HERE = {"__version__"}  # a string


def has_doc(obj):
    """Whether help(obj) shows a text written for it (not only a signature or a type's docstring);
    a list is a method and the ones it overrides: one of them has to have it."""
    if isinstance(obj, list):
        return any(has_doc(m) for m in obj)
    signatures = getattr(obj, "__nb_signature__", None)
    if signatures is not None:  # a nanobind function: (signature, doc, defaults) per overload
        return any(doc and doc.strip() for _, doc, _ in signatures)
    if isinstance(obj, property):
        return bool((obj.__doc__ or "").strip() or (obj.fget is not None and (obj.fget.__doc__ or "").strip()))
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    return bool(doc and doc.strip())


def is_submodule(module, name):
    """hg.nn.functional in hg.nn: a part of the API even where __all__ leaves it out."""
    obj = getattr(module, name)
    return isinstance(obj, types.ModuleType) and obj.__name__.startswith(module.__name__ + ".")


def public_names(module):
    names = getattr(module, "__all__", None)
    return list(names) if names is not None else [n for n in dir(module) if not n.startswith("_")]


def methods_of(cls):
    """The public methods and properties a class defines or attaches (the class's docstring says
    how to construct it, as PyTorch's do), each with the docstring help() shows: its own or, for an
    override, the one of the method it overrides."""
    for name in dir(cls):
        if name.startswith("_") or not any(name in vars(k) for k in cls.__mro__ if k.__module__.startswith("handgrad")):
            continue
        owners = [vars(k)[name] for k in cls.__mro__ if name in vars(k)]
        members = [m.__func__ if isinstance(m, (staticmethod, classmethod)) else m for m in owners]
        if callable(members[0]) or isinstance(members[0], property):
            yield name, members


def every_public_name():
    seen = set()
    for prefix, module in MODULES.items():
        for name in public_names(module):
            obj = getattr(module, name)
            if name in NOT_DOCUMENTED_HERE or isinstance(obj, (int, float, str, hg.dtype)):
                continue
            yield f"{prefix}.{name}", obj
            if isinstance(obj, type) and obj not in seen and obj.__module__.startswith("handgrad"):
                seen.add(obj)
                for method, members in methods_of(obj):
                    yield f"{prefix}.{name}.{method}", members


def test_every_public_name_has_a_docstring():
    missing = [name for name, obj in every_public_name() if not has_doc(obj)]
    assert not missing, f"{len(missing)} public names without a docstring: {', '.join(missing)}"


def test_the_walk_sees_the_api():
    names = {name for name, _ in every_public_name()}
    for name in ("hg.tensor", "hg.Tensor.backward", "hg.Tensor.shape", "hg.nn.Linear.forward",
                 "hg.nn.functional.cross_entropy", "hg.linalg.vector_norm", "hg.autograd.grad",
                 "hg.nn.AdamW.step", "hg.nn.Module.parameters", "hg.nn.init.xavier_uniform_"):
        assert name in names, name


@pytest.mark.parametrize("prefix", [p for p in MODULES if p != "hg"])
def test_a_public_module_lists_only_its_api(prefix):
    module = MODULES[prefix]
    api = set(public_names(module))
    extra = [n for n in dir(module) if not n.startswith("_") and n not in api and not is_submodule(module, n)]
    assert not extra, f"dir({prefix}) lists names that are not its API: {extra} (import them as _name)"


def test_a_docstring_is_the_first_statement():
    """help() shows a docstring only when it is the body's first statement: a string written
    after another statement is a comment nobody sees."""
    misplaced = []
    for path in sorted(Path(hg.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                misplaced += [f"{path.name}:{s.lineno} ({node.name})" for s in node.body[1:]
                              if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                              and isinstance(s.value.value, str)]
    assert not misplaced, f"strings after the first statement, which help() does not show: {misplaced}"
