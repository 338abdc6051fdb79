"""hg.nn.functional against NumPy float64: softmax, log_softmax, cross_entropy and
scaled_dot_product_attention (masks, causal, scale, forward and backward)."""

import numpy as np
import pytest

import handgrad as hg
import handgrad.nn.functional as F
from reference import attention_backward, attention_forward, cross_entropy, softmax

rng = np.random.default_rng(2)


def f64(a, requires_grad=False):
    return hg.tensor(a, dtype=hg.float64, requires_grad=requires_grad)


def test_softmax_and_log_softmax():
    s = rng.standard_normal((2, 3, 5))
    np.testing.assert_allclose(F.softmax(f64(s), dim=-1).numpy(), softmax(s), rtol=1e-14)
    np.testing.assert_allclose(F.softmax(f64(s), dim=1).numpy(), softmax(s, axis=1), rtol=1e-14)
    np.testing.assert_allclose(F.log_softmax(f64(s), dim=-1).numpy(), np.log(softmax(s)), rtol=1e-13)
    masked = F.softmax(f64([[-np.inf, -np.inf], [0.0, -np.inf]]), dim=-1)
    assert masked.tolist() == [[0.0, 0.0], [1.0, 0.0]]  # an all-masked row gives zeros
    x = f64(s, requires_grad=True)
    F.log_softmax(x, dim=-1)[..., 0].sum().backward()  # d log p_0 / ds = onehot_0 − p
    expected = -softmax(s)
    expected[..., 0] += 1
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12, atol=1e-15)


def test_cross_entropy():
    logits = rng.standard_normal((6, 4))
    targets = np.array([0, 3, 1, -100, 2, 3])
    x = f64(logits, requires_grad=True)
    loss = F.cross_entropy(x, hg.tensor(targets))
    assert loss.shape == ()
    assert abs(loss.item() - cross_entropy(logits, targets)) < 1e-13
    loss.backward()
    keep = targets != -100
    onehot = np.zeros_like(logits)
    onehot[np.arange(6)[keep], targets[keep]] = 1
    expected = (softmax(logits) - onehot) * keep[:, None] / keep.sum()
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12, atol=1e-15)
    # ignore_index of one's own, and PyTorch's (N, C, d) layout: classes in dimension 1
    assert abs(F.cross_entropy(f64(logits), hg.tensor(np.where(keep, targets, 7)), ignore_index=7).item()
               - cross_entropy(logits, targets)) < 1e-13
    seq = rng.standard_normal((2, 4, 3))                      # (N, C, d)
    seq_targets = np.array([[0, 1, 3], [2, 2, 0]])
    ref = cross_entropy(np.moveaxis(seq, 1, -1), seq_targets)
    assert abs(F.cross_entropy(f64(seq), hg.tensor(seq_targets)).item() - ref) < 1e-13
    with pytest.raises(hg.Error, match="cross_entropy"):
        F.cross_entropy(f64(logits), hg.tensor([0, 1]))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scale", [None, 0.7])
def test_attention_matches_numpy(causal, scale):
    q, k, v = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 4))
    tq, tk, tv = f64(q, True), f64(k, True), f64(v, True)
    out = F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, scale=scale)
    np.testing.assert_allclose(out.detach().numpy(), attention_forward(q, k, v, causal=causal, scale=scale)[2],
                               rtol=1e-12, atol=1e-14)
    d_o = rng.standard_normal(out.shape)
    out.backward(f64(d_o))
    for got, want in zip((tq.grad, tk.grad, tv.grad), attention_backward(q, k, v, d_o, causal=causal, scale=scale)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-11, atol=1e-13)


def test_attention_masks():
    q, k, v = rng.standard_normal((3, 2)), rng.standard_normal((4, 2)), rng.standard_normal((4, 2))
    keep = np.array([[True, False, True, True], [True, True, False, False], [False, True, True, True]])
    out = F.scaled_dot_product_attention(f64(q), f64(k), f64(v), attn_mask=hg.tensor(keep))
    np.testing.assert_allclose(out.numpy(), attention_forward(q, k, v, mask=keep)[2], rtol=1e-12)
    bias = rng.standard_normal((3, 4))
    out = F.scaled_dot_product_attention(f64(q), f64(k), f64(v), attn_mask=f64(bias))
    np.testing.assert_allclose(out.numpy(), attention_forward(q, k, v, mask=bias)[2], rtol=1e-12)
    # a padding mask broadcasting over queries
    pad = np.array([True, True, False, True])
    out = F.scaled_dot_product_attention(f64(q), f64(k), f64(v), attn_mask=hg.tensor(pad[None, :]))
    np.testing.assert_allclose(out.numpy(), attention_forward(q, k, v, mask=np.broadcast_to(pad, (3, 4)))[2],
                               rtol=1e-12)
    # causal with Tq < Tk is aligned at the top left, as in PyTorch
    out = F.scaled_dot_product_attention(f64(q), f64(k), f64(v), is_causal=True)
    np.testing.assert_allclose(out.numpy(), attention_forward(q, k, v, causal=True)[2], rtol=1e-12)
    with pytest.raises(hg.Error, match="attention"):
        F.scaled_dot_product_attention(f64(q), f64(k[:, :1]), f64(v))
    with pytest.raises(ValueError, match="dropout"):
        F.scaled_dot_product_attention(f64(q), f64(k), f64(v), dropout_p=1.5)


