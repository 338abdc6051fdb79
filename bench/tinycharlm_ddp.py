#!/usr/bin/python3
"""The TinyCharLM training step under PyTorch's DistributedDataParallel (gloo, CPU): the peer of
`mpirun -np N bench_tinycharlm`.

The model, batch and step of bench/tinycharlm_step.py (imported from it): N processes on this
machine (torch.multiprocessing), each with --threads intra-op threads, each running forward and
backward on its B/N rows of the global batch of B; DDP averages the gradients (gloo all-reduce,
bucketed and overlapped with the backward) and every rank takes the AdamW step. Rank 0 prints
one line of JSON with ms/step (the median of the timed steps; each step ends with the loss read,
which waits for the step). bench/run-data-parallel runs it.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tinycharlm_step import TinyCharLM, repeated_batch  # noqa: E402


def run(rank, a, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model = DDP(TinyCharLM(attention=a.attention))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    gen = torch.Generator().manual_seed(a.seed)
    x = repeated_batch(gen, a.batch, a.seq, 64, 16, 32)  # the global batch, the same on every rank
    per = a.batch // a.ranks
    x = x[rank * per:(rank + 1) * per]
    inputs, targets = x[:, :-1].contiguous(), x[:, 1:].contiguous()

    losses, times = [], []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if i >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    if rank == 0:
        print(json.dumps({
            "impl": "pytorch-ddp", "backend": "gloo", "torch": torch.__version__, "ranks": a.ranks,
            "threads": torch.get_num_threads(), "batch": a.batch, "positions": a.seq - 1, "steps": a.steps,
            "ms_per_step_median": statistics.median(times), "ms_per_step_min": min(times),
            "first_loss": losses[0], "last_loss": losses[-1],
        }), flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=128, help="the global batch, split across the ranks")
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--attention", choices=["auto", "sdpa", "explicit"], default="auto")
    ap.add_argument("--port", type=int, default=29517)
    a = ap.parse_args()
    if a.ranks < 1 or a.batch % a.ranks:
        ap.error(f"--batch {a.batch} does not split across {a.ranks} ranks")
    mp.spawn(run, args=(a, a.port), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    sys.exit(main())
