"""hg.save / hg.load, as torch.save / torch.load spell them, for a tensor or a state dict (a dict
str -> tensor), written as safetensors by the C++ library's writer (hg.nn.save underneath): the
bytes are the values exactly, and the file is one any safetensors reader opens. Anything else is
refused: handgrad does not pickle Python objects.

The file's metadata says which it held ("handgrad.format": "tensor" or "dict") and which tensors
required grad ("handgrad.requires_grad", a JSON list of names); a safetensors file from elsewhere
loads as a dict.
"""
import collections.abc
import json
import os
import tempfile

from . import _C
from ._C import Tensor

_ONE = "tensor"  # the entry name of a lone saved tensor


def _entries(obj):
    if isinstance(obj, Tensor):
        return "tensor", [(_ONE, obj)]
    if isinstance(obj, collections.abc.Mapping):
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError(f"hg.save: a state dict's keys must be str, got {k!r}")
            if not isinstance(v, Tensor):
                raise TypeError(f"hg.save: a state dict's values must be tensors, got {type(v).__name__} at {k!r}")
        return "dict", list(obj.items())
    raise TypeError(f"hg.save: saves a tensor or a dict str -> tensor (a state dict, e.g. module.state_dict()) as "
                    f"safetensors; got {type(obj).__name__}; handgrad does not pickle other objects")


def _with_path(f, mode, work):
    """work(path) on f's path, or, for a file object, on a temporary file whose bytes go to or come from f."""
    if isinstance(f, (str, os.PathLike)):
        return work(os.fspath(f))
    if not hasattr(f, "write" if mode == "w" else "read"):
        raise TypeError(f"hg.{'save' if mode == 'w' else 'load'}: f must be a path or a binary file object, got "
                        f"{type(f).__name__}")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "tensors.safetensors")
        if mode == "r":
            with open(path, "wb") as out:
                out.write(f.read())
        result = work(path)
        if mode == "w":
            with open(path, "rb") as written:
                f.write(written.read())
        return result


def save(obj, f):
    """save(obj, f): writes a tensor or a state dict (dict str -> tensor) to f (a path or a binary
    file object) as safetensors (torch.save). Values are detached (a GPU tensor is downloaded);
    which tensors required grad is kept, as torch.save keeps it."""
    kind, entries = _entries(obj)
    meta = {"handgrad.format": kind,
            "handgrad.requires_grad": json.dumps([k for k, v in entries if v.requires_grad])}
    _with_path(f, "w", lambda path: _C.nn.save_safetensors(path, [(k, v.detach()) for k, v in entries], meta))


def load(f, map_location=None, weights_only=True):
    """load(f, map_location=None): what hg.save wrote to f (a path or a binary file object): the
    tensor, or the dict str -> tensor, in the file's order (torch.load). map_location ('cpu',
    'cuda', an hg.device) puts the tensors there; they are read onto the CPU otherwise. Any other
    safetensors file loads as a dict. weights_only is accepted: handgrad only ever reads tensors."""
    if map_location is not None and not isinstance(map_location, str):
        raise TypeError(f"hg.load: map_location must be a device ('cpu', 'cuda', an hg.device) or None, got "
                        f"{map_location!r}")
    tensors, meta = _with_path(f, "r", _C.nn.load_safetensors)
    meta = dict(meta)
    wants_grad = set(json.loads(meta.get("handgrad.requires_grad", "[]")))
    values = {}
    for k, v in tensors:
        if map_location is not None and map_location != "cpu":
            v = v.to(map_location)
        values[k] = v.requires_grad_() if k in wants_grad else v
    if meta.get("handgrad.format") == "tensor":
        return values[_ONE]
    return values


__all__ = ["save", "load"]
