"""hg.nn.functional: PyTorch's functional names over the library's ops."""

from .. import _C

__all__ = ["softmax", "log_softmax", "cross_entropy", "scaled_dot_product_attention", "relu", "tanh"]


def softmax(input, dim):
    """exp(x - max) / sum exp(x - max) along dim; a row of -inf gives zeros."""
    return _C.softmax(input, dim)


def log_softmax(input, dim):
    return _C.log_softmax(input, dim)


def relu(input):
    return _C.relu(input)


def tanh(input):
    return _C.tanh(input)


def cross_entropy(input, target, ignore_index=-100, reduction="mean"):
    """The mean cross-entropy of logits against int64 class targets, skipping ignore_index.
    As in PyTorch the classes are dimension 1: input (N, C) or (N, C, d1, ...), target (N) or
    (N, d1, ...); a 1-D input (C) takes a 0-d target. Every target ignored gives 0 (PyTorch: NaN)."""
    if reduction != "mean":
        raise NotImplementedError("hg.nn.functional.cross_entropy: only reduction='mean' is implemented")
    if input.dim() > 2:  # the library takes the classes last: (N, d1, ..., C)
        input = input.permute(0, *range(2, input.dim()), 1)
    return _C.functional.cross_entropy(input, target, ignore_index)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """softmax(Q Kᵀ · scale + mask) V over the last two dimensions (the library's attention, its
    hand-written backward). attn_mask: boolean (True = may attend) or an additive float mask,
    broadcasting against (..., L, S); is_causal hides keys after the query (top-left aligned);
    scale defaults to 1/sqrt(E). A query that sees no key gets zeros (PyTorch: NaN)."""
    if dropout_p != 0.0:
        raise NotImplementedError("hg.nn.functional.scaled_dot_product_attention: dropout is not implemented")
    return _C.functional.attention(query, key, value, attn_mask, is_causal, scale)
