"""hg.nn.functional.pad, PyTorch's four modes. 'constant' joins hg.full blocks to the input (cat;
a negative amount crops with narrow); 'reflect', 'replicate' and 'circular' read each padded dim
at positions computed on the host (index_select), so every mode's gradient is the recorded ops':
the window of the output's gradient, plus, for the other modes, each copy's gradient added back
where it was read from."""
import operator

import numpy as np

from .. import _C, _args

_OP = "hg.nn.functional.pad"
_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input, pad, mode="constant", value=None):
    """pad(input, pad, mode='constant', value=None): ``pad`` holds (before, after) pairs, the last
    dim's first, as PyTorch's; a negative amount crops. 'constant' fills with value (None: 0) and
    pads any number of trailing dims. 'reflect' mirrors about the edge entry (without repeating it;
    each amount below that dim's size), 'replicate' repeats the edge entry, 'circular' wraps round
    (each amount at most the size left after cropping); these three pad the last 1, 2 or 3 dims of a
    (batch, channels, ...) input or a (channels, ...) one, as PyTorch's."""
    _args.tensor(_OP, input)
    if mode not in _MODES:
        raise ValueError(f"{_OP}: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")
    if not isinstance(pad, (list, tuple)) or any(isinstance(a, bool) or not hasattr(a, "__index__") for a in pad):
        raise TypeError(f"{_OP}: pad must be a tuple or list of ints, got {pad!r}")
    amounts = [operator.index(a) for a in pad]
    if len(amounts) % 2 != 0 or len(amounts) // 2 > input.dim():
        raise ValueError(f"{_OP}: pad must hold one (before, after) pair per padded dimension, at most "
                         f"{input.dim()} pairs for input {tuple(input.shape)}; got {len(amounts)} numbers")
    pairs = [(amounts[2 * i], amounts[2 * i + 1]) for i in range(len(amounts) // 2)]
    if mode == "constant":
        return _constant(input, pairs, value)
    if value not in (None, 0):
        raise ValueError(f"{_OP}: mode={mode!r} takes no fill value, got value={value!r}")
    k = len(pairs)
    if k == 0 or input.dim() not in (k + 1, k + 2):
        raise NotImplementedError(f"{_OP}: mode={mode!r} pads the last 1, 2 or 3 dims of an input with one or two "
                                  f"more dims (batch, channels); got {k} pairs for input {tuple(input.shape)}")
    if mode != "circular":
        _check_sizes(input, k, mode)
    hg = _args.hg()
    output = input
    for i, (before, after) in enumerate(pairs):
        d = input.dim() - 1 - i
        positions = _positions(mode, input.shape[d], before, after, d, input)
        output = hg.index_select(output, d, hg.tensor(positions).to(input.device))
    return output


def _check_sizes(input, k, mode):
    """reflect and replicate: the batch dim (of a k + 2-dim input) may be empty, no other dim."""
    if input.dtype == _C.dtype.bool:
        raise TypeError(f"{_OP}: mode={mode!r} takes a number tensor, not hg.bool (as PyTorch's)")
    first = 1 if input.dim() == k + 2 else 0
    if 0 in tuple(input.shape[first:]):
        raise ValueError(f"{_OP}: mode={mode!r} needs every dim but the batch dim non-empty, got input "
                         f"{tuple(input.shape)}")


def _positions(mode, size, before, after, d, input):
    """Where each entry of the padded dim d is read from in the input: position p of the padded
    axis (p from −before to size + after − 1) reads reflect(p), clamp(p) or the cropped dim's
    entry p mod its size."""
    out = size + before + after
    shape = tuple(input.shape)
    if mode == "circular":
        if before > size or after > size:
            raise ValueError(f"{_OP}: circular padding by ({before}, {after}) of dim {d} of size {size} "
                             f"(input {shape}) wraps round more than once")
        start, kept = max(-before, 0), size - max(-before, 0) - max(-after, 0)
        if out < 0 or max(before, 0) > kept or max(after, 0) > kept:
            raise ValueError(f"{_OP}: circular padding by ({before}, {after}) of dim {d} of size {size} "
                             f"(input {shape}) wraps round the {max(kept, 0)} entries left after cropping more than once")
        return start + np.mod(np.arange(-max(before, 0), kept + max(after, 0)), max(kept, 1))
    if mode == "reflect" and (before >= size or after >= size):
        raise ValueError(f"{_OP}: reflect padding by ({before}, {after}) of dim {d} of size {size} (input {shape}): "
                         "each amount must be below the size")
    if out < 1:
        raise ValueError(f"{_OP}: padding by ({before}, {after}) leaves dim {d} of size {size} (input {shape}) with "
                         f"{out} entries; {mode} padding needs at least one")
    p = np.arange(-before, size + after)
    if mode == "replicate":
        return np.clip(p, 0, size - 1)
    return np.where(p < 0, -p, np.where(p >= size, 2 * (size - 1) - p, p))


def _constant(input, pairs, value):
    fill = 0 if value is None else value
    if isinstance(fill, str) or not isinstance(fill, (int, float)):
        raise TypeError(f"{_OP}: value must be a number, got {value!r}")
    hg = _args.hg()
    output = input
    for i, (before, after) in enumerate(pairs):
        d = input.dim() - 1 - i
        size = output.shape[d]
        start, stop = max(-before, 0), size - max(-after, 0)  # negative amounts crop
        if size + before + after < 0 or stop < start:
            raise ValueError(f"{_OP}: dimension {d} of size {size} padded by ({before}, {after}) would have a negative "
                             "size")
        if start > 0 or stop < size:
            output = output.narrow(d, start, stop - start)
        blocks = []
        for amount in (before, after):
            shape = list(output.shape)
            shape[d] = max(amount, 0)
            blocks.append(hg.full(tuple(shape), fill, dtype=input.dtype, device=input.device))
        output = hg.cat([blocks[0], output, blocks[1]], d)
    return output
