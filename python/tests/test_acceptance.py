"""The issue's example: Section 3's three tokens, L = o[2, 1], and q.grad[2] as the text gives it."""

import numpy as np

import handgrad as hg
from reference import attention_backward

Q = [[1., 0.], [0., 1.], [1., 1.]]
V = [[1., 0.], [0., 2.], [3., 3.]]


def test_three_token_example(capsys):
    q = hg.tensor(Q, dtype=hg.float64, requires_grad=True)
    k = q.detach().clone().requires_grad_()
    v = hg.tensor(V, dtype=hg.float64, requires_grad=True)
    o = hg.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    o[2, 1].backward()
    print(q.grad[2])

    printed = capsys.readouterr().out
    assert "0.0012" in printed and "0.3523" in printed
    # the text's numbers, rounded to 3 decimals
    assert [round(x, 3) for x in q.grad[2].tolist()] == [0.001, 0.352]
    # and a NumPy float64 computation of the same backward
    d_o = np.zeros((3, 2))
    d_o[2, 1] = 1.0
    dq, dk, dv = attention_backward(np.array(Q), np.array(Q), np.array(V), d_o, causal=True)
    np.testing.assert_allclose(q.grad.numpy(), dq, rtol=0, atol=1e-12)
    np.testing.assert_allclose(k.grad.numpy(), dk, rtol=0, atol=1e-12)
    np.testing.assert_allclose(v.grad.numpy(), dv, rtol=0, atol=1e-12)
    # only token 3's query moves o[2, 1]: rows 1 and 2 of dQ are exactly 0
    assert q.grad[0].tolist() == [0.0, 0.0] and q.grad[1].tolist() == [0.0, 0.0]