def test_attention_trace_holds_every_intermediate():
    q, k, v = (rng.standard_normal((2, 4, 3)) for _ in range(3))
    d_o = rng.standard_normal((2, 4, 3))
    scale = 0.7
    for path in ("automatic", "materialized", "tiled"):
        tr = F.attention_trace(f64(q), f64(k), f64(v), f64(d_o), is_causal=True, scale=scale, path=path)
        s, p, o = attention_forward(q, k, v, causal=True, scale=scale)
        dp = d_o @ np.swapaxes(v, -1, -2)
        d = (p * dp).sum(axis=-1, keepdims=True)
        ds = p * (dp - d)
        dq, dk, dv = attention_backward(q, k, v, d_o, causal=True, scale=scale)
        assert tr.scale == scale
        for name, want in dict(P=p, O=o, dO=d_o, dP=dp, D=d, dS=ds, dQ=dq, dK=dk, dV=dv).items():
            np.testing.assert_allclose(getattr(tr, name).numpy(), want, rtol=1e-12, atol=1e-14, err_msg=f"{path} {name}")
        assert np.array_equal(np.isinf(tr.S.numpy()), np.isinf(s))


def test_every_attention_path_agrees():
    q, k, v = (rng.standard_normal((2, 5, 4)) for _ in range(3))
    mask = rng.standard_normal((5, 5)) > 0
    mask[:, 0] = True
    want = attention_forward(q, k, v, mask=mask, scale=0.5)[2]
    for path in ("automatic", "materialized", "tiled"):
        o = F.attention(f64(q), f64(k), f64(v), attn_mask=hg.tensor(mask), scale=0.5, path=path)
        np.testing.assert_allclose(o.numpy(), want, rtol=1e-12, err_msg=path)
    with pytest.raises(hg.Error, match="path"):
        F.attention(f64(q), f64(k), f64(v), path="sideways")


def test_softmax_jacobian_is_diag_p_minus_p_p_transposed():
    p = softmax(rng.standard_normal((3, 4)))
    j = F.softmax_jacobian(f64(p)).numpy()
    assert j.shape == (3, 4, 4)
    for r in range(3):
        np.testing.assert_allclose(j[r], np.diag(p[r]) - np.outer(p[r], p[r]), rtol=1e-14, atol=1e-16)


def test_embedding_picks_rows_in_pytorch_order():
    w = rng.standard_normal((5, 3))
    idx = np.array([[4, 0], [4, 2]])
    weight = f64(w, requires_grad=True)
    out = F.embedding(hg.tensor(idx), weight)
    np.testing.assert_array_equal(out.detach().numpy(), w[idx])
    out.sum().backward()
    np.testing.assert_array_equal(weight.grad.numpy()[:, 0], [1.0, 0.0, 1.0, 0.0, 2.0])


def test_rope_rotates_pairs():
    x = rng.standard_normal((3, 4))  # T = 3, d_h = 4
    y = F.rope(f64(x), start=2, base=100.0).numpy()
    for t in range(3):
        for i in range(2):
            theta = (t + 2) * 100.0 ** (-2 * i / 4)
            a, b = x[t, 2 * i], x[t, 2 * i + 1]
            np.testing.assert_allclose(y[t, 2 * i: 2 * i + 2],
                                       [a * np.cos(theta) - b * np.sin(theta), a * np.sin(theta) + b * np.cos(theta)],
                                       rtol=1e-13)


def test_attention_qkv_is_heads_rope_then_attention():
    # qkv (B, T, 3d) with d = H d_h: the heads cut out by hand, rope on q and k, then attention
    B, T, H, d_h = 2, 5, 2, 4
    x = rng.standard_normal((B, T, 3 * H * d_h))
    g = rng.standard_normal((B, H, T, d_h))
    a = f64(x, requires_grad=True)
    out = F.attention_qkv(a, H, is_causal=True, base=100.0)
    assert out.shape == (B, H, T, d_h)
    (out * f64(g)).sum().backward()
    b = f64(x, requires_grad=True)
    heads = b.reshape(B, T, 3, H, d_h).permute(2, 0, 3, 1, 4)  # (3, B, H, T, d_h)
    q, k, v = F.rope(heads[0], base=100.0), F.rope(heads[1], base=100.0), heads[2]
    ref = F.attention(q, k, v, is_causal=True)
    (ref * f64(g)).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-14)
    assert out.grad_fn.name() == "attention_qkv"
    with pytest.raises(hg.Error, match="attention_qkv"):
        F.attention_qkv(f64(rng.standard_normal((2, 3, 10))), 2)


def test_gelu_and_softplus_formulas_and_gradients():
    from math import erf, sqrt, tanh
    xs = [-30.0, -2.5, -0.3, 0.0, 0.7, 3.0, 40.0]
    x = f64(xs)
    np.testing.assert_allclose(F.gelu(x).numpy(), [v * 0.5 * (1 + erf(v / sqrt(2))) for v in xs], rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(F.gelu(x, approximate="tanh").numpy(),
                               [0.5 * v * (1 + tanh(sqrt(2 / np.pi) * (v + 0.044715 * v ** 3))) for v in xs], rtol=1e-14)
    np.testing.assert_allclose(F.softplus(x).numpy(), [np.logaddexp(0.0, v) for v in xs], rtol=1e-14)
    np.testing.assert_allclose(F.softplus(x, beta=2.0).numpy(), [np.logaddexp(0.0, 2 * v) / 2 for v in xs], rtol=1e-14)
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(x, approximate="erf")
    t = f64(rng.standard_normal((3, 4)), requires_grad=True)
    for fn in (F.gelu, lambda a: F.gelu(a, approximate="tanh"), F.softplus, lambda a: F.softplus(a, beta=3.0),
               lambda a: F.rope(a), F.softmax_jacobian):
        assert hg.autograd.gradcheck(fn, [t])
        assert hg.autograd.gradgradcheck(fn, [t])
