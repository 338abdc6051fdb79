"""Checkpoints in the safetensors format (nn/checkpoint.h): what safetensors.torch's save_file
writes, handgrad loads, and the other way round."""

from .. import _C

__all__ = ["save", "load", "load_metadata"]


def _tensors_of(obj):
    if hasattr(obj, "named_parameters"):
        return list(obj.named_parameters())
    return list(obj.items())


def save(obj, path, metadata=None):
    """Writes a Module's parameters (or a dict name -> tensor) to path as safetensors, with
    optional string metadata. Tensors on a GPU are downloaded; the bytes are the values exactly."""
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    _C.nn.save_safetensors(str(path), [(str(k), v.detach()) for k, v in _tensors_of(obj)], meta)


def load(path, module=None):
    """Reads a safetensors file into a dict name -> tensor (on the CPU, in the file's order), or,
    given a module, copies the values into its parameters by name (every name, shape and dtype
    must match; the module is left unchanged otherwise) and returns the module."""
    tensors, _ = _C.nn.load_safetensors(str(path))
    values = dict(tensors)
    if module is None:
        return values
    return module.load_state_dict(values)


def load_metadata(path):
    """The file's __metadata__ (a dict of strings; empty when it has none)."""
    return dict(_C.nn.load_safetensors(str(path))[1])
