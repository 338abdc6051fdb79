"""hg.nn.functional.cross_entropy, PyTorch's signature and its three cases: int64 class targets
(the library's fused op for the plain mean, nll_loss of log_softmax otherwise), class targets with
label smoothing, and class-probability targets (a float target of the input's shape). Each case
other than the fused mean is a composition of recorded ops, so the tape differentiates it (in the
target too, for probability targets)."""
import numbers

from .. import _C, _args
from .._args import dtype_name
from ._losses import _reduction, nll_loss

_OP = "hg.nn.functional.cross_entropy"


def _class_weight(weight, input, classes):
    """weight checked to hold one number per class, in the input's dtype; None stays None."""
    if weight is None:
        return None
    _args.tensor(_OP, weight, "weight")
    if tuple(weight.shape) != (classes,):
        raise ValueError(f"{_OP}: weight {tuple(weight.shape)} must hold one number per class: shape ({classes},) "
                         f"for input {tuple(input.shape)} (classes at dimension {0 if input.dim() == 1 else 1})")
    if weight.dtype != input.dtype:
        raise TypeError(f"{_OP}: weight is {dtype_name(weight.dtype)} but input is {dtype_name(input.dtype)}; convert "
                        "one with .to(dtype)")
    return weight


def _along_classes(weight, input):
    """weight (C) shaped to broadcast along the input's class dimension: (C, 1, ..., 1)."""
    return weight if input.dim() <= 1 else weight.reshape(-1, *([1] * (input.dim() - 2)))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """The cross-entropy between logits ``input`` and ``target``, PyTorch's rules. The classes are
    dimension 1 of input (N, C, d1, ...), dimension 0 of a 1-D input (C). target is either

    - int64 class indices of shape (N, d1, ...) (0-d for a 1-D input): the loss at each position
      is −weight[y] · log_softmax(input)[y], 0 where y == ignore_index; or
    - class probabilities, a float tensor of the input's own shape: the loss at each position is
      −Σ_c weight[c] · target[c] · log_softmax(input)[c] (ignore_index must then stay negative).

    weight (C) rescales each class. label_smoothing ε in [0, 1] mixes the target with the uniform
    distribution: (1 − ε) · target + ε / C for probabilities, and for class indices
    (1 − ε) · loss + ε / C · Σ_c −weight[c] · log_softmax(input)[c] (a negative ε counts as 0,
    as in PyTorch). reduction: 'none' (each position's loss), 'sum', or 'mean': for class indices
    the sum divided by the summed weight[y] of the targets kept (their count without weight), for
    probabilities the sum divided by the number of positions N · d1 · ... (not by the weights).
    size_average and reduce are PyTorch's deprecated spellings of reduction.

    As in the library's other losses, a mean over class indices whose every target is ignored
    (or an empty batch) is 0 (PyTorch: NaN); an empty batch of probabilities gives NaN, as in
    PyTorch. The plain case (class indices, no weight, no smoothing, 'mean') is the library's
    fused op; the rest are compositions of recorded ops, differentiable to any order."""
    reduction = _reduction(reduction, size_average, reduce, "cross_entropy")
    _args.tensor(_OP, input)
    _args.tensor(_OP, target, "target")
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, numbers.Real):
        raise TypeError(f"{_OP}: label_smoothing must be a number in [0, 1], got {label_smoothing!r}")
    if label_smoothing > 1.0:
        raise ValueError(f"{_OP}: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, numbers.Integral):
        raise TypeError(f"{_OP}: ignore_index must be an int, got {ignore_index!r}")
    if input.dim() == 0:
        raise ValueError(f"{_OP}: input must have the classes in a dimension: (C), (N, C) or (N, C, d1, ...); got a "
                         "0-d tensor")
    classes = input.shape[0 if input.dim() == 1 else 1]
    weight = _class_weight(weight, input, classes)
    if tuple(target.shape) == tuple(input.shape):
        return _probabilities(input, target, weight, ignore_index, reduction, label_smoothing, classes)
    if target.dtype != _args.hg().int64:
        raise TypeError(f"{_OP}: target {tuple(target.shape)} {dtype_name(target.dtype)} must be int64 class indices "
                        f"of shape {_class_target_shape(input)}, or class probabilities of the input's shape "
                        f"{tuple(input.shape)}")
    if tuple(target.shape) != _class_target_shape(input):
        raise _C.Error(f"{_OP}: target {tuple(target.shape)} does not fit input {tuple(input.shape)}: class indices "
                         f"have the input's shape without its class dimension "
                         f"({'dimension 1' if input.dim() >= 2 else 'its only dimension'}, of size {classes}), "
                         f"{_class_target_shape(input)}")
    if label_smoothing > 0.0:
        return _smoothed(input, target, weight, ignore_index, reduction, label_smoothing, classes)
    if weight is None and reduction == "mean":  # the library's fused op takes the classes last
        if input.dim() > 2:
            input = input.permute(0, *range(2, input.dim()), 1)
        return _C.functional.cross_entropy(input, target, ignore_index)
    return nll_loss(_C.log_softmax(input, 0 if input.dim() == 1 else 1), target, weight, ignore_index=ignore_index,
                    reduction=reduction)


def _class_target_shape(input):
    return tuple(input.shape[:1]) + tuple(input.shape[2:]) if input.dim() >= 2 else ()


def _probabilities(input, target, weight, ignore_index, reduction, label_smoothing, classes):
    """−Σ_c w_c t_c log_softmax(x)_c per position, reduced (PyTorch's mean: over the positions)."""
    if target.dtype not in (_args.hg().float32, _args.hg().float64):
        raise TypeError(f"{_OP}: a target of the input's shape {tuple(input.shape)} holds class probabilities and "
                        f"must be a float tensor, got {dtype_name(target.dtype)}; class indices are int64 of shape "
                        f"{_class_target_shape(input)}")
    if ignore_index >= 0:
        raise ValueError(f"{_OP}: ignore_index ({ignore_index}) is not supported for class-probability targets; "
                         "leave it at its default")
    if target.dtype != input.dtype:
        raise TypeError(f"{_OP}: target is {dtype_name(target.dtype)} but input is {dtype_name(input.dtype)}; convert "
                        "one with .to(dtype)")
    class_dim = 0 if input.dim() == 1 else 1
    log_p = _C.log_softmax(input, class_dim)
    if label_smoothing > 0.0:
        target = target * (1.0 - label_smoothing) + label_smoothing / classes
    terms = log_p * target
    if weight is not None:
        terms = terms * _along_classes(weight, input)
    if reduction == "none":
        return -terms.sum(class_dim)
    total = -terms.sum()
    if reduction == "sum":
        return total
    positions = input.numel() // max(classes, 1)
    return total / positions if positions else total * float("nan")


def _smoothed(input, target, weight, ignore_index, reduction, label_smoothing, classes):
    """(1 − ε) nll + ε / C · smooth, smooth = −Σ_c w_c log_softmax(x)_c at each kept position."""
    hg = _args.hg()
    class_dim = 0 if input.dim() == 1 else 1
    log_p = _C.log_softmax(input, class_dim)
    nll = nll_loss(log_p, target, weight, ignore_index=ignore_index, reduction=reduction)  # checks target too
    keep = target != ignore_index
    smooth = -(log_p if weight is None else log_p * _along_classes(weight, input)).sum(class_dim)
    smooth = hg.where(keep, smooth, 0.0)
    if reduction == "mean":
        kept = keep.to(input.dtype) if weight is None else hg.where(keep, weight[hg.where(keep, target, 0)], 0.0)
        total = kept.sum()
        smooth = smooth.sum() / hg.where(total == 0, 1.0, total)  # nothing kept: 0, as nll_loss gives
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1.0 - label_smoothing) + smooth * (label_smoothing / classes)
