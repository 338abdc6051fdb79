"""hg.nn.functional: PyTorch's functional names over the library's ops."""

from .. import _C
from .. import _require_tensor

__all__ = ["softmax", "log_softmax", "cross_entropy", "scaled_dot_product_attention", "relu", "tanh", "sigmoid", "silu",
           "attention", "attention_qkv", "attention_trace", "softmax_jacobian", "embedding", "rope", "gelu", "softplus",
           "layer_norm", "rms_norm", "dropout", "one_hot"]


def _hg():
    import handgrad
    return handgrad


def softmax(input, dim):
    """exp(x - max) / sum exp(x - max) along dim; a row of -inf gives zeros."""
    return _C.softmax(input, dim)


def log_softmax(input, dim):
    return _C.log_softmax(input, dim)


def relu(input):
    return _C.relu(input)


def tanh(input):
    return _C.tanh(input)


def sigmoid(input):
    """1 / (1 + e^−x), computed without overflow on either side."""
    return _C.sigmoid(input)


def silu(input):
    """x σ(x), the SiLU (swish) of feed-forward blocks."""
    return _C.silu(input)


def cross_entropy(input, target, ignore_index=-100, reduction="mean"):
    """The cross-entropy of logits against int64 class targets, skipping ignore_index: their mean
    (reduction='mean', the library's fused op), their sum ('sum') or each one ('none', 0 where
    ignored). As in PyTorch the classes are dimension 1: input (N, C) or (N, C, d1, ...), target (N)
    or (N, d1, ...); a 1-D input (C) takes a 0-d target. Every target ignored gives a mean of 0
    (PyTorch: NaN)."""
    _require_tensor(input, "hg.nn.functional.cross_entropy")
    _require_tensor(target, "hg.nn.functional.cross_entropy", "target")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"hg.nn.functional.cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    if input.dim() > 2:  # the library takes the classes last: (N, d1, ..., C)
        input = input.permute(0, *range(2, input.dim()), 1)
    if reduction == "mean":
        return _C.functional.cross_entropy(input, target, ignore_index)
    if target.dtype != _hg().int64:
        raise ValueError(f"hg.nn.functional.cross_entropy: target must be int64 class indices, got {target.dtype}")
    if tuple(target.shape) != tuple(input.shape[:-1]):
        raise ValueError(f"hg.nn.functional.cross_entropy: target {tuple(target.shape)} does not match input "
                         f"{tuple(input.shape)} (classes at dimension 1)")
    # −log p[target] per position, the log-softmax read at each target (gather), 0 where ignored
    keep = target != ignore_index
    picked = _C.log_softmax(input, -1).gather(-1, _hg().where(keep, target, 0).unsqueeze(-1)).squeeze(-1)
    losses = _hg().where(keep, -picked, 0.0)
    return losses if reduction == "none" else losses.sum()


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """softmax(Q Kᵀ · scale + mask) V over the last two dimensions (the library's attention, its
    hand-written backward). attn_mask: boolean (True = may attend) or an additive float mask,
    broadcasting against (..., L, S); is_causal hides keys after the query (top-left aligned);
    scale defaults to 1/sqrt(E). A query that sees no key gets zeros (PyTorch: NaN)."""
    if dropout_p != 0.0:
        raise ValueError("hg.nn.functional.scaled_dot_product_attention: dropout is not implemented; use dropout_p=0")
    return _C.functional.attention(query, key, value, attn_mask, is_causal, scale)


def attention(query, key, value, attn_mask=None, is_causal=False, scale=None, path="automatic"):
    """scaled_dot_product_attention on a chosen path of the library: "automatic" (the library
    picks), "materialized" (S and P kept whole) or "tiled" (FlashAttention-2: tiles of keys, the
    row log-sum-exp kept, P recomputed in the backward). The paths agree to rounding."""
    return _C.functional.attention(query, key, value, attn_mask, is_causal, scale, path)


def attention_qkv(qkv, num_heads, rotate=True, attn_mask=None, is_causal=False, scale=None, path="automatic",
                  base=10000.0):
    """Attention over the heads of a fused projection's output, as one op: qkv (B, T, 3d) holds q,
    k and v side by side, each num_heads heads of d_h = d / num_heads; q and k are rotated by RoPE
    (positions 0..T-1) when ``rotate``; the result is (B, H, T, d_h). The same numbers as cutting
    the heads out, rope on q and k, then attention — but on the CPU, without a mask, the library's
    kernels rotate each head's q and k as they read it and write qkv's gradient straight from the
    backward, so the rotated heads are never made."""
    return _C.functional.attention_qkv(qkv, num_heads, rotate, attn_mask, is_causal, scale, path, base)


