#!/usr/bin/env python3
"""labs/check_width.py WIDTH [--max-lines N] COMMAND... — runs COMMAND and passes when it exits 0,
no line it prints on stdout is wider than WIDTH characters (the labs wrap their report at 100
columns) and, with --max-lines, it prints at most N lines (--html prints what it wrote, not the
report the page shows)."""
import subprocess
import sys

args = sys.argv[1:]
width, args = int(args[0]), args[1:]
max_lines = None
if args[:1] == ["--max-lines"]:
    max_lines, args = int(args[1]), args[2:]
run = subprocess.run(args, capture_output=True, text=True, encoding="utf-8", errors="replace")
lines = run.stdout.splitlines()
failed = False
for n, line in enumerate(lines, 1):
    if len(line) > width:
        print(f"line {n} is {len(line)} characters wide: {line}")
        failed = True
if max_lines is not None and len(lines) > max_lines:
    print(run.stdout[-3000:])
    print(f"check_width: {len(lines)} lines printed, wanted at most {max_lines}")
    failed = True
if run.returncode != 0:
    print(run.stderr[-4000:])
    print(f"check_width: exit status {run.returncode}, wanted 0")
    failed = True
sys.exit(1 if failed else 0)
