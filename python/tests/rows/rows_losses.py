"""Rows of hg.nn.functional's losses: mse_loss, l1_loss, smooth_l1_loss, huber_loss, nll_loss,
cross_entropy, binary_cross_entropy, binary_cross_entropy_with_logits, kl_div."""

import numpy as np

from . import Const, F32, Int, Row, Sample
from .samples import uniform

REDUCTIONS = ("mean", "sum", "none")
ALL_IGNORED = "a mean loss whose every target is ignored is 0 (PyTorch: nan, the mean of nothing)"


def _loss(name):
    return lambda m, *args, **kw: getattr(m.nn.functional, name)(*args, **kw)


def _pointwise(rng, kwargs=None, weight=False, kinks=None):
    """Samples of a loss of (input, target) of one shape: each reduction, 0-d, empty (mean: nan),
    float32, and a weight of input's shape (weight). kinks: (a, b) values of |x − y| to keep away from."""
    kwargs = kwargs or {}

    def pair(shape):
        x, y = uniform(rng, shape, (-2, 2)), uniform(rng, shape, (-2, 2))
        if kinks:  # move |x − y| away from each kink (non-smooth there)
            for k in kinks:
                d = np.abs(x - y)
                x = np.where(np.abs(d - k) < 0.05, x + 0.2 * np.sign(x - y + 1e-9), x)
        return x, y
    out = [Sample(pair((3, 4)), {**kwargs, "reduction": r}, f"reduction {r}") for r in REDUCTIONS]
    out += [Sample(pair(()), kwargs, "0-d"),
            Sample(pair((0, 3)), {**kwargs, "reduction": "sum"}, "empty, sum"),
            Sample(pair((0, 3)), kwargs, "empty, mean (nan)", grad=False),
            Sample(tuple(F32(a) for a in pair((2, 3))), kwargs, "float32")]
    if kinks:  # |x − y| at each kink: PyTorch's subgradient there
        y = uniform(rng, (2 * len(kinks),))
        d = np.array([k * sign for k in kinks for sign in (1.0, -1.0)])
        out.append(Sample((y + d, y), {**kwargs, "reduction": "sum"}, "at the kinks", kink=True))
    if weight:
        x, y = pair((2, 3))
        w = Const(uniform(rng, (2, 3), (0.5, 2)))
        out += [Sample((x, y), {**kwargs, "weight": w}, "weight, mean"),
                Sample((x, y), {**kwargs, "weight": w, "reduction": "sum"}, "weight, sum")]
    return out


def _log_probs(rng, shape, axis=1):
    x = uniform(rng, shape)
    return x - np.log(np.exp(x).sum(axis=axis, keepdims=True))


def _nll(rng):
    lp = _log_probs(rng, (4, 3))
    t = Int([0, 2, 1, 2])
    return [Sample((lp, t), {"reduction": r}, f"reduction {r}") for r in REDUCTIONS] + [
        Sample((lp, t), {"weight": Const(np.array([0.5, 2.0, 1.0]))}, "weight"),
        Sample((lp, t), {"weight": Const(np.array([0.5, 2.0, 1.0])), "reduction": "sum"}, "weight, sum"),
        Sample((lp, Int([0, -100, 1, -100])), {}, "ignore_index -100"),
        Sample((lp, Int([0, 2, 1, 2])), {"ignore_index": 2}, "ignore_index 2"),
        Sample((lp, Int([0, 2, 1, 2])), {"ignore_index": 2, "weight": Const(np.array([0.5, 2.0, 1.0]))},
               "ignore_index and weight"),
        Sample((_log_probs(rng, (2, 3, 4)), Int([[0, 1, 2, 0], [2, 2, 1, 0]])), {}, "(N, C, d)"),
        Sample((_log_probs(rng, (2, 3, 4)), Int([[0, 1, 2, 0], [2, 2, 1, 0]])), {"reduction": "none"},
               "(N, C, d), none"),
        Sample((_log_probs(rng, (3,), 0), Int(1)), {}, "1-d input, 0-d target"),
        Sample((lp, Int([-100] * 4)), {}, "every target ignored", differs=ALL_IGNORED, expect=np.array(0.0)),
        Sample((F32(lp), t), {}, "float32")]


def _cross_entropy(rng):
    x = uniform(rng, (4, 3), (-3, 3))
    t = Int([0, 2, 1, 2])
    return [Sample((x, t), {"reduction": r}, f"reduction {r}") for r in REDUCTIONS] + [
        Sample((x, Int([0, -100, 1, -100])), {}, "ignore_index -100"),
        Sample((x, t), {"ignore_index": 1, "reduction": "sum"}, "ignore_index 1, sum"),
        Sample((uniform(rng, (2, 3, 4)), Int([[0, 1, 2, 0], [2, 2, 1, 0]])), {}, "(N, C, d)"),
        Sample((uniform(rng, (2, 3, 2, 2)), Int([[[0, 1], [2, 0]], [[2, 2], [1, 0]]])), {"reduction": "none"},
               "(N, C, d1, d2), none"),
        Sample((uniform(rng, (3,)), Int(1)), {}, "1-d input, 0-d target"),
        Sample((np.array([[1e300, -1e300, 0.0], [-50.0, 50.0, 0.0]]), Int([1, 0])), {}, "huge logits", grad=False),
        Sample((x, Int([-100] * 4)), {}, "every target ignored", differs=ALL_IGNORED, expect=np.array(0.0)),
        Sample((F32(x), t), {}, "float32")]


