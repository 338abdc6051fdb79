"""The losses of hg.nn.functional (PyTorch's signatures): each a composition of the library's ops,
so the tape differentiates it. hg.nn.functional imports them; cross_entropy (over the library's
fused op and nll_loss) is in _cross_entropy.py."""
import warnings

from .. import _C, _args


# ---- Losses. reduction: 'mean' (the default), 'sum' or 'none' (each element's loss).

def _reduction(reduction, size_average, reduce, op, allowed=("mean", "sum", "none")):
    if size_average is not None or reduce is not None:  # PyTorch's legacy arguments and their rule
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else "mean" if size_average else "sum"
        warnings.warn(f"hg.nn.functional.{op}: size_average and reduce are deprecated, as in PyTorch; use "
                      f"reduction={reduction!r} instead", stacklevel=3)
    if reduction not in allowed:
        names = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"hg.nn.functional.{op}: reduction must be one of {names}, got {reduction!r}")
    return reduction


def _reduce(losses, reduction, weight=None):
    """mean, sum or each loss; a weighted mean divides by the sum of the weights (PyTorch's rule)."""
    if weight is not None:
        losses = losses * weight
        if reduction == "mean":
            return losses.sum() / weight.sum()
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.mean()


def _broadcast_shape(a, b, op, a_name="input", b_name="target"):
    import numpy as np
    try:
        return np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        raise ValueError(f"hg.nn.functional.{op}: {a_name} {tuple(a.shape)} and {b_name} {tuple(b.shape)} do not "
                         "broadcast") from None


def _pair(input, target, op, same_shape=False):
    """Both tensors, of one dtype (the library does not promote float32 with float64); their
    broadcast shape. same_shape: PyTorch refuses different sizes here (it only warns elsewhere)."""
    _args.tensor(f"hg.nn.functional.{op}", input)
    _args.tensor(f"hg.nn.functional.{op}", target, "target")
    if input.dtype != target.dtype:
        raise TypeError(f"hg.nn.functional.{op}: input is {input.dtype} but target is {target.dtype}; convert one "
                        "with .to(dtype)")
    if tuple(input.shape) != tuple(target.shape):
        if same_shape:
            raise ValueError(f"hg.nn.functional.{op}: target {tuple(target.shape)} must have the input's size "
                             f"{tuple(input.shape)}")
        shape = _broadcast_shape(input, target, op)
        warnings.warn(f"hg.nn.functional.{op}: target {tuple(target.shape)} differs from input "
                      f"{tuple(input.shape)}; they are broadcast to {tuple(shape)}, which is likely a mistake",
                      stacklevel=3)


