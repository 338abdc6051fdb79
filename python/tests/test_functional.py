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
    with pytest.raises(NotImplementedError):
        F.scaled_dot_product_attention(f64(q), f64(k), f64(v), dropout_p=0.1)
