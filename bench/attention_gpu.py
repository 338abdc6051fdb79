#!/usr/bin/env python3
"""Causal attention forward + backward in PyTorch: the peer of bench/bench_gpu_attention.cpp.

q, k, v of shape (B, H, T, d_k), float32, B·H split as H = gcd(B·H, 8), B = B·H / H (as the C++
bench does); one iteration is o = attention(q, k, v, causal); o.backward(dO) with a fixed random
dO, the leaves' gradients dropped between iterations. Attention is
torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True) when torch has it
(>= 2.0), else the explicit math path (scores = q kᵀ · scale, masked_fill of the causal mask with
-inf, softmax, @ v). TF32 is turned off for matmuls, as handgrad computes in full float32.
On CUDA each iteration is timed between torch.cuda.synchronize() calls; the median is reported.

Prints ONE line of JSON: {"T", "ms", "path", "torch", "device", ...}; where torch or CUDA is
missing, {"error": "..."} and exit status 0. --device cpu runs it on the CPU (for testing on tiny
sizes, e.g. with Debian's python3-torch: /usr/bin/python3 bench/attention_gpu.py --device cpu
--T 64 --bh 2).
"""
import argparse
import math
import statistics
import sys
import time

from peer_torch import emit, import_torch  # beside this script




def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--T", type=int, default=1024, help="sequence length (default 1024)")
    ap.add_argument("--bh", type=int, default=32, help="B·H, batch times heads (default 32)")
    ap.add_argument("--dk", type=int, default=64, help="head dimension d_k (default 64)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed iterations first (default 3)")
    ap.add_argument("--iters", type=int, default=10, help="timed iterations (default 10)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="default cuda")
    ap.add_argument("--path", choices=["auto", "sdpa", "math"], default="auto",
                    help="sdpa when torch has it (auto, the default), or the math path")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if min(a.T, a.bh, a.dk, a.iters) < 1 or a.warmup < 0:
        ap.error("--T, --bh, --dk and --iters must be positive, --warmup not negative")

    imported = import_torch(a.device)
    if imported is None:
        return 0
    torch, F = imported
    has_sdpa = hasattr(F, "scaled_dot_product_attention")
    path = ("sdpa" if has_sdpa else "math") if a.path == "auto" else a.path
    if path == "sdpa" and not has_sdpa:
        emit({"error": f"torch {torch.__version__} has no scaled_dot_product_attention"})
        return 0

    dev = torch.device(a.device)
    H = math.gcd(a.bh, 8)
    shape = (a.bh // H, H, a.T, a.dk)
    gen = torch.Generator().manual_seed(a.seed)
    q, k, v, dO = (torch.randn(shape, generator=gen).to(dev) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_()
    scale = 1.0 / math.sqrt(a.dk)
    hidden = torch.ones(a.T, a.T, dtype=torch.bool, device=dev).triu(1)  # key j > query i

    def attention(q, k, v):
        if path == "sdpa":
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        scores = (q @ k.transpose(-2, -1)) * scale            # (B, H, T, T)
        weights = scores.masked_fill(hidden, float("-inf")).softmax(dim=-1)
        return weights @ v                                    # (B, H, T, d_k)

    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    ms = []
    for i in range(a.warmup + a.iters):
        for t in (q, k, v):
            t.grad = None
        sync()
        t0 = time.perf_counter()
        o = attention(q, k, v)
        o.backward(dO)
        sync()
        if i >= a.warmup:
            ms.append((time.perf_counter() - t0) * 1e3)

    emit({"T": a.T, "bh": a.bh, "dk": a.dk, "ms": statistics.median(ms), "iters": a.iters, "path": path,
          "torch": torch.__version__,
          "device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