def attention_trace(query, key, value, grad_output, attn_mask=None, is_causal=False, scale=None, path="automatic"):
    """Every intermediate of attention's forward and hand-written backward for the output
    gradient ``grad_output``: .S (scores, scaled and masked), .P, .O, .dO, .dP = dO Vᵀ,
    .D = rowsum(P ∘ dP), .dS = P ∘ (dP − D), .dQ, .dK, .dV and .scale, as tensors."""
    return _C.functional.attention_trace(query, key, value, grad_output, attn_mask, is_causal, scale, path)


def softmax_jacobian(p):
    """J = diag(p) − p pᵀ for every row of the weights p (..., n): shape (..., n, n)."""
    return _C.functional.softmax_jacobian(p)


def embedding(input, weight):
    """Rows of ``weight`` (V, d) picked by the int64 indices ``input``: shape input.shape + (d,).
    PyTorch's argument order; the gradient adds into the picked rows."""
    return _C.functional.embedding(weight, input)


def rope(x, start=0, base=10000.0):
    """Rotary position embedding on interleaved pairs of the last dimension of x (..., T, d_h),
    positions start..start+T−1: pair i of position t rotated by t · base^(−2i/d_h)."""
    return _C.functional.rope(x, start, base)


def gelu(input, approximate="none"):
    """x Φ(x) with Φ the standard normal CDF (PyTorch's default); approximate="tanh" is
    0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))), built from the library's ops."""
    if approximate == "none":
        return _C.functional.gelu(input)
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * 0.7978845608028654
        return input * 0.5 * (_C.tanh(inner) + 1.0)
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def softplus(input, beta=1.0, threshold=None):
    """log(1 + e^(βx)) / β, computed without overflow for every x (PyTorch switches to x above
    βx > threshold = 20, which differs from this by less than e^−20 relative; threshold is
    accepted for its signature and not used)."""
    _require_tensor(input, "hg.nn.functional.softplus")
    if beta == 1.0:
        return _C.functional.softplus(input)
    return _C.functional.softplus(input * beta) * (1.0 / beta)


def _normalized_shape(normalized_shape, op):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    try:
        return tuple(int(n) for n in normalized_shape)
    except TypeError:
        raise TypeError(f"{op}: normalized_shape must be an int or a sequence of ints, got {normalized_shape!r}") from None


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x − μ) / √(σ² + eps) ∘ weight + bias, with μ and the biased variance σ² over the trailing
    dims that normalized_shape names; one op whose backward is derived by hand
    (dx = (g − mean(g) − x̂ ∘ mean(g ∘ x̂)) / σ with g = dy ∘ γ)."""
    _require_tensor(input, "hg.nn.functional.layer_norm")
    return _C.functional.layer_norm(input, _normalized_shape(normalized_shape, "layer_norm"), weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / √(mean(x²) + eps) ∘ weight over the trailing dims that normalized_shape names; eps None
    is the machine epsilon of the input's dtype, as PyTorch's."""
    _require_tensor(input, "hg.nn.functional.rms_norm")
    return _C.functional.rms_norm(input, _normalized_shape(normalized_shape, "rms_norm"), weight, eps)


def dropout(input, p=0.5, training=True, inplace=False):
    """Each entry zeroed with probability p and the rest scaled by 1/(1 − p), so the expectation is
    unchanged; the mask is drawn from hg.manual_seed's generator (hg.rand). The input itself when
    not training or at p = 0."""
    _require_tensor(input, "hg.nn.functional.dropout")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be a probability in [0, 1], got {p}")
    if inplace:
        raise NotImplementedError("dropout: inplace=True is not implemented; use the returned tensor")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    from .. import rand
    keep = (rand(*input.shape, dtype=input.dtype, device=input.device) >= p).to(input.dtype)
    return input * keep * (1.0 / (1.0 - p))


def one_hot(tensor, num_classes=-1):
    """int64 indices (...) to int64 rows (..., num_classes) with a 1 at each index; num_classes −1
    is the largest index + 1."""
    _require_tensor(tensor, "hg.nn.functional.one_hot", "tensor")
    from .. import arange, int64
    if tensor.dtype != int64:
        raise TypeError(f"one_hot: the indices must be int64, got {tensor.dtype}")
    values = tensor.numpy() if tensor.device == "cpu" else tensor.cpu().numpy()
    if num_classes == -1:
        num_classes = int(values.max()) + 1 if values.size > 0 else 0
    if values.size > 0 and (values.min() < 0 or values.max() >= num_classes):
        raise ValueError(f"one_hot: every index must lie in [0, {num_classes}); got values from {values.min()} to "
                         f"{values.max()}")
    classes = arange(num_classes).to(tensor.device) if tensor.device != "cpu" else arange(num_classes)
    return (tensor.unsqueeze(-1) == classes).to(int64)
