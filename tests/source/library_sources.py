"""ctest library_sources: rules of the sources, checked as text.

The library (engine/, cpu/, ops/, nn/, cuda/, viz/):
1. No file-scope using-directive. A unity build (the lab preset's) puts several sources in one
   translation unit, so a `using namespace attention_detail;` at file scope in one file changes
   name lookup in the files after it: `using namespace X;` only inside a function, never in a
   header. (ctest unity_build compiles the whole library as one unit; this names the line.)
2. No file-scope helper of one name in two sources: a name defined in an anonymous namespace or as
   `static` at namespace scope (a function, a type, a constant) is private to its file only until a
   unity build merges the files; then two `require`s are one overload set, or a redefinition.
   ctest unity_build catches the second kind; this catches both, by name. Today's are listed in
   KNOWN_DUPLICATES (one going away fails the test until it is taken off the list).

The library, the labs (labs/) and the Python package and its tests (python/handgrad, python/tests):
3. No file over 400 lines: past that a file is probably two (STYLE.md's "small files").
4. No new include loop. A module is a header and its source (tape.h with tape.cpp), with its
   private header if it has one: X_internal.h, which includes X.h and is included by X's sources
   (and by the few files above that share it), counts as part of module X, not as a module of its
   own. A loop is a set of modules that include one another round a cycle. None is left: a new
   loop fails the test (the library's KNOWN_LOOPS stay empty; a loop listed there and gone fails it too).
5. No import loop in the Python package: a set of python/handgrad modules that import one another
   round a cycle at import time (a module-level import; one inside a function runs later and does
   not count). `from .. import _C` is an import of handgrad._C, not of the package handgrad, so the
   topic modules import the helpers (_args) and one another, never the package's __init__.
"""
import ast
import re
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
FOLDERS = ("engine", "cpu", "ops", "nn", "cuda", "viz")
LABS = "labs"
PYTHON = ("python/handgrad", "python/tests")
MAX_LINES = 400
# The include loops of today, each a set of modules (docs/layout.md says where each layer belongs):
# the library has none; two labs' helpers still include each other.
KNOWN_LOOPS: list[set[str]] = []
# The file-scope names defined in more than one library source today: name -> the sources.
KNOWN_DUPLICATES: dict[str, set[str]] = {}
PRIVATE = "_internal"  # X_internal.h: module X's private header


def strip(text):
    """Comments, string and char literals blanked, preprocessor lines dropped (newlines kept)."""
    out, i, n = [], 0, len(text)
    text = re.sub(r'R"(\w*)\((?:.|\n)*?\)\1"', lambda m: '""' + "\n" * m.group(0).count("\n"), text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i); i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2); j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j)); i = j
        elif c == '"' or (c == "'" and not (i and text[i - 1].isalnum())):  # not a digit separator (100'000)
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c); i = j + 1
        else:
            out.append(c); i += 1
    return "\n".join("" if l.lstrip().startswith("#") else l for l in "".join(out).split("\n"))

NAME = r"[A-Za-z_]\w*"

def declared(stmt):
    """The name a namespace-scope declaration introduces (None: none worth a name)."""
    s = " ".join(stmt.split())
    s = re.sub(r"^template\s*<", "<", s)
    if s.startswith("<"):  # skip the template parameter list
        depth = 0
        for k, ch in enumerate(s):
            depth += ch == "<"
            depth -= ch == ">"
            if depth == 0:
                s = s[k + 1:].strip(); break
    m = re.match(rf"(?:(?:static|inline|constexpr|const|\[\[\w+\]\])\s+)*(?:struct|class|union|enum(?:\s+class)?)\s+(?:\w+\s*\(.*?\)\s*)?({NAME})", s)
    if m:
        return m.group(1)
    m = re.match(rf"using\s+({NAME})\s*=", s)
    if m:
        return m.group(1)
    if re.match(r"(using|static_assert|namespace|extern|typedef)\b", s):
        return None
    angle = 0
    for k, ch in enumerate(s):
        if ch == "<": angle += 1
        elif ch == ">": angle -= 1
        elif angle <= 0 and ch in "=({[":
            m = re.search(rf"({NAME})\s*(?:\[[^\]]*\]\s*)*$", s[:k])
            name = m.group(1) if m else None
            if ch == "(" and m is None:
                return None
            return None if name in ("operator", "const") else name
    return None

def file_scope_names(text):
    """Names defined at namespace scope inside an anonymous namespace, or `static` there."""
    text = strip(text)
    names = {}
    scopes = []  # one per open brace: "anon", "ns", or "other"
    stmt, start = [], 0
    for i, ch in enumerate(text):
        if not stmt:
            start = i
        if ch in "{;}":
            at_ns = all(s != "other" for s in scopes)
            stmt_text = "".join(stmt)
            s = stmt_text.strip()
            stmt = []
            if ch == "{":
                m = re.match(r"^(?:inline\s+)?namespace\s*(\w*(?:::\w+)*)\s*$", s)
                ext = re.match(r'^extern\s*"*\s*$', s)
                if m:
                    scopes.append("ns" if m.group(1) else "anon")
                    continue
                if ext:
                    scopes.append("ns"); continue
                if at_ns and s:
                    _record(names, s, scopes, text.count("\n", 0, start + len(stmt_text) - len(stmt_text.lstrip())) + 1)
                scopes.append("other")
            elif ch == "}":
                if scopes:
                    scopes.pop()
            elif at_ns and s:
                _record(names, s, scopes, text.count("\n", 0, start + len(stmt_text) - len(stmt_text.lstrip())) + 1)
            continue
        stmt.append(ch)
    return names

