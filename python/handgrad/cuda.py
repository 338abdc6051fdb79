"""hg.cuda: whether a GPU is there, as torch.cuda spells it. handgrad drives at most one GPU
(cuda:0), through the CUDA backend when the build has one (cuda/)."""

from . import _C


def is_available():
    """True when this build has the CUDA backend and the machine a GPU it can use
    (torch.cuda.is_available)."""
    return _C.cuda_is_available()


def device_count():
    """The number of GPUs handgrad can use (torch.cuda.device_count): 1 when hg.cuda.is_available(),
    else 0; handgrad drives one GPU, cuda:0."""
    return 1 if _C.cuda_is_available() else 0


def current_device():
    """The index of the GPU handgrad uses, 0 (torch.cuda.current_device); an hg.Error without one."""
    if not _C.cuda_is_available():
        raise _C.Error("hg.cuda.current_device: no GPU: this build has no CUDA backend or the machine no GPU "
                       "(hg.cuda.is_available() is False)")
    return 0


__all__ = ["is_available", "device_count", "current_device"]
