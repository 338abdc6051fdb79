"""NumPy float64 references the tests hold handgrad to (written from the formulas, not from
handgrad's code)."""

import numpy as np


def softmax(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention_forward(q, k, v, mask=None, causal=False, scale=None):
    """mask: boolean (True = may attend) or additive float. Returns S, P, O."""
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    if causal:
        tq, tk = s.shape[-2:]
        s = np.where(np.tril(np.ones((tq, tk), dtype=bool)), s, -np.inf)
    p = softmax(s)
    return s, p, p @ v


def attention_backward(q, k, v, d_o, causal=False, scale=None):
    """dQ, dK, dV of L = sum(O * dO): dV = Pᵀ dO, dP = dO Vᵀ, dS = P (dP − rowsum(P dP)),
    dQ = dS K scale, dK = dSᵀ Q scale."""
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    _, p, _ = attention_forward(q, k, v, causal=causal, scale=scale)
    dv = np.swapaxes(p, -1, -2) @ d_o
    dp = d_o @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (p * dp).sum(axis=-1, keepdims=True))
    return ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, dv


def cross_entropy(logits, targets, ignore_index=-100):
    logp = logits - logits.max(axis=-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(axis=-1, keepdims=True))
    keep = targets != ignore_index
    picked = np.take_along_axis(logp, np.where(keep, targets, 0)[..., None], axis=-1)[..., 0]
    return -(picked * keep).sum() / keep.sum()