def _bce(rng):
    x, y = uniform(rng, (3, 4), (0.05, 0.95)), uniform(rng, (3, 4), (0, 1))
    w = Const(uniform(rng, (3, 4), (0.5, 2)))
    return [Sample((x, y), {"reduction": r}, f"reduction {r}") for r in REDUCTIONS] + [
        Sample((x, y), {"weight": w}, "weight"),
        Sample((x, Const(np.round(y))), {}, "0/1 targets"),
        Sample((uniform(rng, (), (0.1, 0.9)), uniform(rng, (), (0, 1))), {}, "0-d"),
        Sample((np.array([0.0, 1.0, 0.0, 1.0, 1e-300]), Const(np.array([0.0, 1.0, 1.0, 0.0, 1.0]))), {},
               "probabilities 0 and 1 (each log bounded by -100)", grad=False),
        Sample((F32(x), F32(y)), {}, "float32")]


def _bce_logits(rng):
    x, y = uniform(rng, (3, 4), (-3, 3)), uniform(rng, (3, 4), (0, 1))
    return [Sample((x, y), {"reduction": r}, f"reduction {r}") for r in REDUCTIONS] + [
        Sample((x, y), {"weight": Const(uniform(rng, (3, 4), (0.5, 2)))}, "weight"),
        Sample((x, y), {"pos_weight": Const(uniform(rng, (4,), (0.5, 3)))}, "pos_weight"),
        Sample((x, y), {"pos_weight": Const(uniform(rng, (4,), (0.5, 3))),
                        "weight": Const(uniform(rng, (3, 4), (0.5, 2))), "reduction": "sum"}, "pos_weight and weight, sum"),
        Sample((np.array([1e300, -1e300, 800.0, -800.0, 0.0]), Const(np.array([0.0, 1.0, 0.5, 0.5, 0.5]))), {},
               "huge logits", grad=False),
        Sample((F32(x), F32(y)), {}, "float32")]


def _kl(rng):
    lp = _log_probs(rng, (3, 4))
    p = np.exp(_log_probs(rng, (3, 4)))
    p0 = p.copy()
    p0[0, 1] = 0.0
    return [Sample((lp, p), {"reduction": r}, f"reduction {r}") for r in REDUCTIONS + ("batchmean",)] + [
        Sample((lp, np.log(p)), {"log_target": True, "reduction": "batchmean"}, "log_target"),
        Sample((lp, Const(p0)), {"reduction": "sum"}, "a zero target"),
        Sample((uniform(rng, ()), uniform(rng, (), (0.1, 1))), {"reduction": "batchmean"}, "0-d, batchmean"),
        Sample((F32(lp), F32(p)), {"reduction": "batchmean"}, "float32")]


ROWS = [
    Row("F.mse_loss", _loss("mse_loss"), lambda rng: _pointwise(rng, weight=True)),
    Row("F.l1_loss", _loss("l1_loss"), lambda rng: _pointwise(rng, weight=True, kinks=(0.0,))),
    Row("F.smooth_l1_loss", _loss("smooth_l1_loss"), lambda rng: _pointwise(rng, kinks=(0.0, 1.0))),
    Row("F.smooth_l1_loss", _loss("smooth_l1_loss"), lambda rng: _pointwise(rng, {"beta": 0.5}, kinks=(0.0, 0.5))),
    Row("F.smooth_l1_loss", _loss("smooth_l1_loss"), lambda rng: _pointwise(rng, {"beta": 0.0}, kinks=(0.0,))),
    Row("F.huber_loss", _loss("huber_loss"), lambda rng: _pointwise(rng, weight=True, kinks=(0.0, 1.0))),
    Row("F.huber_loss", _loss("huber_loss"), lambda rng: _pointwise(rng, {"delta": 0.5}, kinks=(0.0, 0.5))),
    Row("F.nll_loss", _loss("nll_loss"), _nll),
    Row("F.cross_entropy", _loss("cross_entropy"), _cross_entropy),
    Row("F.binary_cross_entropy", _loss("binary_cross_entropy"), _bce),
    Row("F.binary_cross_entropy_with_logits", _loss("binary_cross_entropy_with_logits"), _bce_logits),
    Row("F.kl_div", _loss("kl_div"), _kl),
]
