#!/usr/bin/env python3
"""ctest library_sources: no library source opens a namespace with a file-scope using-directive.

A unity build (the lab preset's) puts several sources in one translation unit, so a
`using namespace attention_detail;` at file scope in one file changes name lookup in the files
after it. The library's sources (engine/, cpu/, ops/, nn/, cuda/) say `using namespace X;` only
inside a function; the headers never. (ctest unity_build compiles the whole library as one unit;
this names the line.)"""
import re
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
directive = re.compile(r"^using\s+namespace\s+[\w:]+\s*;")
found = []
for folder in ("engine", "cpu", "ops", "nn", "cuda"):
    for path in sorted((root / folder).glob("*")):
        if path.suffix not in (".cpp", ".h", ".cu", ".cuh"):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if directive.match(line):
                found.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
for f in found:
    print("library_sources: a file-scope using-directive leaks into a unity build's other files:", f)
if found:
    print("library_sources: put it inside the functions that need it, or name what you use")
    sys.exit(1)
print("library_sources: no file-scope using-directive in engine/, cpu/, ops/, nn/, cuda/")
