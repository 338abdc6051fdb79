#!/usr/bin/python3
"""One training step of the attention-only TinyCharLM in PyTorch: the peer of bench_tinycharlm.

The model of "What Attention Computes" (d2l.TinyCharLM semantics): token embedding, blocks of a
fused qkv Linear(d, 3d, bias=False) and a proj Linear(d, d, bias=False), heads by view/transpose,
RoPE on interleaved pairs of q and k, causal attention, output added to the residual stream, no
feed-forward network, no normalisation, tied head (logits = H Eᵀ). The step: forward,
cross-entropy (mean), zero_grad, backward, AdamW(lr 1e-3, weight_decay 0).

Causal attention is F.scaled_dot_product_attention(is_causal=True) where torch has it (>= 2.0),
else the explicit path (q kᵀ / sqrt(d_h), the causal mask by masked_fill with -inf, softmax, @ v);
--attention explicit takes the explicit path under any torch. bench/run-tinycharlm runs it beside
the C++ bench with the same thread count, with bench/.venv/bin/python (PyTorch 2.x from PyPI,
bench/setup-peer) or Debian's python3-torch (/usr/bin/python3). Prints one line of JSON with ms/step
and the step's FLOP count from the shapes (flop_per_step, counted as bench_tinycharlm counts it).
--d, --heads, --blocks, --batch, --seq change the shape (bench/run-scaling runs a table of them).
The model and the batch work on any device (bench/tinycharlm_step_gpu.py, the GPU peer, imports
them from here).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def rope(x, base=10000.0):
    """Rotate interleaved pairs (x_2i, x_2i+1) of x (B, H, T, d_h) by t · base^(-2i/d_h)."""
    T, dh = x.shape[-2], x.shape[-1]
    inv = base ** (-torch.arange(0, dh, 2, dtype=torch.float64, device=x.device) / dh)   # (d_h/2,)
    ang = torch.arange(T, dtype=torch.float64, device=x.device)[:, None] * inv[None, :]  # (T, d_h/2)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


def attention_path(choice="auto"):
    """"sdpa" or "explicit": auto is sdpa where torch has it (>= 2.0)."""
    if choice == "auto":
        return "sdpa" if hasattr(F, "scaled_dot_product_attention") else "explicit"
    if choice == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
        raise SystemExit(f"torch {torch.__version__} has no scaled_dot_product_attention (--attention explicit)")
    return choice


def causal_attention(q, k, v, path="auto"):
    """softmax(q kᵀ / sqrt(d_h) with keys j > i hidden) v; q, k, v (B, H, T, d_h)."""
    if attention_path(path) == "sdpa":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    T = q.shape[-2]
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    return torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1) @ v


class TinyCharLM(nn.Module):
    def __init__(self, vocab=64, d=128, heads=4, blocks=2, table=False, attention="auto"):
        super().__init__()
        self.heads, self.table, self.attention = heads, table, attention_path(attention)
        self.token_emb = nn.Embedding(vocab, d)
        nn.init.normal_(self.token_emb.weight, std=0.02)
        self.blks = nn.ModuleList(
            nn.ModuleDict({"qkv": nn.Linear(d, 3 * d, bias=False), "proj": nn.Linear(d, d, bias=False)})
            for _ in range(blocks))

    def forward(self, tokens):
        h = self.token_emb(tokens)                                   # (B, T, d) residual stream
        B, T, d = h.shape
        for i, blk in enumerate(self.blks):
            if i == 0 and self.table:  # (E W_qkvᵀ)[x]: the same rows as E[x] W_qkvᵀ, from a (V, 3d) table
                qkv = F.embedding(tokens, blk["qkv"](self.token_emb.weight))
            else:
                qkv = blk["qkv"](h)                                  # (B, T, 3d)
            q, k, v = qkv.split(d, dim=-1)                           # (B, T, d) each
            q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))  # (B, H, T, d_h)
            o = causal_attention(rope(q), rope(k), v, self.attention)  # (B, H, T, d_h)
            h = h + blk["proj"](o.transpose(1, 2).reshape(B, T, d))
        return h @ self.token_emb.weight.T                           # (B, T, V) tied head


def flop_per_step(B, T, d, heads, blocks, vocab):
    """The step's floating-point operations from the shapes, as bench_tinycharlm.cpp counts them.

    For B sequences of T input positions, N = B·T rows, d_h = d / heads. Forward, per block: the
    qkv projection 2·N·d·3d, the output projection 2·N·d·d, attention's q kᵀ and P v 2·(B·H)·T·T·d_h
    each (the full T×T); plus the tied head 2·N·d·V. Backward computes two products the size of
    each, so the step is 3 × the forward. Elementwise work is left out. Default shape: 8.30e9.
    One count for both programs, so that GFLOP/s compare as ms/step do, though sdpa's kernels may
    skip the masked half of T×T.
    """
    N, d_h = B * T, d // heads
    per_block = 2 * N * d * 3 * d + 2 * N * d * d + 2 * (2 * B * heads * T * T * d_h)
    return 3 * (blocks * per_block + 2 * N * d * vocab)


def repeated_batch(gen, batch, T, vocab, Lmin, Lmax):
    L = torch.randint(Lmin, Lmax + 1, (batch,), generator=gen)
    s = torch.randint(0, vocab, (batch, T), generator=gen)
    return torch.gather(s, 1, torch.arange(T)[None, :] % L[:, None])


def training_step(model, opt, inputs, targets):
    """One training step as a function: forward, mean next-token cross-entropy, backward, the
    optimizer's update; it returns the loss (a tensor: reading it waits for the device)."""
    def step():
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seq", type=int, default=64, help="tokens per sequence (inputs are the first seq-1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--d", type=int, default=128, help="model width")
    ap.add_argument("--heads", type=int, default=4, help="attention heads (d / heads must be even for RoPE)")
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--table", action="store_true",
                    help="compute block 0's qkv as a (V, 3d) table looked up by token (see bench/RESULTS.md)")
    ap.add_argument("--attention", choices=["auto", "sdpa", "explicit"], default="auto",
                    help="causal attention by F.scaled_dot_product_attention or the explicit softmax path "
                         "(auto, the default: sdpa where torch has it)")
    a = ap.parse_args()
    for name in ("batch", "d", "heads", "blocks", "steps"):
        if getattr(a, name) < 1:
            ap.error(f"--{name} must be at least 1, got {getattr(a, name)}")
    if a.warmup < 0:
        ap.error(f"--warmup must be at least 0, got {a.warmup}")
    if a.seq < 2:
        ap.error(f"--seq is tokens per sequence and must be at least 2 (one input position and its target), got {a.seq}")
    if a.d % a.heads:
        ap.error(f"--d {a.d} is not divisible by --heads {a.heads}: each head takes d / heads dimensions")
    if (a.d // a.heads) % 2:
        ap.error(f"d / heads = {a.d} / {a.heads} = {a.d // a.heads} must be even: RoPE rotates pairs of each "
                 "head's dimensions")

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    vocab = 64
    model = TinyCharLM(vocab=vocab, d=a.d, heads=a.heads, blocks=a.blocks, table=a.table, attention=a.attention)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    gen = torch.Generator().manual_seed(a.seed)
    x = repeated_batch(gen, a.batch, a.seq, vocab, 16, 32)
    inputs, targets = x[:, :-1].contiguous(), x[:, 1:].contiguous()  # (B, seq - 1) each

    step = training_step(model, opt, inputs, targets)

    losses, times = [], []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        losses.append(step().item())
        if i >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    gflop = flop_per_step(a.batch, a.seq - 1, a.d, a.heads, a.blocks, vocab) * 1e-9
    print(json.dumps({
        "impl": "pytorch", "table": a.table, "attention": model.attention, "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "batch": a.batch, "positions": a.seq - 1, "steps": a.steps,
        "ms_per_step_median": statistics.median(times), "ms_per_step_mean": statistics.fmean(times),
        "ms_per_step_min": min(times), "first_loss": losses[0], "last_loss": losses[-1],
        "d": a.d, "heads": a.heads, "blocks": a.blocks, "gflop_per_step": round(gflop, 4),
        "gflops": round(gflop / (statistics.median(times) * 1e-3), 2),
    }))


if __name__ == "__main__":
    sys.exit(main())
