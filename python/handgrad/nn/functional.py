"""hg.nn.functional: PyTorch's functional names over the library's ops."""
import numbers as _numbers

from .. import _C, _args, _forms

__all__ = ["softmax", "log_softmax", "cross_entropy", "scaled_dot_product_attention", "relu", "tanh", "sigmoid", "silu",
           "attention", "attention_qkv", "attention_trace", "softmax_jacobian", "embedding", "rope", "gelu", "softplus",
           "layer_norm", "rms_norm", "dropout", "one_hot", "linear", "elu", "celu", "selu", "leaky_relu", "hardtanh",
           "relu6", "softsign", "logsigmoid", "mish", "normalize", "cosine_similarity", "pad", "mse_loss", "l1_loss",
           "smooth_l1_loss", "huber_loss", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "kl_div", "softmin", "glu", "hardswish", "hardsigmoid", "threshold"]


def _implicit_dim(op, input, dim, stacklevel):
    """PyTorch's deprecated choice when dim is None: 0 for a 0-, 1- or 3-d input, else 1."""
    if dim is not None:
        return dim
    import warnings
    warnings.warn(f"hg.nn.functional.{op}: the implicit dim is deprecated, as in PyTorch; give dim=",
                  DeprecationWarning, stacklevel=stacklevel)
    return 0 if input.dim() in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x - max) / sum exp(x - max) along dim, x cast to dtype first when given; a row of -inf
    gives zeros (PyTorch: NaN)."""
    _args.tensor("hg.nn.functional.softmax", input)
    return _forms.softmax(input, _implicit_dim("softmax", input, dim, _stacklevel), dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - max - log sum exp(x - max) along dim, x cast to dtype first when given."""
    _args.tensor("hg.nn.functional.log_softmax", input)
    return _forms.log_softmax(input, _implicit_dim("log_softmax", input, dim, _stacklevel), dtype)


def relu(input):
    """max(x, 0), with gradient 0 at x = 0 (PyTorch's choice)."""
    return _C.relu(input)


def tanh(input):
    """The hyperbolic tangent (eˣ − e⁻ˣ) / (eˣ + e⁻ˣ)."""
    return _C.tanh(input)


def sigmoid(input):
    """1 / (1 + e^−x), computed without overflow on either side."""
    return _C.sigmoid(input)


def silu(input):
    """x σ(x), the SiLU (swish) of feed-forward blocks."""
    return _C.silu(input)


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


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + e^(βx)) / β, computed without overflow, and x itself where βx > threshold (PyTorch's
    rule: the gradient there is 1)."""
    _args.tensor("hg.nn.functional.softplus", input)
    for name, v in (("beta", beta), ("threshold", threshold)):
        if isinstance(v, bool) or not isinstance(v, _numbers.Real):
            raise TypeError(f"hg.nn.functional.softplus: {name} must be a number, got {v!r}")
    scaled = input if beta == 1 else input * beta
    smooth = _C.functional.softplus(scaled) if beta == 1 else _C.functional.softplus(scaled) / beta
    from .. import where
    return where(scaled > threshold, input, smooth)


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
    _args.tensor("hg.nn.functional.layer_norm", input)
    return _C.functional.layer_norm(input, _normalized_shape(normalized_shape, "layer_norm"), weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / √(mean(x²) + eps) ∘ weight over the trailing dims that normalized_shape names; eps None
    is the machine epsilon of the input's dtype, as PyTorch's."""
    _args.tensor("hg.nn.functional.rms_norm", input)
    return _C.functional.rms_norm(input, _normalized_shape(normalized_shape, "rms_norm"), weight, eps)


def dropout(input, p=0.5, training=True, inplace=False):
    """Each entry zeroed with probability p and the rest scaled by 1/(1 − p), so the expectation is
    unchanged; the mask is drawn from hg.manual_seed's generator (hg.rand). The input itself when
    not training or at p = 0."""
    _args.tensor("hg.nn.functional.dropout", input)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be a probability in [0, 1], got {p}")
    if inplace:
        raise ValueError("dropout: inplace=True is not implemented; use the returned tensor")
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
    _args.tensor("hg.nn.functional.one_hot", tensor, "tensor")
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


# ---- Layers and activations: each a composition of the library's ops, so the tape differentiates it.

def _no_inplace(inplace, op):
    if inplace:
        raise ValueError(f"hg.nn.functional.{op}: inplace=True is not implemented; use the returned tensor")


def linear(input, weight, bias=None):
    """input @ weightᵀ + bias: input (..., in), weight (out, in) or (in), bias (out) or None."""
    _args.tensor("hg.nn.functional.linear", input)
    _args.tensor("hg.nn.functional.linear", weight, "weight")
    if input.dim() == 0 or weight.dim() not in (1, 2) or input.shape[-1] != weight.shape[-1]:
        raise ValueError(f"hg.nn.functional.linear: input {tuple(input.shape)} and weight {tuple(weight.shape)} do "
                         "not fit: weight must be (out_features, in_features) or (in_features) with in_features "
                         "the input's last size")
    output = input @ (weight.T if weight.dim() == 2 else weight)
    if bias is not None:
        _args.tensor("hg.nn.functional.linear", bias, "bias")
        if tuple(_broadcast_shape(bias, output, "linear", "bias", "output")) != tuple(output.shape):
            raise ValueError(f"hg.nn.functional.linear: bias {tuple(bias.shape)} does not broadcast to the output "
                             f"{tuple(output.shape)}")
        output = output + bias
    return output


