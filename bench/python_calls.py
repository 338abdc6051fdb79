#!/usr/bin/env python3
"""The cost of calls from Python, for one library: handgrad (`--lib hg`) or PyTorch (`--lib torch`).

bench/run-python runs it for both, alternating, and prints the ratios. The workloads are written
once, against the names both libraries share, so each line runs the same on both:

  add        c = a + b on 1-element float32 tensors, nothing requiring grad: the floor of one op call
  add_grad   the same with a requiring grad: the op is recorded for a backward
  mlp        micrograd's demo, one training step: MLP(3, [4, 4, 1]) with every weight a 0-d float64
             tensor, the four samples' forward (w·x + b, tanh), the squared-error loss, backward,
             and the SGD update p ← p − 0.05 ∇p under no_grad — about 370 small op calls and their
             backwards per step, the case that shows per-call overhead

Prints one line of JSON: per workload the median of --rounds runs, each the mean over --calls
calls (or --steps steps), in microseconds, and min and max over the runs.
"""
import argparse
import json
import os
import random
import statistics
import sys
import time


def load(lib):
    if lib == "torch":
        import torch
        torch.set_num_threads(1)
        return torch
    import handgrad
    return handgrad


def time_add(L, calls, grad):
    a = L.tensor([1.5], dtype=L.float32, requires_grad=grad)
    b = L.tensor([2.5], dtype=L.float32)
    start = time.perf_counter()
    for _ in range(calls):
        a + b
    return (time.perf_counter() - start) / calls * 1e6


class MLP:
    """micrograd's MLP(3, [4, 4, 1]): tanh on every layer but the last, weights uniform in [−1, 1)."""

    def __init__(self, L, seed):
        rnd = random.Random(seed)
        sizes = [3, 4, 4, 1]
        self.layers = []
        for nin, nout in zip(sizes, sizes[1:]):
            neurons = [([L.tensor(rnd.uniform(-1, 1), dtype=L.float64, requires_grad=True) for _ in range(nin)],
                        L.tensor(0.0, dtype=L.float64, requires_grad=True)) for _ in range(nout)]
            self.layers.append(neurons)

    def __call__(self, x):
        for i, neurons in enumerate(self.layers):
            out = []
            for w, b in neurons:
                act = b
                for wi, xi in zip(w, x):
                    act = act + wi * xi
                out.append(act.tanh() if i < len(self.layers) - 1 else act)
            x = out
        return x[0]

    def parameters(self):
        return [p for neurons in self.layers for w, b in neurons for p in w + [b]]


def time_mlp(L, steps):
    xs = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]]
    ys = [1.0, -1.0, -1.0, 1.0]
    model = MLP(L, 1337)
    params = model.parameters()
    xt = [[L.tensor(v, dtype=L.float64) for v in x] for x in xs]
    loss = None
    start = time.perf_counter()
    for _ in range(steps):
        loss = None
        for x, y in zip(xt, ys):
            err = (model(x) - y) ** 2
            loss = err if loss is None else loss + err
        for p in params:
            p.grad = None
        loss.backward()
        with L.no_grad():
            for p in params:
                p.copy_(p - 0.05 * p.grad)
    per_step = (time.perf_counter() - start) / steps * 1e6
    return per_step, float(loss.item())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", choices=["hg", "torch"], required=True)
    ap.add_argument("--calls", type=int, default=100_000, help="op calls per add run (default 100000)")
    ap.add_argument("--steps", type=int, default=200, help="mlp steps per run (default 200)")
    ap.add_argument("--rounds", type=int, default=5, help="runs per workload (default 5)")
    args = ap.parse_args()
    L = load(args.lib)

    result = {"lib": args.lib, "version": L.__version__, "python": sys.version.split()[0]}
    runs = {
        "add": lambda: time_add(L, args.calls, False),
        "add_grad": lambda: time_add(L, args.calls, True),
        "mlp": lambda: time_mlp(L, args.steps)[0],
    }
    for name, run in runs.items():
        run()  # warm up: first calls allocate and import
        us = [run() for _ in range(args.rounds)]
        result[name] = {"us": statistics.median(us), "min": min(us), "max": max(us)}
    result["mlp_final_loss"] = time_mlp(L, 50)[1]  # the same training on both: the same loss
    print(json.dumps(result))


if __name__ == "__main__":
    main()
