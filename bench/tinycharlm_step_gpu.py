#!/usr/bin/env python3
"""One TinyCharLM training step in PyTorch eager on the GPU: the peer of bench/bench_gpu_tinycharlm.cpp.

The model is bench/tinycharlm_step.py's TinyCharLM (vocab 64, d 128, 4 heads, 2 blocks, fused qkv
and proj Linear without bias, RoPE on interleaved pairs, causal attention by
F.scaled_dot_product_attention(is_causal=True) where torch has it (>= 2.0), else the explicit
masked-softmax path, tied head), float32, on 'cuda'. One step: logits = model(inputs);
loss = F.cross_entropy; opt.zero_grad(); loss.backward(); opt.step() with
torch.optim.AdamW(lr 1e-3, weight_decay 0) (torch's default implementation for CUDA tensors).
The batch (repeated patterns of 16 to 32 tokens; inputs the first seq-1 tokens, targets the last
seq-1) is made once and lives on the GPU. TF32 is off (handgrad computes in full float32).

Timing as the C++ bench does it: one step whose loss is read, max(--warmup, --steps) untimed steps
with no sync between them, then --rounds rounds of --steps steps, each round between two
torch.cuda.synchronize() calls with no sync inside (the loss is not read in the timed steps);
ms/step is the median over the rounds of round time / steps.

Prints ONE line of JSON: {"ms_per_step", "rounds_ms", "torch", "device", "attention", ...}; where
torch or CUDA in torch is missing, {"error": "..."} and exit status 0. --device cpu runs it on the
CPU (to try it without a GPU on tiny sizes, e.g. /usr/bin/python3 bench/tinycharlm_step_gpu.py
--device cpu --batch 4 --steps 2 --rounds 1).
"""
import argparse
import statistics
import sys
import time

from peer_torch import emit, import_torch  # beside this script




def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seq", type=int, default=64, help="tokens per sequence (inputs are the first seq-1)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--steps", type=int, default=20, help="steps per timed round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="default cuda")
    a = ap.parse_args()
    if min(a.batch, a.steps, a.rounds) < 1 or a.seq < 2 or a.warmup < 0:
        ap.error("--batch, --steps and --rounds must be positive, --seq at least 2, --warmup not negative")

    imported = import_torch(a.device)
    if imported is None:
        return 0
    torch, F = imported
    from tinycharlm_step import TinyCharLM, repeated_batch, training_step  # the CPU peer's, unchanged

    dev = torch.device(a.device)
    torch.manual_seed(a.seed)
    model = TinyCharLM().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    gen = torch.Generator().manual_seed(a.seed)
    x = repeated_batch(gen, a.batch, a.seq, 64, 16, 32)
    inputs, targets = x[:, :-1].contiguous().to(dev), x[:, 1:].contiguous().to(dev)  # (B, seq-1) each

    step = training_step(model, opt, inputs, targets)

    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    first_loss = step().item()
    for _ in range(max(a.warmup, a.steps)):
        step()
    rounds = []
    for _ in range(a.rounds):
        sync()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            loss = step()
        sync()
        rounds.append((time.perf_counter() - t0) * 1e3 / a.steps)
    emit({
        "impl": "pytorch", "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu",
        "attention": "sdpa" if hasattr(F, "scaled_dot_product_attention") else "math",
        "batch": a.batch, "positions": a.seq - 1, "warmup": 1 + max(a.warmup, a.steps), "steps": a.steps,
        "ms_per_step": statistics.median(rounds), "rounds_ms": rounds,
        "first_loss": first_loss, "last_loss": loss.item(),
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
