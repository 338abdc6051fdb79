"""Rows of hg.nn.functional's layers and activations: linear, embedding, one_hot, layer_norm,
rms_norm, normalize, cosine_similarity, gelu, elu, celu, selu, leaky_relu, hardtanh, relu6,
softsign, logsigmoid, mish, dropout; attention (scaled_dot_product_attention, attention,
attention_qkv, attention_trace), softmax_jacobian and rope, the last four handgrad's own names,
compared with a composition of torch's ops written here."""

import math

import numpy as np

from . import Bool, Const, F32, Int, Row, Sample
from .samples import EDGES, unary, uniform


def _F(m):
    return m.nn.functional


def _act(name, domain=(-2.0, 2.0), signed=False, kwargs=None, extra=None, kinks=(), **row):
    kwargs = kwargs or {}
    make = unary(domain, signed, ints=False, kwargs=kwargs, kinks=kinks)
    samples = (lambda rng: make(rng) + extra(rng)) if extra else make
    return Row(f"F.{name}", lambda m, x, **kw: getattr(_F(m), name)(x, **kw), samples,
               gen="unary", domain=domain, signed=signed, **row)


GELU_INF = "gelu(inf) is inf in float32 as in float64 (PyTorch's float32 kernel gives nan there, its float64 one inf)"


def _float32_inf(sample):
    """gen_skip of gelu: a float32 inf (GELU_INF)."""
    return any(isinstance(a, F32) and np.isinf(a.value.astype(np.float32)).any() for a in sample.args)


def _with(name, kwargs, label, domain=(-2.0, 2.0), signed=False):
    """One more row of F.<name> at other keyword arguments."""
    return Row(f"F.{name}", lambda m, x, **kw: getattr(_F(m), name)(x, **kw),
               lambda rng: [Sample((uniform(rng, (3, 4), domain, signed),), kwargs, label),
                            Sample((EDGES,), kwargs, label + ", edges", grad=False)])


# ---------------------------------------------------------------- torch references for handgrad's own names

def _torch_rope(torch, x, start=0, base=10000.0):
    """Pair i (entries 2i, 2i+1) of position t rotated by the angle t · base^(−2i/d)."""
    t, d = x.shape[-2], x.shape[-1]
    pos = torch.arange(start, start + t, dtype=torch.float64)
    inv = base ** (-2 * torch.arange(d // 2, dtype=torch.float64) / d)
    angle = pos[:, None] * inv[None, :]
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], -1).flatten(-2)


def _attention(m, q, k, v, mask=None, **kw):
    path = kw.pop("path", "automatic")
    if m.__name__ == "torch":
        return _F(m).scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)
    return _F(m).attention(q, k, v, mask, path=path, **kw)


def _attention_qkv(m, qkv, heads, rotate=True, **kw):
    if m.__name__ != "torch":
        return _F(m).attention_qkv(qkv, heads, rotate, **kw)
    b, t, three_d = qkv.shape
    d = three_d // 3

    def cut(i):
        return qkv[..., i * d:(i + 1) * d].reshape(b, t, heads, d // heads).transpose(1, 2)
    q, k, v = cut(0), cut(1), cut(2)
    if rotate:
        q, k = _torch_rope(m, q), _torch_rope(m, k)
    return _F(m).scaled_dot_product_attention(q, k, v, **kw)


def _attention_trace(m, q, k, v, d_o, **kw):
    if m.__name__ != "torch":
        r = _F(m).attention_trace(q, k, v, d_o, **kw)
        return r.S, r.P, r.O, r.dO, r.dP, r.D, r.dS, r.dQ, r.dK, r.dV
    scale = kw.get("scale") or 1 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(-1, -2) * scale
    if kw.get("is_causal"):
        s = s.masked_fill(~m.ones(s.shape[-2:], dtype=m.bool).tril(), -math.inf)
    p = m.softmax(s, -1)
    o = p @ v
    d_p = d_o @ v.transpose(-1, -2)
    d = (p * d_p).sum(-1, keepdim=True)
    d_s = p * (d_p - d)
    return s, p, o, d_o, d_p, d, d_s, d_s @ k * scale, d_s.transpose(-1, -2) @ q * scale, p.transpose(-1, -2) @ d_o


def _softmax_jacobian(m, p):
    if m.__name__ != "torch":
        return _F(m).softmax_jacobian(p)
    return m.diag_embed(p) - p[..., :, None] * p[..., None, :]


def _rope(m, x, **kw):
    return _F(m).rope(x, **kw) if m.__name__ != "torch" else _torch_rope(m, x, **kw)


# ---------------------------------------------------------------- samples

def _attn(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    causal = np.tril(np.ones((3, 4), bool), 1)
    hidden = causal.copy()
    hidden[0] = False
    return [Sample((u(2, 3, 4), u(2, 4, 4), u(2, 4, 5)), {}, "(B, L, E), S ≠ L, Ev ≠ E"),
            Sample((u(1, 2, 3, 4), u(1, 2, 3, 4), u(1, 2, 3, 4)), {"is_causal": True}, "causal"),
            Sample((u(2, 3, 4), u(2, 4, 4), u(2, 4, 2), Bool(causal)), {}, "boolean mask"),
            Sample((u(2, 3, 4), u(2, 4, 4), u(2, 4, 2), Const(u(3, 4))), {}, "additive mask"),
            Sample((u(3, 4), u(4, 4), u(4, 2)), {"scale": 0.3}, "2-d, scale 0.3"),
            Sample((u(2, 3, 4), u(2, 4, 4), u(2, 4, 2), Bool(hidden)), {}, "a query that sees no key (zeros)"),
            Sample((F32(u(2, 3, 4)), F32(u(2, 4, 4)), F32(u(2, 4, 5))), {}, "float32")]


def _attn_paths(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    out = []
    for path in ("materialized", "tiled"):
        out += [Sample((u(2, 3, 4), u(2, 5, 4), u(2, 5, 3)), {"path": path}, f"path {path}"),
                Sample((u(1, 4, 4), u(1, 4, 4), u(1, 4, 4)), {"path": path, "is_causal": True}, f"path {path}, causal")]
    return out


def _attn_qkv(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(2, 3, 12), 2), {}, "2 heads, rotated"),
            Sample((u(1, 4, 18), 3), {"rotate": False}, "3 heads, no rope"),
            Sample((u(1, 4, 12), 2), {"is_causal": True}, "causal"),
            Sample((u(1, 3, 12), 1), {"scale": 0.5}, "1 head, scale 0.5")]


def _attn_trace(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(2, 3, 4), u(2, 4, 4), u(2, 4, 2), u(2, 3, 2)), {}, "(B, L, E)"),
            Sample((u(1, 4, 4), u(1, 4, 4), u(1, 4, 4), u(1, 4, 4)), {"is_causal": True}, "causal"),
            Sample((u(1, 4, 4), u(1, 4, 4), u(1, 4, 4), u(1, 4, 4)), {"is_causal": True, "path": "tiled"},
                   "causal, tiled")]