def _record(names, s, scopes, line):
    anon = "anon" in scopes
    static = re.match(r"^(?:template\s*<[^{;]*?>\s*)?(?:inline\s+)?static\b", " ".join(s.split())) is not None
    if not (anon or static):
        return
    name = declared(s)
    if name:
        names.setdefault(name, line)


def module_of(path):
    """The module a file belongs to: its folder and stem, a private header's without "_internal"."""
    stem = path.stem
    if path.suffix in (".h", ".cuh") and stem.endswith(PRIVATE):
        stem = stem[: -len(PRIVATE)]
    return f"{path.parent.as_posix()}/{stem}"


directive = re.compile(r"^using\s+namespace\s+[\w:]+\s*;")
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
failures = []
includes = {}  # module -> modules it includes
file_scope = {}  # name -> {library source: line}


def too_long(rel, lines):
    if len(lines) > MAX_LINES:
        failures.append(f"{rel} has {len(lines)} lines (at most {MAX_LINES}): it is probably two files")


def included(rel, name):
    """The file an #include "name" in rel reads: beside rel first, then from the root (the include path)."""
    for candidate in (rel.parent / name, Path(name)):
        if (root / candidate).exists():
            return Path(candidate.as_posix())
    return None


for folder in FOLDERS + (LABS,):
    for path in sorted((root / folder).glob("*")):
        if path.suffix not in (".cpp", ".h", ".cu", ".cuh"):
            continue
        rel = path.relative_to(root)
        text = path.read_text()
        lines = text.splitlines()
        too_long(rel, lines)
        module = module_of(rel)
        edges = includes.setdefault(module, set())
        for n, line in enumerate(lines, 1):
            if folder != LABS and directive.match(line):
                failures.append(f"{rel}:{n}: a file-scope using-directive leaks into a unity build's other files "
                                f"({line.strip()}); put it inside the functions that need it")
            m = include.match(line)
            target = included(rel, m.group(1)) if m else None
            if target is not None:
                target = module_of(target)
                if target != module and target.split("/")[0] in FOLDERS + (LABS,):
                    edges.add(target)
        if folder != LABS and path.suffix == ".cpp":  # the sources a unity build merges
            for name, n in file_scope_names(text).items():
                file_scope.setdefault(name, {})[rel.as_posix()] = n

for name, where in sorted(file_scope.items()):
    if len(where) > 1 and set(where) != KNOWN_DUPLICATES.get(name):
        places = ", ".join(f"{f}:{n}" for f, n in sorted(where.items()))
        failures.append(f"'{name}' is a file-scope name of {len(where)} library sources ({places}); a unity build "
                        "merges them: rename one after its file, or share one definition from a header")
for name, files in sorted(KNOWN_DUPLICATES.items()):
    if set(file_scope.get(name, {})) != files:
        failures.append(f"the listed duplicate '{name}' ({', '.join(sorted(files))}) is gone or has changed: "
                        "take it off KNOWN_DUPLICATES in tests/source/library_sources.py")


def python_module(rel):
    """handgrad.nn.functional for python/handgrad/nn/functional.py (a package for its __init__.py)."""
    parts = list(rel.relative_to("python").with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def python_imports(path, module, known):
    """The handgrad modules that path imports while it is imported (not inside a function)."""
    is_package = path.name == "__init__.py"
    found = set()
    pending = list(ast.parse(path.read_text()).body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue  # runs when called, not when imported
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([node.module] if node.module else []))
            for a in node.names:  # `from P import m`: the module P.m where there is one, else P
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
        pending.extend(ast.iter_child_nodes(node))
    return {m for m in found if m in known and m != module}


python_files = {}
for folder in PYTHON:
    for path in sorted((root / folder).rglob("*.py")):
        rel = path.relative_to(root)
        too_long(rel, path.read_text().splitlines())
        if folder == "python/handgrad":
            python_files[python_module(rel)] = path
known_modules = set(python_files) | {"handgrad._C"}
imports = {m: python_imports(p, m, known_modules) for m, p in python_files.items()}

def loops(graph):
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(comp)
    return found


found = loops(includes)
for comp in found:
    if comp not in KNOWN_LOOPS:
        failures.append("an include loop that is not on the list: " + " <-> ".join(sorted(comp)) +
                        "; a layer includes only those below it (docs/layout.md)")
for comp in loops(imports):
    failures.append("an import loop in the Python package: " + " <-> ".join(sorted(comp)) + "; a topic module "
                    "imports the helpers (_args) and the modules it builds on, never the package (import inside "
                    "the function that needs it, or move the shared code down)")
for comp in KNOWN_LOOPS:
    if comp not in found:
        failures.append("the listed loop " + " <-> ".join(sorted(comp)) + " is gone or has changed: "
                        "take it off KNOWN_LOOPS in tests/source/library_sources.py")

for f in failures:
    print("library_sources:", f)
if failures:
    sys.exit(1)
print(f"library_sources: no file-scope using-directive and only the {len(KNOWN_DUPLICATES)} listed file-scope "
      f"names of two sources in {', '.join(FOLDERS)}; no file over {MAX_LINES} lines, only the {len(KNOWN_LOOPS)} "
      f"listed include loops and no import loop there and in {LABS}, {', '.join(PYTHON)}")
