"""Rows of the hg.nn.functional arguments that torch's own samples (its OpInfo database) use:
cross_entropy with class-probability targets and with label_smoothing and weight;
scaled_dot_product_attention with enable_gqa and with dropout_p; embedding's padding_idx, max_norm
and scale_grad_by_freq. python/tests/test_functional_torch_samples.py holds the gradients these
rows cannot (embedding's deliberate ones, the dropout's distribution)."""

import numpy as np

from . import Bool, Const, F32, Int, Row, Sample
from .samples import uniform

REDUCTIONS = ("mean", "sum", "none")
ALL_IGNORED = "a mean loss whose every target is ignored is 0 (PyTorch: nan, the mean of nothing)"


def _F(m):
    return m.nn.functional


def _probabilities(rng, shape, axis=1):
    e = np.exp(uniform(rng, shape))
    return e / e.sum(axis=axis, keepdims=True)


def _ce_probabilities(rng):
    x, p = uniform(rng, (3, 4), (-3, 3)), _probabilities(rng, (3, 4))
    w = Const(uniform(rng, (4,), (0.5, 2)))
    return [Sample((x, p), {"reduction": r}, f"reduction {r}") for r in REDUCTIONS] + [
        Sample((x, p), {"weight": w, "reduction": r}, f"weight, {r}") for r in REDUCTIONS] + [
        Sample((x, p), {"label_smoothing": 0.2}, "label_smoothing 0.2"),
        Sample((x, p), {"weight": w, "label_smoothing": 0.3, "reduction": "sum"}, "weight and label_smoothing, sum"),
        Sample((uniform(rng, (4,)), _probabilities(rng, (4,), 0)), {}, "1-d input"),
        Sample((uniform(rng, (2, 4, 3)), _probabilities(rng, (2, 4, 3))), {"weight": w}, "(N, C, d), weight"),
        Sample((uniform(rng, (2, 4, 2, 2)), _probabilities(rng, (2, 4, 2, 2))), {"reduction": "none"},
               "(N, C, d1, d2), none"),
        Sample((np.zeros((0, 4)), np.zeros((0, 4))), {"reduction": "sum"}, "empty, sum"),
        Sample((np.zeros((0, 4)), np.zeros((0, 4))), {}, "empty, mean (nan)", grad=False),
        Sample((F32(x), F32(p)), {"label_smoothing": 0.1}, "float32")]


def _ce_smoothing(rng):
    x = uniform(rng, (4, 3), (-3, 3))
    t = Int([0, 2, 1, 2])
    w = Const(np.array([0.5, 2.0, 1.0]))
    return [Sample((x, t), {"label_smoothing": 0.2, "reduction": r}, f"label_smoothing, {r}") for r in REDUCTIONS] + [
        Sample((x, t), {"weight": w, "reduction": r}, f"weight, {r}") for r in REDUCTIONS] + [
        Sample((x, Int([0, -100, 1, 2])), {"weight": w, "label_smoothing": 0.3, "reduction": r},
               f"weight, label_smoothing, ignored, {r}") for r in REDUCTIONS] + [
        Sample((x, t), {"ignore_index": 2, "label_smoothing": 0.1}, "ignore_index 2, label_smoothing"),
        Sample((x, t), {"label_smoothing": 1.0}, "label_smoothing 1"),
        Sample((uniform(rng, (2, 3, 4)), Int([[0, 1, 2, 0], [2, 2, 1, 0]])), {"label_smoothing": 0.2, "weight": w},
               "(N, C, d)"),
        Sample((uniform(rng, (3,)), Int(1)), {"label_smoothing": 0.2}, "1-d input, 0-d target"),
        Sample((x, Int([-100] * 4)), {"label_smoothing": 0.2}, "every target ignored", differs=ALL_IGNORED,
               expect=np.array(0.0)),
        Sample((F32(x), t), {"label_smoothing": 0.2, "weight": F32(w.value)}, "float32")]


def _gqa(m, q, k, v, **kw):
    return _F(m).scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw)


