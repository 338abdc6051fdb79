"""hg.autograd: grad, gradcheck, gradgradcheck and grad mode, as torch.autograd spells them."""

import functools as _functools
from typing import Tuple as _Tuple

from . import _C
from ._C import Error as _Error, Tensor as _Tensor


class GradcheckError(_Error):
    """A gradient check failed; the message names the worst element (input, index, layout,
    analytic and numeric values)."""


def _tensors(xs):
    if isinstance(xs, _C.Tensor):
        return [xs]
    return list(xs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False) -> _Tuple[_Tensor, ...]:
    """d(sum_k <outputs[k], grad_outputs[k]>) / d inputs, without touching any .grad
    (torch.autograd.grad). Returns a tuple; an unused input gives None under allow_unused."""
    outputs, inputs = _tensors(outputs), _tensors(inputs)
    if grad_outputs is None:
        grad_outputs = []
    elif isinstance(grad_outputs, _C.Tensor):
        grad_outputs = [grad_outputs]
    else:
        grad_outputs = list(grad_outputs)
    return tuple(_C._grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused))


def _check(run, fn, inputs, eps, atol, rtol, raise_exception, noncontiguous):
    report = run(fn, _tensors(inputs), eps, atol, rtol, noncontiguous)
    if report.passed:
        return True
    if raise_exception:
        error = GradcheckError(report.message())
        error.report = report  # .worst, .max_abs_err, .max_rel_err, .checked
        raise error
    return False


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, noncontiguous=True):
    """float64 central differences against the tape's backward (the library's hg::gradcheck):
    True, or GradcheckError (an hg.Error) naming the worst element. fn(*inputs) returns one tensor;
    the inputs that require grad must be float64."""
    return _check(_C._gradcheck, fn, inputs, eps, atol, rtol, raise_exception, noncontiguous)


def fwdcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, noncontiguous=True):
    """The forward-mode check (hg::fwdcheck): fn's tangent along a random direction against float64
    central differences, and the transpose identity <w, J u> = <Jᵀ w, u> against the backward;
    gradcheck's conventions."""
    return _check(_C._fwdcheck, fn, inputs, eps, atol, rtol, raise_exception, noncontiguous)


def gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, noncontiguous=True):
    """The second-order check (hg::gradgradcheck), with gradcheck's conventions."""
    return _check(_C._gradgradcheck, fn, inputs, eps, atol, rtol, raise_exception, noncontiguous)


class set_grad_enabled:
    """Grad mode on or off for a with-block or a decorated function (torch.set_grad_enabled).
    Grad mode belongs to the thread, as in PyTorch."""

    def __init__(self, mode=True):
        self._mode = mode
        self._guards = []

    def __enter__(self):
        guard = _C._GradMode(self._mode)
        guard.__enter__()
        self._guards.append(guard)
        return self

    def __exit__(self, *exc):
        self._guards.pop().__exit__(*exc)
        return False

    def __call__(self, fn):
        @_functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self.__class__(self._mode):
                return fn(*args, **kwargs)
        return wrapped


class no_grad(set_grad_enabled):
    """Ops record nothing inside (torch.no_grad): results do not require grad."""

    def __init__(self):
        super().__init__(False)

    def __call__(self, fn):
        @_functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)
        return wrapped


class enable_grad(set_grad_enabled):
    """Ops record again inside, even within no_grad (torch.enable_grad)."""

    def __init__(self):
        super().__init__(True)

    def __call__(self, fn):
        @_functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with enable_grad():
                return fn(*args, **kwargs)
        return wrapped


class detect_anomaly:
    """Inside, a recorded op whose forward turns finite inputs into NaN or Inf, or a backward
    that turns finite gradients into NaN or Inf, raises hg.Error naming the op, its inputs'
    shapes and the file:line that called it (torch.autograd.detect_anomaly). Per thread; also
    a decorator."""

    def __init__(self, check_nan=True):
        self._mode = _C._AnomalyMode(bool(check_nan))

    def __enter__(self):
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        self._mode.__exit__(*exc)
        return False

    def __call__(self, fn):
        @_functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with detect_anomaly():
                return fn(*args, **kwargs)
        return wrapped


class set_detect_anomaly(detect_anomaly):
    """Anomaly mode on or off inside (torch.autograd.set_detect_anomaly(mode))."""

    def __init__(self, mode, check_nan=True):
        super().__init__(bool(mode) and check_nan)


def is_anomaly_enabled():
    """Whether anomaly detection (detect_anomaly / set_detect_anomaly) is on."""
    return _C.is_anomaly_enabled()


from . import forward_ad  # noqa: E402  (hg.autograd.forward_ad, as torch.autograd.forward_ad)
from . import autograd_functional as functional  # noqa: E402  (hg.autograd.functional, as torch.autograd.functional)

__all__ = ["grad", "gradcheck", "fwdcheck", "forward_ad", "functional", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "gradgradcheck", "GradcheckError", "no_grad", "enable_grad", "set_grad_enabled"]
