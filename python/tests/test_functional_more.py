"""hg.nn.functional's compositions (activations, linear, normalize, cosine_similarity, pad and the
losses) against NumPy float64 formulas written out here, hg.autograd.gradcheck, and — where torch
imports — torch.nn.functional's values and gradients to 1e-10, the same lambda run on both."""

import warnings

import numpy as np
import pytest

import handgrad as hg
import handgrad.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = None

rng = np.random.default_rng(7)
REDUCTIONS = ("mean", "sum", "none")


def away_from(a, points, margin=0.05):
    """a with every entry within margin of one of points moved off it (gradcheck stays off kinks)."""
    a = np.array(a, dtype=np.float64)
    for p in points:
        near = np.abs(a - p) < margin
        a[near] = p + np.where(a[near] >= p, margin, -margin)
    return a


def reduce(losses, reduction):
    return losses.mean() if reduction == "mean" else losses.sum() if reduction == "sum" else losses


def hg_of(a, grad):
    if a.dtype.kind == "f":
        return hg.tensor(a, dtype=hg.float64, requires_grad=grad)
    return hg.tensor(a)


def check(fn, reference, *arrays, grad=True, finite_differences=True, fixed=()):
    """fn(F, *tensors) against reference(*arrays) (NumPy float64); gradcheck on the float inputs
    but those whose positions are in fixed (weights, which torch does not differentiate); with
    torch, the same fn on torch.nn.functional: values and gradients to 1e-10."""
    inputs = [hg_of(a, grad and i not in fixed) for i, a in enumerate(arrays)]
    out = fn(F, *inputs)
    np.testing.assert_allclose(out.detach().numpy(), reference(*arrays), rtol=1e-12, atol=1e-14)
    if grad and finite_differences:
        assert hg.autograd.gradcheck(lambda *t: fn(F, *t), tuple(inputs))
    if torch is None:
        return
    tins = [torch.tensor(a, dtype=torch.float64, requires_grad=x.requires_grad) if a.dtype.kind == "f"
            else torch.tensor(a) for a, x in zip(arrays, inputs)]
    tout = fn(TF, *tins)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    if not grad:
        return
    upstream = rng.standard_normal(tuple(tout.shape))
    tout.backward(torch.tensor(upstream))
    out.backward(hg.tensor(upstream, dtype=hg.float64))
    for x, t in zip(inputs, tins):
        if t.requires_grad:
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


# ---- activations

X = away_from(rng.standard_normal((3, 5)) * 2.5, (0.0,))
SOFTPLUS = lambda x: np.logaddexp(0.0, x)  # noqa: E731
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

