#!/usr/bin/env python3
"""One TinyCharLM training step driven from Python with handgrad: the peer of bench_tinycharlm.

The same step as bench/bench_tinycharlm.cpp, line for line, through `import handgrad as hg`:
vocab 64, d 128, 4 heads, 2 blocks, RoPE, no bias, tied head; one fixed batch of 128 sequences of
63 input positions (hg.nn.repeated_batch, patterns of 16..32), float32; forward, cross-entropy
(mean), zero_grad, backward, AdamW (lr 1e-3, weight decay 0). bench/run-python runs it beside the
C++ bench, alternating, with the same thread count. Prints one line of JSON: the median ms/step
over --steps timed steps after --warmup untimed ones, and the losses (the C++ bench's, bit for bit,
from the same seed).
"""
import argparse
import json
import statistics
import time

import handgrad as hg
import handgrad.nn.functional as F


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seq", type=int, default=64, help="tokens per sequence: seq - 1 input positions")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--phases", action="store_true",
                    help="also the median ms of forward, loss, zero_grad, backward and optimizer (bench_tinycharlm --phases)")
    args = ap.parse_args()

    gen = hg.Generator(args.seed)
    model = hg.nn.TinyCharLM(64, num_hiddens=128, num_heads=4, num_blks=2, pos="rope", bias=False, generator=gen)
    opt = hg.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    tokens, _ = hg.nn.repeated_batch(args.batch, args.seq, 64, 16, 32, generator=gen)
    inputs = tokens[:, : args.seq - 1].contiguous()
    targets = tokens[:, 1:].contiguous()

    ms, losses = [], []
    phases = {"forward": [], "loss": [], "zero_grad": [], "backward": [], "optimizer": []}
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        logits = model(inputs)
        t1 = time.perf_counter()
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        t2 = time.perf_counter()
        opt.zero_grad()
        t3 = time.perf_counter()
        loss.backward()
        t4 = time.perf_counter()
        opt.step()
        t5 = time.perf_counter()
        losses.append(loss.item())
        if i >= args.warmup:
            ms.append((t5 - t0) * 1e3)
            for name, a, b in zip(phases, (t0, t1, t2, t3, t4), (t1, t2, t3, t4, t5)):
                phases[name].append((b - a) * 1e3)
    out = {"ms_per_step": statistics.median(ms), "min": min(ms), "max": max(ms), "losses": losses}
    if args.phases:
        out["phases_ms_median"] = {k: statistics.median(v) for k, v in phases.items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