def elu(input, alpha=1.0, inplace=False):
    """x for x > 0, α (eˣ − 1) otherwise (gradient α at 0, as PyTorch's). The exponential reads 0
    where x > 0, so a large x, whose branch is not taken, cannot send inf · 0 = NaN into the
    gradient."""
    _args.tensor("hg.nn.functional.elu", input)
    _no_inplace(inplace, "elu")
    from .. import expm1, where
    return where(input > 0, input, expm1(where(input > 0, 0.0, input)) * alpha)


def celu(input, alpha=1.0, inplace=False):
    """x for x > 0, α (e^(x/α) − 1) otherwise (elu with the exponent scaled, C¹ at 0)."""
    _args.tensor("hg.nn.functional.celu", input)
    _no_inplace(inplace, "celu")
    if alpha == 0:
        raise ValueError("hg.nn.functional.celu: alpha must not be 0 (the exponent is x / alpha)")
    from .. import expm1, where
    return where(input > 0, input, expm1(where(input > 0, 0.0, input) * (1.0 / alpha)) * alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """scale · elu(x, α) with PyTorch's constants α ≈ 1.6733, scale ≈ 1.0507 (self-normalizing)."""
    _args.tensor("hg.nn.functional.selu", input)
    _no_inplace(inplace, "selu")
    return elu(input, _SELU_ALPHA) * _SELU_SCALE


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x for x > 0, negative_slope · x otherwise."""
    _args.tensor("hg.nn.functional.leaky_relu", input)
    _no_inplace(inplace, "leaky_relu")
    from .. import where
    return where(input > 0, input, input * negative_slope)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clipped to [min_val, max_val]; as in PyTorch the gradient is 0 at the bounds themselves
    (clamp passes it there), so the bounds are written with where."""
    _args.tensor("hg.nn.functional.hardtanh", input)
    _no_inplace(inplace, "hardtanh")
    if min_val > max_val:
        raise ValueError(f"hg.nn.functional.hardtanh: min_val ({min_val}) must not be greater than max_val "
                         f"({max_val})")
    from .. import where
    return where(input <= min_val, float(min_val), where(input >= max_val, float(max_val), input))


def relu6(input, inplace=False):
    """min(max(x, 0), 6): hardtanh(x, 0, 6)."""
    _args.tensor("hg.nn.functional.relu6", input)
    _no_inplace(inplace, "relu6")
    return hardtanh(input, 0.0, 6.0)


def softsign(input):
    """x / (1 + |x|)."""
    _args.tensor("hg.nn.functional.softsign", input)
    return input / (abs(input) + 1.0)


def logsigmoid(input):
    """log σ(x) = −softplus(−x), finite for every x (log of the sigmoid would give −inf below −104
    in float32)."""
    _args.tensor("hg.nn.functional.logsigmoid", input)
    return -_C.functional.softplus(-input)


def mish(input, inplace=False):
    """x · tanh(softplus(x))."""
    _args.tensor("hg.nn.functional.mish", input)
    _no_inplace(inplace, "mish")
    return input * _C.tanh(_C.functional.softplus(input))


def _check_dim(x, dim, op):
    """PyTorch's rule: dim in [−rank, rank), and −1 or 0 for a 0-d tensor."""
    rank = max(x.dim(), 1)
    if isinstance(dim, bool) or not isinstance(dim, int) or not -rank <= dim < rank:
        raise IndexError(f"hg.nn.functional.{op}: dim {dim!r} is out of range for a tensor of rank {x.dim()}, shape "
                         f"{tuple(x.shape)} (accepted: {-rank} to {rank - 1})")


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """x / max(‖x‖_p, eps) along dim: each slice scaled to unit p-norm (a zero slice stays zero)."""
    _args.tensor("hg.nn.functional.normalize", input)
    _check_dim(input, dim, "normalize")
    if isinstance(p, (str, bool)) or not isinstance(p, (int, float)):
        raise TypeError(f"hg.nn.functional.normalize: p must be a number (inf included), got {p!r}")
    if out is not None:
        raise ValueError("hg.nn.functional.normalize: out= is not implemented; use the returned tensor")
    from .. import clamp, linalg
    return input / clamp(linalg.vector_norm(input, p, dim, True), min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Σ (x1 / max(‖x1‖, eps)) (x2 / max(‖x2‖, eps)) along dim, after broadcasting x1 and x2. As in
    PyTorch the eps bound is applied outside the tape: the gradient is that of the unclamped norm."""
    _args.tensor("hg.nn.functional.cosine_similarity", x1, "x1")
    _args.tensor("hg.nn.functional.cosine_similarity", x2, "x2")
    shape = _broadcast_shape(x1, x2, "cosine_similarity", "x1", "x2")
    x1, x2 = x1.expand(*shape), x2.expand(*shape)
    _check_dim(x1, dim, "cosine_similarity")
    from .. import clamp, linalg

    def bounded_norm(x):  # value max(‖x‖, eps), gradient d‖x‖/dx (PyTorch clamps in place under no_grad)
        norm = linalg.vector_norm(x, 2, dim, True)
        return norm + (clamp(norm, min=eps) - norm).detach()
    return ((x1 / bounded_norm(x1)) * (x2 / bounded_norm(x2))).sum(dim)


from ._losses import _broadcast_shape  # noqa: E402  (the shape check the layers share with the losses)
from ._padding import pad  # noqa: E402
from ._losses import (binary_cross_entropy, binary_cross_entropy_with_logits, huber_loss, kl_div,  # noqa: E402
                      l1_loss, mse_loss, nll_loss, smooth_l1_loss)
from ._activations import glu, hardsigmoid, hardswish, softmin, threshold  # noqa: E402
from ._attention import scaled_dot_product_attention  # noqa: E402
from ._cross_entropy import cross_entropy  # noqa: E402
from ._embedding import embedding  # noqa: E402
