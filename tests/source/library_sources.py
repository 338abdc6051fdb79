#!/usr/bin/env python3
"""ctest library_sources: three rules of the library's sources (engine/, cpu/, ops/, nn/, cuda/, viz/).

1. No file-scope using-directive. A unity build (the lab preset's) puts several sources in one
   translation unit, so a `using namespace attention_detail;` at file scope in one file changes
   name lookup in the files after it: `using namespace X;` only inside a function, never in a
   header. (ctest unity_build compiles the whole library as one unit; this names the line.)
2. No file over 400 lines: past that a file is probably two (STYLE.md's "small files").
3. No new include loop. A module is a header and its source (tape.h with tape.cpp), with its
   private header if it has one: X_internal.h, which includes X.h and is included by X's sources
   (and by the few files above that share it), counts as part of module X, not as a module of its
   own. A loop is a set of modules that include one another round a cycle. None is left: a new
   loop fails the test (KNOWN_LOOPS stays empty; a loop listed there and gone fails it too).
"""
import re
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
FOLDERS = ("engine", "cpu", "ops", "nn", "cuda", "viz")
MAX_LINES = 400
# The include loops of today, each a set of modules (docs/layout.md says where each layer belongs).
KNOWN_LOOPS = []
PRIVATE = "_internal"  # X_internal.h: module X's private header


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
for folder in FOLDERS:
    for path in sorted((root / folder).glob("*")):
        if path.suffix not in (".cpp", ".h", ".cu", ".cuh"):
            continue
        rel = path.relative_to(root)
        lines = path.read_text().splitlines()
        if len(lines) > MAX_LINES:
            failures.append(f"{rel} has {len(lines)} lines (at most {MAX_LINES}): it is probably two files")
        module = module_of(rel)
        edges = includes.setdefault(module, set())
        for n, line in enumerate(lines, 1):
            if directive.match(line):
                failures.append(f"{rel}:{n}: a file-scope using-directive leaks into a unity build's other files "
                                f"({line.strip()}); put it inside the functions that need it")
            m = include.match(line)
            if m and (root / m.group(1)).exists():
                target = module_of(Path(m.group(1)))
                if target != module and target.split("/")[0] in FOLDERS:
                    edges.add(target)


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
for comp in KNOWN_LOOPS:
    if comp not in found:
        failures.append("the listed loop " + " <-> ".join(sorted(comp)) + " is gone or has changed: "
                        "take it off KNOWN_LOOPS in tests/source/library_sources.py")

for f in failures:
    print("library_sources:", f)
if failures:
    sys.exit(1)
print(f"library_sources: no file-scope using-directive, no file over {MAX_LINES} lines, and only the "
      f"{len(KNOWN_LOOPS)} listed include loops in {', '.join(FOLDERS)}")
