"""hg.nn.init: torch.nn.init's initializers, each writing into a tensor in place (under no_grad,
as PyTorch's do) from the generator hg.manual_seed seeds, and returning it.

    uniform_, normal_, constant_, ones_, zeros_, eye_, xavier_uniform_, xavier_normal_,
    kaiming_uniform_, kaiming_normal_, trunc_normal_, calculate_gain
"""
import math

from .. import _C
from .._C import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "ones_", "zeros_", "eye_", "xavier_uniform_",
           "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "trunc_normal_"]


def _hg():
    import handgrad
    return handgrad


def _tensor(op, t):
    if not isinstance(t, Tensor):
        raise TypeError(f"hg.nn.init.{op}: expected a handgrad Tensor, not {type(t).__name__}")
    if t.dtype not in (_C.dtype.float32, _C.dtype.float64):
        raise TypeError(f"hg.nn.init.{op}: {t.dtype} is not floating point")
    return t


def _write(t, values):
    hg = _hg()
    values = values.to(t.dtype)
    with hg.no_grad():
        t.copy_(values.to(t.device) if t.device != "cpu" else values)
    return t


def _fans(op, t):
    if t.dim() < 2:
        raise ValueError(f"hg.nn.init.{op}: fan in and fan out need a tensor of 2 or more dims, got shape {tuple(t.shape)}")
    receptive = math.prod(t.shape[2:])
    return t.shape[1] * receptive, t.shape[0] * receptive


def calculate_gain(nonlinearity, param=None):
    """The gain PyTorch recommends for a nonlinearity (linear, sigmoid, tanh, relu, leaky_relu, selu)."""
    gains = {"linear": 1.0, "conv1d": 1.0, "conv2d": 1.0, "conv3d": 1.0, "sigmoid": 1.0, "tanh": 5.0 / 3,
             "relu": math.sqrt(2.0), "selu": 3.0 / 4}
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity not in gains:
        raise ValueError(f"hg.nn.init.calculate_gain: unsupported nonlinearity {nonlinearity!r}")
    return gains[nonlinearity]


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    _tensor("uniform_", tensor)
    hg = _hg()
    return _write(tensor, hg.rand(*tensor.shape, generator=generator, dtype=tensor.dtype) * (b - a) + a)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    _tensor("normal_", tensor)
    hg = _hg()
    return _write(tensor, hg.randn(*tensor.shape, generator=generator, dtype=tensor.dtype) * std + mean)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal draws outside [a, b] drawn again until every entry lies inside."""
    _tensor("trunc_normal_", tensor)
    hg = _hg()
    if not a < b:
        raise ValueError(f"hg.nn.init.trunc_normal_: a = {a} must be below b = {b}")
    draws = hg.randn(*tensor.shape, generator=generator, dtype=hg.float64) * std + mean
    for _ in range(100):
        outside = (draws < a) | (draws > b)
        if not outside.any():
            break
        again = hg.randn(*tensor.shape, generator=generator, dtype=hg.float64) * std + mean
        draws = hg.where(outside, again, draws)
    return _write(tensor, draws.clamp(a, b))


def constant_(tensor, val):
    _tensor("constant_", tensor)
    with _hg().no_grad():
        tensor.fill_(float(val))
    return tensor


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def eye_(tensor):
    _tensor("eye_", tensor)
    if tensor.dim() != 2:
        raise ValueError(f"hg.nn.init.eye_: expected a 2-d tensor, got shape {tuple(tensor.shape)}")
    return _write(tensor, _hg().eye(*tensor.shape, dtype=tensor.dtype))


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _fans("xavier_uniform_", _tensor("xavier_uniform_", tensor))
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _fans("xavier_normal_", _tensor("xavier_normal_", tensor))
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(op, tensor, a, mode, nonlinearity):
    fan_in, fan_out = _fans(op, _tensor(op, tensor))
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"hg.nn.init.{op}: mode must be 'fan_in' or 'fan_out', not {mode!r}")
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    bound = math.sqrt(3.0) * _kaiming_std("kaiming_uniform_", tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    return normal_(tensor, 0.0, _kaiming_std("kaiming_normal_", tensor, a, mode, nonlinearity), generator)
