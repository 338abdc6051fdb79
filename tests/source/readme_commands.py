#!/usr/bin/env python3
"""ctest readme_commands: what .ci/run runs is README.md's marked command blocks, read from the
README itself, not a copy that can drift.

Reads README.md here, independently of scripts/readme-commands, and holds `.ci/run --list` to it:
the same blocks (command-1, command-2, live-page, python-command at least), in README order, each exactly
as written. Also refuses a copy of any command's text in .ci/run itself, and a README over 150 lines."""
import re
import subprocess
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
readme = (root / "README.md").read_text()

# <!-- name -->, blank lines, ```bash, the command lines, ```
marked = re.findall(r"^<!-- ([A-Za-z0-9_-]+) -->[ \t]*\n(?:[ \t]*\n)*```bash[ \t]*\n(.*?)^```", readme, re.M | re.S)
expected = [(name, body.rstrip("\n")) for name, body in marked]
names = [n for n, _ in expected]
failures = []
# The README is what a newcomer reads first: short, pointing into docs/ for the rest.
if len(readme.splitlines()) > 150:
    failures.append(f"README.md has {len(readme.splitlines())} lines; keep it to 150 and move the rest into docs/")
for want in ("command-1", "command-2", "live-page", "python-command"):
    if want not in names:
        failures.append(f"README.md has no ```bash block after <!-- {want} -->")

listed = subprocess.run(["bash", str(root / ".ci/run"), "--list"], capture_output=True, text=True, cwd=root)
if listed.returncode != 0:
    failures.append(f".ci/run --list failed ({listed.returncode}): {listed.stderr.strip()}")
ran, current = [], None
for line in listed.stdout.splitlines():
    if line.startswith("== "):
        current = [line[3:], []]
        ran.append(current)
    elif current is not None:
        current[1].append(line)
ran = [(n, "\n".join(lines)) for n, lines in ran]
if ran != expected:
    failures.append(".ci/run would run\n" + "\n".join(f"  {n}: {c}" for n, c in ran) +
                    "\nbut README.md's marked blocks are\n" + "\n".join(f"  {n}: {c}" for n, c in expected))

ci = (root / ".ci/run").read_text()
for name, cmd in expected:
    for line in cmd.splitlines():
        if len(line.strip()) > 20 and line.strip() in ci:
            failures.append(f".ci/run holds a copy of README's {name} ({line.strip()!r}); read it from README.md")

for f in failures:
    print("readme_commands:", f)
if failures:
    sys.exit(1)
print(f"readme_commands: .ci/run runs README's {len(expected)} marked blocks as written: {', '.join(names)}")