ACTIVATIONS = {
    "elu": (lambda F, x: F.elu(x), lambda x: np.where(x > 0, x, np.expm1(x))),
    "elu_alpha": (lambda F, x: F.elu(x, alpha=0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    "celu": (lambda F, x: F.celu(x, alpha=1.5), lambda x: np.maximum(x, 0) + np.minimum(0, 1.5 * np.expm1(x / 1.5))),
    "selu": (lambda F, x: F.selu(x), lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x))),
    "leaky_relu": (lambda F, x: F.leaky_relu(x), lambda x: np.where(x > 0, x, 0.01 * x)),
    "leaky_relu_slope": (lambda F, x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "hardtanh": (lambda F, x: F.hardtanh(x), lambda x: np.clip(x, -1, 1)),
    "hardtanh_bounds": (lambda F, x: F.hardtanh(x, min_val=-0.5, max_val=2.0), lambda x: np.clip(x, -0.5, 2.0)),
    "relu6": (lambda F, x: F.relu6(x * 3.0), lambda x: np.clip(3 * x, 0, 6)),
    "softsign": (lambda F, x: F.softsign(x), lambda x: x / (1 + np.abs(x))),
    "logsigmoid": (lambda F, x: F.logsigmoid(x), lambda x: -np.logaddexp(0.0, -x)),
    "mish": (lambda F, x: F.mish(x), lambda x: x * np.tanh(SOFTPLUS(x))),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations(name):
    fn, reference = ACTIVATIONS[name]
    x = away_from(X, (-1.0, 1.0, -0.5, 2.0, 0.0, 2.0 - 1e-9, 1 / 3, 2.0))  # off every bound (relu6 reads 3x)
    check(fn, reference, x)


def test_activations_at_the_kinks_and_far_out():
    x = hg.tensor([-1.0, 0.0, 1.0, 6.0], dtype=hg.float64, requires_grad=True)
    F.hardtanh(x).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0, 0.0]  # PyTorch: 0 at the bounds themselves
    x.grad = None
    F.relu6(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 0.0]
    x.grad = None
    F.elu(x, alpha=2.0).sum().backward()
    # α eˣ at x ≤ 0, as PyTorch's; e⁻¹ within a few ulps (NumPy's exp differs from the C library's by
    # an ulp on some CPUs: CONTRIBUTING.md, "Tests that hold on every CPU")
    np.testing.assert_array_max_ulp(x.grad.numpy(), np.array([2.0 * np.exp(-1.0), 2.0, 1.0, 1.0]), maxulp=4)
    for fn, at_zero in ((F.selu, SELU_SCALE * SELU_ALPHA), (F.celu, 1.0), (F.leaky_relu, 0.01), (F.softsign, 1.0)):
        x.grad = None
        fn(x).sum().backward()
        assert abs(x.grad.tolist()[1] - at_zero) < 1e-15, fn.__name__  # PyTorch's gradient at 0
    big = hg.tensor([-1000.0, 1000.0], requires_grad=True)  # float32: the untaken branches overflow
    (F.elu(big) + F.selu(big) + F.celu(big) + F.logsigmoid(big) + F.mish(big)).sum().backward()
    assert np.isfinite(big.grad.numpy()).all()
    assert F.logsigmoid(big).tolist() == [-1000.0, 0.0]


def test_activation_errors():
    for fn in (F.elu, F.celu, F.selu, F.leaky_relu, F.hardtanh, F.relu6, F.softsign, F.logsigmoid, F.mish):
        with pytest.raises(TypeError, match=fn.__name__):
            fn([1.0, 2.0])
    with pytest.raises(ValueError, match="elu: inplace"):
        F.elu(hg.tensor([1.0]), inplace=True)
    with pytest.raises(ValueError, match="hardtanh: min_val"):
        F.hardtanh(hg.tensor([1.0]), 2.0, 1.0)
    with pytest.raises(ValueError, match="celu: alpha"):
        F.celu(hg.tensor([1.0]), alpha=0.0)


# ---- linear, normalize, cosine_similarity, pad

def test_linear():
    x, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)), rng.standard_normal(5)
    check(lambda F, x, w, b: F.linear(x, w, b), lambda x, w, b: x @ w.T + b, x, w, b)
    check(lambda F, x, w: F.linear(x, w), lambda x, w: x @ w.T, x, w)
    check(lambda F, x, w: F.linear(x, w), lambda x, w: x @ w, x, rng.standard_normal(4))  # a 1-D weight
    with pytest.raises(ValueError, match="linear: input"):
        F.linear(hg.zeros(2, 3), hg.zeros(5, 4))
    with pytest.raises(TypeError, match="linear: weight"):
        F.linear(hg.zeros(2, 3), [[1.0]])
    with pytest.raises(ValueError, match="linear: bias"):
        F.linear(hg.zeros(2, 3), hg.zeros(4, 3), hg.zeros(3))


def test_normalize():
    x = rng.standard_normal((3, 4, 2))

    def norm(x, p, axis):
        return np.sum(np.abs(x) ** p, axis=axis, keepdims=True) ** (1 / p)
    check(lambda F, x: F.normalize(x), lambda x: x / np.maximum(norm(x, 2, 1), 1e-12), x)
    check(lambda F, x: F.normalize(x, p=3.0, dim=-1), lambda x: x / np.maximum(norm(x, 3, -1), 1e-12), x)
    check(lambda F, x: F.normalize(x, p=1.0, dim=0, eps=10.0), lambda x: x / np.maximum(norm(x, 1, 0), 10.0), x)
    assert F.normalize(hg.zeros(2, 3)).tolist() == [[0.0] * 3] * 2  # a zero row stays zero, no NaN
    with pytest.raises(TypeError, match="normalize"):
        F.normalize(np.ones(3))
    with pytest.raises(IndexError, match="normalize: dim 2"):
        F.normalize(hg.zeros(2, 3), dim=2)
    with pytest.raises(TypeError, match="normalize: p"):
        F.normalize(hg.zeros(2, 3), p="fro")


