"""Build-time helper (python/CMakeLists.txt): the nanobind stub generator's pattern file for _C.pyi.

nanobind's stubgen reads handgrad._C alone (imported from a folder holding only the extension), so
the stub says what the C++ bindings are. The package's Python modules then attach more Tensor
methods (flip, var, __getitem__, ...) and wrap some bound ones (sum, max, to, ...); this writes a
pattern for each, with its Python signature, so that _C.pyi's Tensor has every method a user
reaches (their arguments untyped: mypy reads them as Any). Run as

    python -m handgrad._stub_patterns <folder with the extension alone> <pattern file>

with the package itself importable (the build's python/ on the path), and after stubgen

    python -m handgrad._stub_patterns --builtins <stub> <out>

which spells bool, int and float as builtins.bool, ... in the signatures of a class that has a
method of that name (Tensor.bool(), Tensor.float()): there the bare name means the method, and a
type checker would read `create_graph: bool` as an unknown type.
"""
import inspect
import json
import os
import re
import subprocess
import sys

# The bound names of _C.Tensor, read in a child that imports the extension without the package.
_BOUND = "import json, handgrad._C as C; print(json.dumps(sorted(vars(C.Tensor))))"


def _python_attached(cls):
    """{name: member} for what the Python modules set on cls: functions, and properties of them."""
    out = {}
    for name, member in vars(cls).items():
        if inspect.isfunction(member) or (isinstance(member, property) and inspect.isfunction(member.fget)):
            out[name] = member
    return out


def _signature(fn):
    """fn's parameters as a stub writes them: every default as ..., no annotations."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return "(self, *args, **kwargs)"
    params = [p.replace(default=...) if p.default is not p.empty else p for p in sig.parameters.values()]
    params = [p.replace(annotation=p.empty) for p in params]
    text = str(sig.replace(parameters=params, return_annotation=sig.empty))
    return text.replace("=Ellipsis", "=...")


def _stub(name, member):
    if isinstance(member, property):
        lines = ["@property", f"def {name}(self): ..."]
        if member.fset is not None:
            lines += [f"@{name}.setter", f"def {name}(self, value): ..."]
        return lines
    params = _signature(member)
    if params.startswith("()") or params.startswith("(*"):  # bound as a method: the first argument is self
        params = "(self" + (", " if params != "()" else "") + params[1:]
    return [f"def {name}{params}: ..."]


def main(extension_dir, out):
    import handgrad
    env = dict(os.environ, PYTHONPATH=extension_dir)  # run there too: -c puts the working folder first
    bound = set(json.loads(subprocess.run([sys.executable, "-c", _BOUND], env=env, cwd=extension_dir, check=True,
                                          capture_output=True, text=True).stdout))
    added, lines = [], []
    for name, member in sorted(_python_attached(handgrad.Tensor).items()):
        if name in ("__init__", "__new__"):
            continue
        if name in bound and isinstance(member, property):
            continue  # a bound property the Python layer re-spells: the binding's types stay
        stub = _stub(name, member)
        if name in bound:  # a bound method the Python layer wraps: the wrapper's signature replaces it
            lines += [f"handgrad\\._C\\.Tensor\\.{name}$:"] + ["    " + s for s in stub] + [""]
        else:
            added += stub + [""]
    lines += ["handgrad\\._C\\.Tensor\\.__suffix__:"] + ["    " + s if s else "" for s in added]
    lines += ["", "handgrad\\._C\\.__suffix__:", "    __version__: str", ""]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


BUILTINS = ("bool", "int", "float")


def qualify_builtins(stub, out):
    """stub with the builtin type names qualified inside the classes that shadow them."""
    lines = open(stub, encoding="utf-8").read().split("\n")
    shadowed, fixed = set(), []
    for line in lines:
        if line.startswith("class "):
            shadowed = set()
            body = lines[lines.index(line) + 1:]
            for inner in body:
                if inner and not inner.startswith(" "):
                    break
                m = re.match(r"    def (\w+)\(", inner)
                if m and m.group(1) in BUILTINS:
                    shadowed.add(m.group(1))
        elif line and not line.startswith(" "):
            shadowed = set()
        m = re.match(r"(\s+def \w+)(\(.*)", line)
        if shadowed and m:
            # a type follows ':', '->', '|' or '[', or ',' inside brackets (where no ':' or '=' follows:
            # after ',' outside them comes a parameter's name)
            names = "(" + "|".join(sorted(shadowed)) + r")\b"
            text = re.sub(r"((?::|->|\||\[)\s*)" + names, r"\1builtins.\2", m.group(2))
            line = m.group(1) + re.sub(r"(,\s*)" + names + r"(?!\s*[:=])", r"\1builtins.\2", text)
        fixed.append(line)
    text = "\n".join(fixed)
    if "builtins." in text:
        text = text.replace("\nimport enum\n", "\nimport builtins\nimport enum\n", 1)
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    if sys.argv[1] == "--builtins":
        qualify_builtins(*sys.argv[2:])
    else:
        main(*sys.argv[1:])