def _linear(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(3, 4), u(2, 4), u(2)), {}, "with bias"), Sample((u(3, 4), u(2, 4)), {}, "no bias"),
            Sample((u(2, 3, 4), u(5, 4), u(5)), {}, "batched"), Sample((u(4), u(2, 4), u(2)), {}, "1-d input"),
            Sample((u(3, 4), u(4)), {}, "1-d weight"), Sample((u(0, 4), u(2, 4), u(2)), {}, "empty"),
            Sample((F32(u(3, 4)), F32(u(2, 4)), F32(u(2))), {}, "float32")]


def _embedding(rng):
    w = uniform(rng, (5, 3))
    return [Sample((Int([[0, 4], [2, 2]]), w), {}, "repeated rows"), Sample((Int(3), w), {}, "0-d indices"),
            Sample((Int(np.zeros((0,), int)), w), {}, "no indices"), Sample((Int([1, 0]), F32(w)), {}, "float32")]


def _one_hot(rng):
    return [Sample((Int([0, 2, 1]),), {}, "classes from the data"), Sample((Int([[0, 1], [3, 3]]),), {"num_classes": 5},
                                                                           "num_classes 5"),
            Sample((Int(2),), {"num_classes": 3}, "0-d"), Sample((Int(np.zeros(0, int)),), {"num_classes": 2}, "empty")]


def _norm(rng, weight=True):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    out = [Sample((u(3, 4), (4,)), {}, "last dim"), Sample((u(2, 3, 4), (3, 4)), {}, "last two dims"),
           Sample((u(2, 4), [4]), {"eps": 1e-3}, "eps 1e-3"),
           Sample((np.array([[1.0, 1.0, 1.0], [1e300, -1e300, 0.0]]), (3,)), {}, "constant and huge rows", grad=False),
           Sample((F32(u(2, 4)), (4,)), {}, "float32")]
    if weight:
        out.insert(1, Sample((u(3, 4), (4,), u(4)), {}, "weight"))
    return out


def _layer_norm(rng):
    return _norm(rng) + [Sample((uniform(rng, (3, 4)), (4,), uniform(rng, (4,)), uniform(rng, (4,))), {},
                                "weight and bias"),
                         Sample((uniform(rng, (3, 4)), (4,), None, uniform(rng, (4,))), {}, "bias only")]


def _normalize(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(3, 4),), {}, "dim 1"), Sample((u(3, 4),), {"dim": 0}, "dim 0"),
            Sample((u(3, 4),), {"p": 1.0, "dim": -1}, "p 1"), Sample((u(3, 4),), {"p": 3}, "p 3"),
            Sample((np.array([[0.0, 0.0], [1e-300, 0.0]]),), {}, "a zero row", grad=False),
            Sample((EDGES.reshape(1, -1),), {}, "edge ±0 ±inf nan", grad=False)]