def test_cosine_similarity():
    a, b = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))

    def cosine(a, b, axis=1, eps=1e-8):
        na = np.maximum(np.linalg.norm(a, axis=axis, keepdims=True), eps)
        nb = np.maximum(np.linalg.norm(b, axis=axis, keepdims=True), eps)
        return np.sum(a / na * b / nb, axis=axis)
    check(lambda F, a, b: F.cosine_similarity(a, b), cosine, a, b)
    check(lambda F, a, b: F.cosine_similarity(a, b, dim=0), lambda a, b: cosine(a, b, 0), a, b)
    check(lambda F, a, b: F.cosine_similarity(a, b, dim=-1), lambda a, b: cosine(a, b, -1), a, b[:1])  # broadcast
    # norms below eps: the bound in the value but the unbounded norm's gradient, which is PyTorch's
    # and not the derivative of the value, so only torch checks it
    small = a * 1e-9
    check(lambda F, a, b: F.cosine_similarity(a, b, eps=1e-6), lambda a, b: cosine(a, b, eps=1e-6), small, b,
          finite_differences=False)
    with pytest.raises(ValueError, match="cosine_similarity: x1"):
        F.cosine_similarity(hg.zeros(4, 6), hg.zeros(3, 6))
    with pytest.raises(IndexError, match="cosine_similarity: dim -3"):
        F.cosine_similarity(hg.zeros(4, 6), hg.zeros(4, 6), dim=-3)


def test_pad():
    x = rng.standard_normal((2, 3, 4))
    check(lambda F, x: F.pad(x, (1, 2)), lambda x: np.pad(x, ((0, 0), (0, 0), (1, 2))), x)
    check(lambda F, x: F.pad(x, [0, 1, 2, 0], value=1.5),
          lambda x: np.pad(x, ((0, 0), (2, 0), (0, 1)), constant_values=1.5), x)
    check(lambda F, x: F.pad(x, (-1, 2, 1, -2, 0, 0)), lambda x: np.pad(x[:, :1, 1:], ((0, 0), (1, 0), (0, 2))), x)
    check(lambda F, x: F.pad(x, (-4, 0)), lambda x: x[..., 4:], x)  # cropped to nothing
    ids = F.pad(hg.tensor([[1, 2]]), (1, 1), value=7)
    assert ids.dtype == hg.int64 and ids.tolist() == [[7, 1, 2, 7]]
    assert F.pad(hg.tensor([[1.0, 2.0, 3.0]]), (2, 1), mode="reflect").tolist() == [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]
    with pytest.raises(ValueError, match="pad: mode"):
        F.pad(hg.zeros(2, 3), (1, 1), mode="mirror")
    with pytest.raises(ValueError, match="pad: pad must hold"):
        F.pad(hg.zeros(2, 3), (1, 1, 1))
    with pytest.raises(ValueError, match="pad: pad must hold"):
        F.pad(hg.zeros(3), (1, 1, 1, 1))
    with pytest.raises(ValueError, match="negative size"):
        F.pad(hg.zeros(2, 3), (-2, -2))
    with pytest.raises(TypeError, match="pad: pad must be"):
        F.pad(hg.zeros(2, 3), 1)
    with pytest.raises(TypeError, match="pad: value"):
        F.pad(hg.zeros(2, 3), (1, 1), value="a")


# ---- losses

PAIR = rng.standard_normal((3, 4)) * 2
TARGET = PAIR + away_from(rng.standard_normal((3, 4)) * 1.5, (0.0, 1.0, -1.0, 0.7, -0.7))  # |d| off β, δ, 0

POINTWISE = {
    "mse_loss": (lambda F, x, y, r: F.mse_loss(x, y, reduction=r), lambda d: d * d),
    "l1_loss": (lambda F, x, y, r: F.l1_loss(x, y, reduction=r), np.abs),
    "smooth_l1_loss": (lambda F, x, y, r: F.smooth_l1_loss(x, y, reduction=r),
                       lambda d: np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5)),
    "smooth_l1_loss_beta": (lambda F, x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.7),
                            lambda d: np.where(np.abs(d) < 0.7, 0.5 * d * d / 0.7, np.abs(d) - 0.35)),
    "smooth_l1_loss_beta0": (lambda F, x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.0), np.abs),
    "huber_loss": (lambda F, x, y, r: F.huber_loss(x, y, reduction=r),
                   lambda d: np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5)),
    "huber_loss_delta": (lambda F, x, y, r: F.huber_loss(x, y, reduction=r, delta=0.7),
                         lambda d: np.where(np.abs(d) < 0.7, 0.5 * d * d, 0.7 * (np.abs(d) - 0.35))),
}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", sorted(POINTWISE))
def test_pointwise_losses(name, reduction):
    fn, per_element = POINTWISE[name]
    check(lambda F, x, y: fn(F, x, y, reduction), lambda x, y: reduce(per_element(x - y), reduction), PAIR, TARGET)