def _weight(weight, input, op):
    if weight is None:
        return None
    _args.tensor(f"hg.nn.functional.{op}", weight, "weight")
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError(f"hg.nn.functional.{op}: weight {tuple(weight.shape)} must have the input's size "
                         f"{tuple(input.shape)}")
    return weight


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(x − y)², reduced; with a weight (input's shape), 'mean' is Σ w (x − y)² / Σ w."""
    reduction = _reduction(reduction, size_average, reduce, "mse_loss")
    _pair(input, target, "mse_loss")
    weight = _weight(weight, input, "mse_loss")
    diff = input - target
    return _reduce(diff * diff, reduction, weight)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|x − y|, reduced (the gradient at x = y is 0, as PyTorch's)."""
    reduction = _reduction(reduction, size_average, reduce, "l1_loss")
    _pair(input, target, "l1_loss")
    weight = _weight(weight, input, "l1_loss")
    return _reduce(abs(input - target), reduction, weight)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d² / β where |d| < β, |d| − 0.5 β elsewhere (d = x − y): quadratic near 0, L1 beyond β;
    β = 0 is the L1 loss."""
    reduction = _reduction(reduction, size_average, reduce, "smooth_l1_loss")
    _pair(input, target, "smooth_l1_loss")
    if beta < 0:
        raise ValueError(f"hg.nn.functional.smooth_l1_loss: beta must not be negative, got {beta}")
    distance = abs(input - target)
    if beta == 0:
        return _reduce(distance, reduction)
    from .. import where
    return _reduce(where(distance < beta, distance * distance * (0.5 / beta), distance - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d² where |d| < δ, δ (|d| − 0.5 δ) elsewhere: smooth_l1_loss with β = δ, times δ. With a
    weight, 'mean' is the mean of w · loss (mse_loss and l1_loss divide by Σ w), as PyTorch's."""
    reduction = _reduction(reduction, None, None, "huber_loss")
    _pair(input, target, "huber_loss")
    if delta <= 0:
        raise ValueError(f"hg.nn.functional.huber_loss: delta must be positive, got {delta}")
    weight = _weight(weight, input, "huber_loss")
    distance = abs(input - target)
    from .. import where
    losses = where(distance < delta, distance * distance * 0.5, (distance - 0.5 * delta) * delta)
    # PyTorch's weighted 'mean' here is the plain mean of the weighted losses (mse and l1: Σ w l / Σ w)
    return _reduce(losses if weight is None else losses * weight, reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """−weight[y] · input[y] for log-probabilities input and int64 class targets y, skipping
    ignore_index: classes at dimension 1 as PyTorch's (input (N, C) or (N, C, d1, ...), target (N)
    or (N, d1, ...); input (C) with a 0-d target). 'mean' divides by the summed weights of the
    targets kept (their count without weight); every target ignored gives 0, as cross_entropy does
    (PyTorch: NaN). nll_loss(log_softmax(x, 1), y) is cross_entropy(x, y)."""
    op = "hg.nn.functional.nll_loss"
    reduction = _reduction(reduction, size_average, reduce, "nll_loss")
    _args.tensor(op, input)
    _args.tensor(op, target, "target")
    hg = _args.hg()
    if target.dtype != hg.int64:
        raise TypeError(f"{op}: target must be int64 class indices, got {target.dtype}")
    expected = tuple(input.shape[:1]) + tuple(input.shape[2:]) if input.dim() >= 2 else ()
    if input.dim() == 0 or tuple(target.shape) != expected:
        raise ValueError(f"{op}: target {tuple(target.shape)} does not match input {tuple(input.shape)} (classes at "
                         f"dimension 1: input (N, C, ...) takes target (N, ...), input (C) a 0-d target)")
    classes = input.shape[1] if input.dim() >= 2 else input.shape[0]
    keep = target != ignore_index
    ids = target.numpy() if target.device == "cpu" else target.cpu().numpy()
    kept = ids[ids != ignore_index]
    if kept.size and (kept.min() < 0 or kept.max() >= classes):
        bad = kept[(kept < 0) | (kept >= classes)][0]
        raise IndexError(f"{op}: target {bad} is out of bounds for {classes} classes")
    if input.dim() > 2:  # classes last, as gather reads them: (N, d1, ..., C)
        input = input.permute(0, *range(2, input.dim()), 1)
    safe = hg.where(keep, target, 0)
    picked = input.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    if weight is None:
        weights = keep.to(input.dtype)
    else:
        _args.tensor(op, weight, "weight")
        if tuple(weight.shape) != (classes,):
            raise ValueError(f"{op}: weight {tuple(weight.shape)} must hold one number per class ({classes})")
        weights = hg.where(keep, weight[safe], 0.0)
    losses = hg.where(keep, -picked * weights, 0.0)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    total = weights.sum()
    return losses.sum() / hg.where(total == 0, 1.0, total)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """−(y log x + (1 − y) log(1 − x)) for probabilities x, each log bounded below by −100 as in
    PyTorch (so x = 0 or 1 gives a finite loss). At x = 0 or 1 the gradient here is 0; PyTorch's
    is (x − y) / 1e-12."""
    op = "binary_cross_entropy"
    reduction = _reduction(reduction, size_average, reduce, op)
    _pair(input, target, op, same_shape=True)
    values = input.detach().cpu().numpy() if input.device != "cpu" else input.detach().numpy()
    if values.size and not ((values >= 0) & (values <= 1)).all():
        raise ValueError(f"hg.nn.functional.{op}: every input must be a probability in [0, 1]")
    if weight is not None:
        _args.tensor(f"hg.nn.functional.{op}", weight, "weight")
        _broadcast_shape(weight, input, op, "weight", "input")
    from .. import clamp, log, where

    def bounded_log(p):  # max(log p, −100); log reads 1 where p = 0, so no inf reaches the gradient
        positive = p > 0
        return where(positive, clamp(log(where(positive, p, 1.0)), min=-100.0), -100.0)
    losses = -(target * bounded_log(input) + (1.0 - target) * bounded_log(1.0 - input))
    if weight is not None:
        losses = losses * weight
    return _reduce(losses, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """binary_cross_entropy of σ(x), computed from the logits x without overflow:
    (1 − y) x + w_p(y) softplus(−x) with w_p(y) = 1 + (pos_weight − 1) y, which for pos_weight None
    is max(x, 0) − x y + log(1 + e^−|x|). pos_weight (C) weighs the positive class of each of the
    last dimension's C columns."""
    op = "binary_cross_entropy_with_logits"
    reduction = _reduction(reduction, size_average, reduce, op)
    _pair(input, target, op, same_shape=True)
    if pos_weight is None:
        losses = (1.0 - target) * input + _C.functional.softplus(-input)
    else:
        _args.tensor(f"hg.nn.functional.{op}", pos_weight, "pos_weight")
        _broadcast_shape(pos_weight, input, op, "pos_weight", "input")
        losses = (1.0 - target) * input + ((pos_weight - 1.0) * target + 1.0) * _C.functional.softplus(-input)
    if weight is not None:
        _args.tensor(f"hg.nn.functional.{op}", weight, "weight")
        _broadcast_shape(weight, input, op, "weight", "input")
        losses = losses * weight
    return _reduce(losses, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """y (log y − x) for log-probabilities x and probabilities y (0 where y = 0), or
    e^y (y − x) when log_target. 'batchmean' is the sum over input.size(0), the KL divergence per
    example; 'mean' divides by every element, as PyTorch's (which warns that it is not the KL)."""
    op = "kl_div"
    reduction = _reduction(reduction, size_average, reduce, op, ("mean", "batchmean", "sum", "none"))
    _pair(input, target, op)
    from .. import exp, log, where
    if log_target:
        losses = exp(target) * (target - input)
    else:
        zero = target == 0  # PyTorch's xlogy(y, y): 0 at y = 0
        losses = where(zero, 0.0, target * log(where(zero, 1.0, target))) - target * input
    if reduction == "batchmean":
        total = losses.sum()
        return total / input.shape[0] if input.dim() != 0 else total
    return _reduce(losses, reduction)