def _gqa_samples(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    keep = rng.random((3, 5)) > 0.3
    keep[:, 0] = True
    return [Sample((u(1, 4, 3, 4), u(1, 2, 5, 4), u(1, 2, 5, 3)), {}, "4 query heads, 2 key and value heads"),
            Sample((u(1, 4, 3, 4), u(1, 1, 5, 4), u(1, 2, 5, 3)), {"is_causal": True},
                   "1 key head, 2 value heads, causal"),
            Sample((u(2, 3, 4), u(1, 5, 4), u(1, 5, 4)), {"scale": 0.5}, "3-d: the batch dimension is the heads"),
            Sample((u(1, 4, 3, 4), u(1, 2, 5, 4), u(1, 2, 5, 4)), {"attn_mask": Bool(keep)}, "boolean mask"),
            Sample((u(1, 4, 3, 4), u(1, 2, 5, 4), u(1, 2, 5, 4)), {"attn_mask": Const(u(3, 5))}, "float mask"),
            Sample((u(2, 2, 3, 4), u(2, 2, 5, 4), u(2, 2, 5, 4)), {}, "heads equal"),
            Sample((F32(u(1, 4, 3, 4)), F32(u(1, 2, 5, 4)), F32(u(1, 2, 5, 4))), {}, "float32")]


DROPOUT_P = 0.3


def _dropout_attention(m, q, k, v, **kw):
    m.manual_seed(0)  # the same draw at every evaluation, so finite differences see one function
    return _F(m).scaled_dot_product_attention(q, k, v, dropout_p=DROPOUT_P, **kw)


def _check_dropout_attention(out, q, k, v, **kw):
    """With V = I the output is the attention weights: each 0 or P / (1 − p)."""
    import handgrad as hg
    weights = hg.nn.functional.scaled_dot_product_attention(q, k, v, **kw).detach().numpy()
    got = out.detach().numpy()
    kept = got != 0
    assert np.allclose(got[kept], weights[kept] / (1 - DROPOUT_P), rtol=1e-6, atol=1e-12), \
        "scaled_dot_product_attention: a kept weight not scaled by 1/(1 - dropout_p)"
    assert not np.allclose(got, weights), "scaled_dot_product_attention: dropout_p > 0 dropped nothing"


def _dropout_samples(rng):
    u = lambda *s: uniform(rng, s)  # noqa: E731
    eye = np.broadcast_to(np.eye(5), (2, 5, 5)).copy()
    keep = rng.random((4, 5)) > 0.3
    keep[:, 0] = True
    return [Sample((u(2, 4, 3), u(2, 5, 3), eye), {}, "plain"),
            Sample((u(2, 4, 3), u(2, 5, 3), eye), {"is_causal": True}, "causal"),
            Sample((u(2, 4, 3), u(2, 5, 3), eye), {"attn_mask": Bool(keep), "scale": 0.6}, "boolean mask, scale"),
            Sample((u(2, 4, 3), u(2, 5, 3), eye), {"attn_mask": Const(u(4, 5))}, "float mask"),
            Sample((u(2, 2, 4, 3), u(2, 1, 5, 3), np.broadcast_to(np.eye(5), (2, 1, 5, 5)).copy()),
                   {"enable_gqa": True}, "enable_gqa")]


def _embedding(m, i, w, **kw):
    return _F(m).embedding(i, w, **kw)


def _embedding_samples(rng):
    w = uniform(rng, (6, 4), (-1.5, 1.5))
    i = Int([[0, 2, 2], [5, 1, 2]])
    return [Sample((i, w), {"padding_idx": 2}, "padding_idx 2"),
            Sample((i, w), {"padding_idx": -1}, "padding_idx -1"),
            Sample((i, w), {"scale_grad_by_freq": True}, "scale_grad_by_freq"),
            Sample((i, w), {"max_norm": 1.0}, "max_norm 1"),
            Sample((i, w), {"max_norm": 1.5, "norm_type": 1.0}, "max_norm 1.5, norm_type 1"),
            Sample((i, w), {"max_norm": 0.5, "norm_type": float("inf")}, "max_norm 0.5, norm_type inf"),
            Sample((i, w), {"padding_idx": 0, "max_norm": 1.0, "scale_grad_by_freq": True}, "all three"),
            Sample((Int(np.zeros((0,), int)), w), {"max_norm": 1.0, "padding_idx": 1}, "no indices"),
            Sample((i, F32(w)), {"max_norm": 1.0, "padding_idx": 2}, "float32")]


ROWS = [
    Row("F.cross_entropy", lambda m, *a, **kw: _F(m).cross_entropy(*a, **kw), _ce_probabilities),
    Row("F.cross_entropy", lambda m, *a, **kw: _F(m).cross_entropy(*a, **kw), _ce_smoothing),
    Row("F.scaled_dot_product_attention", _gqa, _gqa_samples),
    Row("F.scaled_dot_product_attention", _dropout_attention, _dropout_samples, torch=False,
        check=_check_dropout_attention,
        why="dropout draws from handgrad's own generator, so only the distribution can match torch's "
            "(test_functional_torch_samples.py compares the means); the kept weights are checked here"),
    Row("F.embedding", _embedding, _embedding_samples, grad=False,
        why="padding_idx and scale_grad_by_freq change the gradient on purpose (PyTorch's rule, not the derivative) "
            "and max_norm rewrites weight in place; test_functional_torch_samples.py compares those gradients "
            "with torch's"),
]