def test_weighted_and_legacy_reductions():
    w = rng.random((3, 4)) + 0.1
    d2 = (PAIR - TARGET) ** 2
    check(lambda F, x, y, w: F.mse_loss(x, y, weight=w), lambda x, y, w: np.sum(w * d2) / np.sum(w), PAIR, TARGET, w)
    check(lambda F, x, y, w: F.l1_loss(x, y, weight=w, reduction="sum"),
          lambda x, y, w: np.sum(w * np.abs(x - y)), PAIR, TARGET, w)
    huber = np.where(np.abs(PAIR - TARGET) < 1, 0.5 * d2, np.abs(PAIR - TARGET) - 0.5)
    check(lambda F, x, y, w: F.huber_loss(x, y, weight=w), lambda x, y, w: np.mean(w * huber), PAIR, TARGET, w)
    with pytest.warns(UserWarning, match="deprecated"):
        out = F.mse_loss(hg.tensor(PAIR), hg.tensor(TARGET), reduce=False)  # PyTorch's legacy rule: 'none'
    assert out.shape == (3, 4)
    with pytest.warns(UserWarning, match="broadcast"):
        F.mse_loss(hg.tensor(PAIR), hg.tensor(TARGET[:1]))  # PyTorch broadcasts a different size, warning


LOSSES = (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss, F.binary_cross_entropy,
          F.binary_cross_entropy_with_logits, F.kl_div)


@pytest.mark.parametrize("fn", LOSSES, ids=lambda fn: fn.__name__)
def test_loss_errors(fn):
    x, y = hg.tensor([[0.2, 0.7]]), hg.tensor([[0.0, 1.0]])
    with pytest.raises(ValueError, match=f"{fn.__name__}: reduction"):
        fn(x, y, reduction="avg")
    with pytest.raises(TypeError, match=f"{fn.__name__}: input"):
        fn([[0.2, 0.7]], y)
    with pytest.raises(TypeError, match=f"{fn.__name__}: target"):
        fn(x, 1.0)
    with pytest.raises(TypeError, match=f"{fn.__name__}: input is handgrad.float32 but target"):
        fn(x, y.double())
    if fn in (F.binary_cross_entropy, F.binary_cross_entropy_with_logits):
        with pytest.raises(ValueError, match=f"{fn.__name__}: target"):
            fn(x, hg.tensor([0.0, 1.0]))  # PyTorch refuses a different size here
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(ValueError, match=f"{fn.__name__}: input .* do not broadcast"):
                fn(x, hg.tensor([0.0, 1.0, 2.0]))


def test_loss_parameter_errors():
    x = hg.tensor([0.5])
    with pytest.raises(ValueError, match="smooth_l1_loss: beta"):
        F.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(ValueError, match="huber_loss: delta"):
        F.huber_loss(x, x, delta=0.0)
    with pytest.raises(ValueError, match="mse_loss: weight"):
        F.mse_loss(x, x, weight=hg.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="binary_cross_entropy: every input"):
        F.binary_cross_entropy(hg.tensor([1.5]), hg.tensor([1.0]))


def nll(logp, target, weight=None, ignore_index=-100, reduction="mean"):
    """NumPy: classes at axis 1, ignored targets 0 and out of the mean's denominator."""
    logp = np.moveaxis(logp, 1, -1) if logp.ndim > 1 else logp
    keep = target != ignore_index
    safe = np.where(keep, target, 0)
    w = np.ones(logp.shape[-1]) if weight is None else weight
    weights = np.where(keep, w[safe], 0.0)
    losses = -np.take_along_axis(logp, safe[..., None], -1)[..., 0] * weights
    return losses if reduction == "none" else losses.sum() if reduction == "sum" else losses.sum() / weights.sum()


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    logits = rng.standard_normal((6, 4))
    target = np.array([0, 3, 1, -100, 2, 3])
    check(lambda F, x, t: F.nll_loss(F.log_softmax(x, 1), t, reduction=reduction),
          lambda x, t: nll(x - np.log(np.exp(x).sum(1, keepdims=True)), t, reduction=reduction), logits, target)
    w = rng.random(4) + 0.5
    check(lambda F, x, t, w: F.nll_loss(x, t, w, reduction=reduction),
          lambda x, t, w: nll(x, t, w, reduction=reduction), logits, target, w, fixed=(2,))
    image = rng.standard_normal((2, 3, 2, 2))  # (N, C, d1, d2) with targets (N, d1, d2)
    pixels = np.array([[[0, 2], [1, 5]], [[2, 2], [5, 0]]])
    check(lambda F, x, t: F.nll_loss(x, t, ignore_index=5, reduction=reduction),
          lambda x, t: nll(x, t, ignore_index=5, reduction=reduction), image, pixels)
    check(lambda F, x, t, w: F.nll_loss(x, t, w, reduction=reduction),
          lambda x, t, w: nll(x, t, w, reduction=reduction), logits[0], np.array(2), w, fixed=(2,))  # (C), 0-d