def _cosine(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    return [Sample((u(3, 4), u(3, 4)), {}, "dim 1"), Sample((u(3, 4), u(1, 4)), {"dim": 1}, "broadcast"),
            Sample((u(3, 4), u(3, 4)), {"dim": 0}, "dim 0"), Sample((u(4), u(4)), {"dim": 0}, "vectors"),
            Sample((np.zeros((2, 3)), u(2, 3)), {}, "a zero vector", grad=False),
            Sample((u(3, 4), u(3, 4)), {"eps": 0.5}, "eps 0.5")]


def _dropout(rng):
    x = uniform(rng, (3, 4))
    return [Sample((x,), {"p": 0.0}, "p 0"), Sample((x,), {"p": 0.5, "training": False}, "not training"),
            Sample((x,), {"p": 1.0}, "p 1", grad=False)]


def _check_dropout(out, x, p=0.5, training=True, **kw):
    v, x = out.detach().numpy(), x.numpy()
    kept = v != 0
    assert np.allclose(v[kept], x[kept] / (1 - p)), "dropout: a kept entry not scaled by 1/(1 − p)"
    assert 0 < kept.mean() < 1, "dropout: p 0.5 kept nothing or everything of 400 entries"


ROWS = [
    _act("gelu", extra=lambda rng: [Sample((F32(np.array([np.inf, 3e38])),), {}, "float32 inf", grad=False,
                                           differs=GELU_INF, expect=np.array([np.inf, 3e38], np.float32))],
         gen_skip=_float32_inf),
    _with("gelu", {"approximate": "tanh"}, "approximate tanh"),
    _act("elu", kinks=(0.0,)), _with("elu", {"alpha": 0.5}, "alpha 0.5", (0.1, 2.0), True),
    _act("celu", kinks=(0.0,)), _with("celu", {"alpha": 2.0}, "alpha 2", (0.1, 2.0), True),
    _act("selu", (0.1, 2.0), True, kinks=(0.0,)),
    _act("leaky_relu", (0.1, 2.0), True, kinks=(0.0,)),
    _with("leaky_relu", {"negative_slope": 0.2}, "slope 0.2", (0.1, 2.0), True),
    _act("hardtanh", (0.1, 0.9), True, kinks=(-1.0, 1.0)),
    _with("hardtanh", {"min_val": -0.5, "max_val": 2.0}, "bounds -0.5, 2",
                                              (0.1, 3.0), False),
    _act("relu6", (0.1, 5.0), True, kinks=(0.0, 6.0)),
    _act("softsign"),
    _act("logsigmoid"),
    _act("mish"),
    Row("F.linear", lambda m, *a: _F(m).linear(*a), _linear),
    Row("F.embedding", lambda m, i, w: _F(m).embedding(i, w), _embedding),
    Row("F.one_hot", lambda m, x, **kw: _F(m).one_hot(x, **kw), _one_hot, grad=False, why="int64 classes"),
    Row("F.layer_norm", lambda m, *a, **kw: _F(m).layer_norm(*a, **kw), _layer_norm),
    Row("F.rms_norm", lambda m, *a, **kw: _F(m).rms_norm(*a, **kw), _norm),
    Row("F.normalize", lambda m, x, **kw: _F(m).normalize(x, **kw), _normalize),
    Row("F.cosine_similarity", lambda m, a, b, **kw: _F(m).cosine_similarity(a, b, **kw), _cosine),
    Row("F.dropout", lambda m, x, **kw: _F(m).dropout(x, **kw), _dropout),
    Row("F.dropout", lambda m, x, **kw: _F(m).dropout(x, **kw),
        lambda rng: [Sample((Const(uniform(rng, (20, 20), (0.5, 1.0))),), {"p": 0.5}, "p 0.5")], grad=False,
        compare="meta", check=_check_dropout, why="a random mask from handgrad's own generator: shape and dtype "
        "compared, the kept entries checked"),
    Row("F.scaled_dot_product_attention", _attention, _attn, also=("F.attention",)),
    Row("F.attention", _attention, _attn_paths),
    Row("F.attention_qkv", _attention_qkv, _attn_qkv),
    Row("F.attention_trace", _attention_trace, _attn_trace, grad=False,
        why="its results are the backward's intermediates, not a differentiable function"),
    Row("F.softmax_jacobian", _softmax_jacobian,
        lambda rng: [Sample((np.array([0.2, 0.3, 0.5]),), {}, "one row"),
                     Sample((uniform(rng, (2, 3), (0.1, 1)),), {}, "rows"),
                     Sample((uniform(rng, (1,)),), {}, "one entry")]),
    Row("F.rope", _rope,
        lambda rng: [Sample((uniform(rng, (3, 4)),), {}, "(T, d)"),
                     Sample((uniform(rng, (2, 2, 5, 6)),), {}, "(B, H, T, d)"),
                     Sample((uniform(rng, (3, 4)),), {"start": 7}, "start 7"),
                     Sample((uniform(rng, (3, 8)),), {"base": 100.0}, "base 100"),
                     Sample((F32(uniform(rng, (4, 4))),), {"start": 1000}, "float32, start 1000")]),
]
