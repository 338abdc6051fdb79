#!/usr/bin/env python3
"""Causal attention in PyTorch on the CPU: the peer of bench/bench_attention.cpp.

q, k, v of shape (B, H, T, d_k) = (1, 8, T, 64), float32; one iteration is, by --mode: fwdbwd
(the default), o = attention(q, k, v); o.backward(dO) with a fixed random dO, the leaves'
gradients dropped between iterations; forward, o = attention(q, k, v) under torch.no_grad();
jvp, (o, ȯ) = torch.func.jvp(attention, (q, k, v), (q̇, k̇, v̇)) with fixed random tangents
(torch's fused SDPA kernels refuse forward mode: the error is reported; the math path runs). --path sdpa: torch.nn.functional.scaled_dot_product_attention(q, k, v,
is_causal=True) (torch >= 2.0; the kernel torch picked is reported, from o.grad_fn); --path
math: softmax(q kᵀ · scale + M) v with M the additive causal mask (0, or -inf above the
diagonal), made once before the clock starts.

Memory as in the C++ bench, so that the two compare: in a fresh process, after one call at
T = 64 (so that thread pools and the libraries' lazy set-up are not counted), before the first
call at T the resident size (VmRSS) is read and the peak reset (/proc/self/clear_refs, "5"); the peak
(VmHWM) after the call minus that resident size is the call's peak extra memory. Then --warmup
untimed and --iters timed iterations; the median wall time is reported.

Prints ONE line of JSON; where torch is missing or too old for the path, {"error": "..."} and
exit status 0. bench/run-attention runs it, with bench/.venv/bin/python (bench/setup-peer) or
Debian's python3-torch.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time


def emit(obj):
    print(json.dumps(obj), flush=True)


def status_mib(field):
    """A field of /proc/self/status in MiB ("VmRSS": resident now, "VmHWM": the peak)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--T", type=int, default=1024, help="sequence length (default 1024)")
    ap.add_argument("--path", choices=["sdpa", "math"], default="sdpa", help="default sdpa")
    ap.add_argument("--mode", choices=["fwdbwd", "forward", "jvp"], default="fwdbwd", help="default fwdbwd")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed iterations after the first (default 1)")
    ap.add_argument("--iters", type=int, default=5, help="timed iterations (default 5)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--dk", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if min(a.T, a.batch, a.heads, a.dk, a.iters, a.threads) < 1 or a.warmup < 0:
        ap.error("--T, --batch, --heads, --dk, --iters and --threads must be positive, --warmup not negative")

    out = {"impl": "pytorch", "path": a.path, "mode": a.mode, "T": a.T, "shape": [a.batch, a.heads, a.T, a.dk]}
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        emit({**out, "error": f"cannot import torch: {e}"})
        return 0
    out["torch"] = torch.__version__
    if a.path == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
        emit({**out, "error": f"torch {torch.__version__} has no scaled_dot_product_attention"})
        return 0

    torch.set_num_threads(a.threads)
    out["threads"] = torch.get_num_threads()
    gen = torch.Generator().manual_seed(a.seed)
    shape = (a.batch, a.heads, a.T, a.dk)
    q, k, v, dO, dq, dk, dv = (torch.randn(shape, generator=gen) for _ in range(7))
    if a.mode == "fwdbwd":
        for t in (q, k, v):
            t.requires_grad_()
    scale = 1.0 / math.sqrt(a.dk)
    if a.path == "math":
        M = torch.full((a.T, a.T), float("-inf")).triu(1)  # (T, T): -inf where key j > query i

    def attention(q, k, v, M):
        if a.path == "sdpa":
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        scores = (q @ k.transpose(-2, -1)) * scale + M      # (B, H, T, T)
        return torch.softmax(scores, dim=-1) @ v            # (B, H, T, d_k)

    def call(q, k, v, M, dO, dots):
        if a.mode == "forward":
            with torch.no_grad():
                attention(q, k, v, M)
            return "sdpa, no grad" if a.path == "sdpa" else "explicit: matmul, add, softmax, matmul"
        if a.mode == "jvp":
            torch.func.jvp(lambda x, y, z: attention(x, y, z, M), (q, k, v), dots)
            return "torch.func.jvp of " + ("sdpa" if a.path == "sdpa" else "matmul, add, softmax, matmul")
        for t in (q, k, v):
            t.grad = None
        o = attention(q, k, v, M)
        o.backward(dO)
        # the kernel torch picked for sdpa, e.g. ScaledDotProductFlashAttentionForCpuBackward0
        return o.grad_fn.name() if a.path == "sdpa" else "explicit: matmul, add, softmax, matmul"

    def iteration():
        return call(q, k, v, M if a.path == "math" else None, dO, (dq, dk, dv))

    first = lambda t: t[..., :64, :].detach().clone()  # noqa: E731
    small = [first(t).requires_grad_(a.mode == "fwdbwd") for t in (q, k, v)]
    try:
        call(*small, M[:64, :64] if a.path == "math" else None, first(dO), tuple(first(t) for t in (dq, dk, dv)))
    except RuntimeError as e:  # e.g. forward mode through a fused SDPA kernel
        emit({**out, "error": str(e).split("\n")[0]})
        return 0
    del small
    before = status_mib("VmRSS")
    reset = reset_peak_rss()
    t0 = time.perf_counter()
    try:
        out["kernel"] = iteration()
    except RuntimeError as e:  # out of memory at this T, for one
        emit({**out, "error": str(e).split("\n")[0]})
        return 0
    out["first_call_ms"] = (time.perf_counter() - t0) * 1e3
    out["extra_mib"] = status_mib("VmHWM") - before
    out["rss_before_mib"] = before
    out["peak_method"] = ("VmHWM reset by clear_refs before the call, minus VmRSS then" if reset else
                          "VmHWM since the start (clear_refs not writable), minus VmRSS before the call")
    for _ in range(a.warmup):
        iteration()
    ms, cpu = [], []
    for _ in range(a.iters):
        c0, t0 = time.process_time(), time.perf_counter()
        iteration()
        ms.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    out.update({"iters": a.iters, "ms": ms, "ms_median": statistics.median(ms), "ms_min": min(ms),
                "cpu_ms_median": statistics.median(cpu)})
    emit(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