def test_nll_loss_matches_cross_entropy_and_errors():
    x, t = hg.tensor(rng.standard_normal((5, 3))), hg.tensor([0, 2, -100, 1, 1])
    assert abs(F.nll_loss(F.log_softmax(x, 1), t).item() - F.cross_entropy(x, t).item()) < 1e-6
    assert F.nll_loss(x, hg.tensor([-100] * 5)).item() == 0.0  # every target ignored: 0, as cross_entropy
    with pytest.raises(IndexError, match="nll_loss: target 3 is out of bounds"):
        F.nll_loss(x, hg.tensor([0, 3, 1, 1, 1]))
    with pytest.raises(ValueError, match="nll_loss: target"):
        F.nll_loss(x, hg.tensor([0, 1]))
    with pytest.raises(TypeError, match="nll_loss: target must be int64"):
        F.nll_loss(x, hg.tensor([0.0, 1, 1, 1, 1]))
    with pytest.raises(ValueError, match="nll_loss: weight"):
        F.nll_loss(x, t, weight=hg.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="nll_loss: reduction"):
        F.nll_loss(x, t, reduction="batchmean")


PROBS = away_from(rng.random((3, 4)) * 0.9 + 0.05, ())
LABELS = rng.random((3, 4))  # soft labels: the gradient in the target is checked too


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    def bce(p, y):
        return -(y * np.log(p) + (1 - y) * np.log1p(-p))
    check(lambda F, p, y: F.binary_cross_entropy(p, y, reduction=reduction),
          lambda p, y: reduce(bce(p, y), reduction), PROBS, LABELS)
    w = rng.random(4)
    check(lambda F, p, y, w: F.binary_cross_entropy(p, y, w, reduction=reduction),
          lambda p, y, w: reduce(w * bce(p, y), reduction), PROBS, LABELS, w, fixed=(2,))


def test_binary_cross_entropy_bounds_the_log():
    p = hg.tensor([0.0, 1.0, 0.0, 1.0], dtype=hg.float64, requires_grad=True)
    y = hg.tensor([1.0, 0.0, 0.0, 1.0], dtype=hg.float64)
    loss = F.binary_cross_entropy(p, y, reduction="none")
    assert loss.tolist() == [100.0, 100.0, 0.0, 0.0]  # PyTorch's max(log, −100)
    loss.sum().backward()
    assert np.isfinite(p.grad.numpy()).all()


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    logits = rng.standard_normal((3, 4)) * 3

    def bce(x, y, pw=1.0):
        return -(pw * y * np.log(1 / (1 + np.exp(-x))) + (1 - y) * np.log(1 / (1 + np.exp(x))))
    check(lambda F, x, y: F.binary_cross_entropy_with_logits(x, y, reduction=reduction),
          lambda x, y: reduce(bce(x, y), reduction), logits, LABELS)
    pw, w = rng.random(4) * 3, rng.random((3, 1))
    check(lambda F, x, y, w, pw: F.binary_cross_entropy_with_logits(x, y, w, reduction=reduction, pos_weight=pw),
          lambda x, y, w, pw: reduce(w * bce(x, y, pw), reduction), logits, LABELS, w, pw, fixed=(2, 3))
    far = hg.tensor([-800.0, 800.0], requires_grad=True)  # stable: no overflow in either direction
    loss = F.binary_cross_entropy_with_logits(far, hg.tensor([1.0, 0.0]), reduction="none")
    assert loss.tolist() == [800.0, 800.0]
    loss.sum().backward()
    assert far.grad.tolist() == [-1.0, 1.0]


@pytest.mark.parametrize("reduction", REDUCTIONS + ("batchmean",))
def test_kl_div(reduction):
    logq = np.log(rng.dirichlet(np.ones(5), size=3))
    p = rng.dirichlet(np.ones(5), size=3)

    def kl(losses):
        return losses.sum() / 3 if reduction == "batchmean" else reduce(losses, reduction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about 'mean'
        check(lambda F, x, y: F.kl_div(x, y, reduction=reduction), lambda x, y: kl(y * (np.log(y) - x)), logq, p)
        check(lambda F, x, y: F.kl_div(x, y, reduction=reduction, log_target=True),
              lambda x, y: kl(np.exp(y) * (y - x)), logq, np.log(p))
    zero = hg.tensor([[0.0, 1.0]], dtype=hg.float64)  # y = 0 contributes 0, not 0 · log 0 = NaN
    assert F.kl_div(hg.tensor([[-1.0, -0.5]], dtype=hg.float64), zero, reduction="sum").item() == 0.5
