"""hg.nn.functional.scaled_dot_product_attention, PyTorch's signature: the library's fused attention
op wherever it applies (no dropout), grouped-query attention by repeating the key and value heads,
and dropout on the attention weights composed from recorded ops."""
import math
import numbers

import numpy as np

from .. import _C, _args
from .._args import dtype_name

_OP = "hg.nn.functional.scaled_dot_product_attention"


def _repeat_heads(query, key, value):
    """key and value with their heads (dimension −3) repeated, each in place, to the query's
    (PyTorch's enable_gqa rule: the key and value head counts must divide the query's)."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.dim() < 3:
            raise IndexError(f"{_OP}: enable_gqa=True reads the heads at dimension -3, but {name} "
                             f"{tuple(t.shape)} has {t.dim()} dimensions; give (..., heads, length, features)")
    heads, k_heads, v_heads = query.shape[-3], key.shape[-3], value.shape[-3]
    if heads == k_heads == v_heads:
        return key, value
    if k_heads == 0 or v_heads == 0 or heads % k_heads or heads % v_heads:
        raise ValueError(f"{_OP}: with enable_gqa=True the number of heads in key ({k_heads}) and value ({v_heads}) "
                         f"must divide the number of heads in query ({heads}); query {tuple(query.shape)}, key "
                         f"{tuple(key.shape)}, value {tuple(value.shape)}")
    if heads != k_heads:
        key = key.repeat_interleave(heads // k_heads, -3)
    if heads != v_heads:
        value = value.repeat_interleave(heads // v_heads, -3)
    return key, value


def _check(query, key, value, attn_mask, scale):
    """The shapes and dtypes the composed path needs, refused as the fused op would; the scale."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.dim() < 2:
            raise ValueError(f"{_OP}: {name} {tuple(t.shape)} must have at least 2 dimensions (..., length, "
                             "features)")
        if t.dtype not in (_args.hg().float32, _args.hg().float64) or t.dtype != query.dtype:
            raise TypeError(f"{_OP}: query, key and value must be float tensors of one dtype, got "
                            f"{dtype_name(query.dtype)}, {dtype_name(key.dtype)} and {dtype_name(value.dtype)}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(f"{_OP}: query {tuple(query.shape)}, key {tuple(key.shape)} and value "
                         f"{tuple(value.shape)} do not fit: query and key need the same features (last size), key and "
                         "value the same length (second to last)")
    try:
        batch = np.broadcast_shapes(*(tuple(t.shape[:-2]) for t in (query, key, value)))
    except ValueError:
        raise ValueError(f"{_OP}: the batch dimensions of query {tuple(query.shape)}, key {tuple(key.shape)} and "
                         f"value {tuple(value.shape)} do not broadcast") from None
    if attn_mask is not None:
        _args.tensor(_OP, attn_mask, "attn_mask")
        if attn_mask.dtype != _args.hg().bool and attn_mask.dtype != query.dtype:
            raise TypeError(f"{_OP}: attn_mask must be boolean (True = may attend) or additive with the query's "
                            f"dtype {dtype_name(query.dtype)}, got {dtype_name(attn_mask.dtype)}; convert it with "
                            ".to(dtype)")
        scores = tuple(batch) + (query.shape[-2], key.shape[-2])
        try:
            if np.broadcast_shapes(tuple(attn_mask.shape), scores) != scores:
                raise ValueError
        except ValueError:
            raise ValueError(f"{_OP}: attn_mask {tuple(attn_mask.shape)} does not broadcast to the scores "
                             f"{scores} (..., query length, key length)") from None
    if scale is None:
        if query.shape[-1] == 0:
            raise ValueError(f"{_OP}: query {tuple(query.shape)} has 0 features, so the default scale "
                             "1/sqrt(features) is undefined; give scale=")
        return 1.0 / math.sqrt(query.shape[-1])
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"{_OP}: scale must be a number or None, got {scale!r}")
    return float(scale)


def _with_dropout(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """softmax(Q Kᵀ · scale + mask), dropped out, times V: recorded ops (the tape differentiates
    them). A masked score is −inf, so a query that sees no key has weights 0 (the fused op's rule)."""
    hg = _args.hg()
    from .functional import dropout
    scale = _check(query, key, value, attn_mask, scale)
    scores = (query @ key.transpose(-2, -1)) * scale
    length, keys = query.shape[-2], key.shape[-2]
    if is_causal:  # top-left aligned: query i sees keys 0..i
        scores = hg.where(hg.ones(length, keys, dtype=hg.bool, device=query.device).tril(), scores, -math.inf)
    if attn_mask is not None:
        scores = hg.where(attn_mask, scores, -math.inf) if attn_mask.dtype == hg.bool else scores + attn_mask
    weights = dropout(_C.softmax(scores, -1), dropout_p, training=True)
    return weights @ value


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(Q Kᵀ · scale + mask) V over the last two dimensions, PyTorch's signature:
    query (..., L, E), key (..., S, E), value (..., S, Ev), batch dimensions broadcasting; the
    result is (..., L, Ev).

    - attn_mask: boolean (True = may attend) or an additive float mask of the query's dtype,
      broadcasting against (..., L, S).
    - is_causal: query i sees keys 0..i (aligned at the top left, as PyTorch's). With attn_mask as
      well, both apply (PyTorch refuses the pair).
    - scale: multiplies Q Kᵀ; None is 1/sqrt(E).
    - dropout_p: each attention weight is zeroed with probability dropout_p and the rest scaled by
      1/(1 − dropout_p), drawn from hg.manual_seed's generator (so only the distribution matches
      PyTorch's draws). As in PyTorch, dropout always applies: pass dropout_p=0.0 outside training.
    - enable_gqa: grouped-query attention, the key and value heads (dimension −3) each repeated to
      the query's number of heads, which theirs must divide.

    A query that sees no key gets zeros, as PyTorch's. Without dropout it is the library's fused op
    (hg.nn.functional.attention, its hand-written backward); with dropout, a composition of recorded
    ops."""
    _args.tensor(_OP, query, "query")
    _args.tensor(_OP, key, "key")
    _args.tensor(_OP, value, "value")
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real) or not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{_OP}: dropout_p must be a probability in [0, 1], got {dropout_p!r}")
    if enable_gqa:
        key, value = _repeat_heads(query, key, value)
    if dropout_p == 0.0:
        return _C.functional.attention(query, key, value, attn_mask, is_causal, scale)
    return _with_dropout(query, key, value, attn_mask, dropout_p, is_causal, scale)
