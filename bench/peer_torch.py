"""bench/peer_torch.py — what the GPU peers (attention_gpu.py, tinycharlm_step_gpu.py) share: their
one line of JSON, and importing torch where they may find none (or one without CUDA), in which case
they say why in that line and exit 0 (bench/gpu_bench_util.h's peer protocol)."""

import json


def emit(obj):
    """The peer's answer: one line of JSON on stdout."""
    print(json.dumps(obj), flush=True)


def import_torch(device):
    """(torch, torch.nn.functional) ready for `device`, or None after emitting why the peer cannot run."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        emit({"error": f"cannot import torch: {e}"})
        return None
    if device == "cuda" and not torch.cuda.is_available():
        emit({"error": f"torch {torch.__version__}: torch.cuda.is_available() is False"})
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch, F
