#!/usr/bin/env python3
"""Times an old and a new build of one bench in turn, old then new, ROUNDS times, and prints the
medians of a figure both print in their JSON line and the median of the per-round ratios old/new
(above 1: the new build is faster). Alternating keeps a drifting machine fair to both.

    bench/alternate.py OLD_PROGRAM NEW_PROGRAM ROUNDS "ARGS" FIGURE
    bench/alternate.py old/bench/bench_tinycharlm build/bench/bench_tinycharlm 15 \\
        "--threads 2 --steps 15 --warmup 3" ms_per_step_median
"""
import json
import statistics
import subprocess
import sys


def figure(program, args, key):
    """The figure `key` from the first JSON line of the program's output that has it."""
    out = subprocess.run([program] + args, capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("{") and f'"{key}"' in line:
            return float(json.loads(line)[key])
    sys.exit(f"alternate: {program} printed no JSON line with {key!r} (exit status {out.returncode}):\n"
             f"{out.stdout[-2000:]}{out.stderr[-2000:]}")


def main():
    if len(sys.argv) != 6 or not sys.argv[3].isdigit() or int(sys.argv[3]) < 1:
        sys.exit(__doc__.strip().split("\n\n")[1] if len(sys.argv) > 1 else __doc__)
    old, new, rounds, args, key = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(), sys.argv[5]
    olds, news = [], []
    for _ in range(rounds):
        olds.append(figure(old, args, key))
        news.append(figure(new, args, key))
    ratios = [a / b for a, b in zip(olds, news)]
    print("old", [round(x, 3) for x in olds])
    print("new", [round(x, 3) for x in news])
    print("old/new per round", [round(x, 3) for x in ratios])
    print(f"median old {statistics.median(olds):.3f}, new {statistics.median(news):.3f}; old/new: median of the "
          f"rounds {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}), of the medians "
          f"{statistics.median(olds) / statistics.median(news):.3f}")


if __name__ == "__main__":
    main()
