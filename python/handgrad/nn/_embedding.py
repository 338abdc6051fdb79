"""hg.nn.functional.embedding with PyTorch's keyword arguments: the library's lookup op, with
padding_idx (no gradient into that row), max_norm (the looked-up rows renormalised in place) and
scale_grad_by_freq (each row's gradient divided by how often the batch picks it)."""
import numbers

import numpy as np

from .. import _C, _args
from .._args import dtype_name

_OP = "hg.nn.functional.embedding"


def _padding_row(padding_idx, rows):
    """padding_idx as a row number in [0, rows), PyTorch's wrapping of a negative one."""
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, numbers.Integral):
        raise TypeError(f"{_OP}: padding_idx must be an int or None, got {padding_idx!r}")
    if not -rows <= padding_idx < rows:
        raise ValueError(f"{_OP}: padding_idx {padding_idx} must be a row of weight, in [{-rows}, {rows - 1}] for "
                         f"{rows} rows")
    return int(padding_idx) % rows


def _renorm_(weight, input, max_norm, norm_type):
    """PyTorch's embedding_renorm_: each distinct row that input picks whose norm_type-norm exceeds
    max_norm is scaled, in place and unrecorded, by max_norm / (norm + 1e-7)."""
    hg = _args.hg()
    for name, v in (("max_norm", max_norm), ("norm_type", norm_type)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{_OP}: {name} must be a number, got {v!r}")
    ids = input.detach().cpu().numpy() if input.device != "cpu" else input.detach().numpy()
    rows = np.unique(ids)
    if rows.size == 0:
        return
    if rows.min() < 0 or rows.max() >= weight.shape[0]:
        return  # out of range: the lookup below refuses it
    with hg.no_grad():
        picked = hg.tensor(rows).to(weight.device) if weight.device != "cpu" else hg.tensor(rows)
        norms = hg.linalg.vector_norm(weight[picked], float(norm_type), -1)
        norms = norms.cpu().numpy() if norms.device != "cpu" else norms.numpy()
        over = norms.astype(np.float64) > max_norm
        if not over.any():
            return
        # the scale in float64, then in the weight's dtype, as PyTorch's `row *= scale`
        scale = max_norm / (norms[over].astype(np.float64) + 1e-7)
        chosen = picked[hg.tensor(np.flatnonzero(over)).to(picked.device)]
        factor = hg.tensor(scale, dtype=weight.dtype).to(weight.device).unsqueeze(-1)
        weight[chosen] = weight[chosen] * factor


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` (V, d) picked by the int64 indices ``input``: shape input.shape + (d,);
    the gradient adds into the picked rows. PyTorch's arguments:

    - padding_idx: a row (negative counts from the end) that receives no gradient; its values are
      still looked up as they are.
    - max_norm: before the lookup, each row that input picks whose norm_type-norm exceeds max_norm
      is scaled to max_norm / (norm + 1e-7) of itself, in weight itself (in place, unrecorded),
      as PyTorch does.
    - scale_grad_by_freq: the gradient into each row is divided by the number of times input picks
      that row. This and padding_idx change the gradient on purpose (it is then no longer the
      derivative); the forward stays the plain lookup.
    - sparse: False only; handgrad's gradients are dense."""
    _args.tensor(_OP, input)
    _args.tensor(_OP, weight, "weight")
    if sparse:
        raise ValueError(f"{_OP}: sparse=True (a sparse gradient for weight) is not implemented, handgrad's "
                         "gradients are dense; use sparse=False")
    if input.dtype != _args.hg().int64:
        raise TypeError(f"{_OP}: input must be int64 row indices, got {dtype_name(input.dtype)}; convert with "
                        ".to(hg.int64)")
    if weight.dim() != 2:
        raise ValueError(f"{_OP}: weight must be 2-D (num_embeddings, embedding_dim), got {tuple(weight.shape)}")
    if padding_idx is not None:
        padding_idx = _padding_row(padding_idx, weight.shape[0])
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    out = _C.functional.embedding(weight, input)
    if not out.requires_grad:
        return out
    hg = _args.hg()
    if padding_idx is not None:  # the positions that read the padding row pass no gradient
        out = hg.where((input == padding_idx).unsqueeze(-1), out.detach(), out)
    if scale_grad_by_freq:
        flat = input.reshape(-1)
        counts = hg.zeros(weight.shape[0], dtype=weight.dtype, device=weight.device)
        counts = counts.index_add(0, flat, hg.ones(flat.shape[0], dtype=weight.dtype, device=weight.device))
        per_position = (1.0 / counts[input]).unsqueeze(-1)
        out.register_hook(lambda grad: grad * per_position)
    return out
