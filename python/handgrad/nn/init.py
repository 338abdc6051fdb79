"""hg.nn.init: torch.nn.init's initializers, each writing into a tensor in place (under no_grad,
as PyTorch's do) from the generator hg.manual_seed seeds, and returning it.

    uniform_, normal_, constant_, ones_, zeros_, eye_, xavier_uniform_, xavier_normal_,
    kaiming_uniform_, kaiming_normal_, trunc_normal_, calculate_gain
"""
import math as _math

from .. import _args

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "ones_", "zeros_", "eye_", "xavier_uniform_",
           "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "trunc_normal_"]


def _write(t, values):
    hg = _args.hg()
    values = values.to(t.dtype)
    with hg.no_grad():
        t.copy_(values.to(t.device) if t.device != "cpu" else values)
    return t


def _fans(op, t):
    if t.dim() < 2:
        raise ValueError(f"hg.nn.init.{op}: fan in and fan out need a tensor of 2 or more dims, got shape {tuple(t.shape)}")
    receptive = _math.prod(t.shape[2:])
    return t.shape[1] * receptive, t.shape[0] * receptive


def calculate_gain(nonlinearity, param=None):
    """The gain PyTorch recommends for a nonlinearity (linear, sigmoid, tanh, relu, leaky_relu, selu)."""
    gains = {"linear": 1.0, "conv1d": 1.0, "conv2d": 1.0, "conv3d": 1.0, "sigmoid": 1.0, "tanh": 5.0 / 3,
             "relu": _math.sqrt(2.0), "selu": 3.0 / 4}
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return _math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity not in gains:
        raise ValueError(f"hg.nn.init.calculate_gain: unsupported nonlinearity {nonlinearity!r}")
    return gains[nonlinearity]


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fills tensor with draws from U(a, b), in place; returns it."""
    _args.float_tensor("hg.nn.init.uniform_", tensor)
    hg = _args.hg()
    return _write(tensor, hg.rand(*tensor.shape, generator=generator, dtype=tensor.dtype) * (b - a) + a)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fills tensor with draws from N(mean, std²), in place; returns it."""
    _args.float_tensor("hg.nn.init.normal_", tensor)
    hg = _args.hg()
    return _write(tensor, hg.randn(*tensor.shape, generator=generator, dtype=tensor.dtype) * std + mean)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal draws outside [a, b] drawn again until every entry lies inside."""
    _args.float_tensor("hg.nn.init.trunc_normal_", tensor)
    hg = _args.hg()
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
    """Fills tensor with val, in place; returns it."""
    _args.float_tensor("hg.nn.init.constant_", tensor)
    with _args.hg().no_grad():
        tensor.fill_(float(val))
    return tensor


def ones_(tensor):
    """Fills tensor with 1, in place; returns it."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fills tensor with 0, in place; returns it."""
    return constant_(tensor, 0.0)


def eye_(tensor):
    """Writes the identity matrix into a 2-d tensor (ones on the diagonal), in place; returns it."""
    _args.float_tensor("hg.nn.init.eye_", tensor)
    if tensor.dim() != 2:
        raise ValueError(f"hg.nn.init.eye_: expected a 2-d tensor, got shape {tuple(tensor.shape)}")
    return _write(tensor, _args.hg().eye(*tensor.shape, dtype=tensor.dtype))


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot's uniform init: U(-b, b) with b = gain · √(6 / (fan_in + fan_out)), in place; returns tensor."""
    fan_in, fan_out = _fans("xavier_uniform_", _args.float_tensor("hg.nn.init.xavier_uniform_", tensor))
    bound = gain * _math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot's normal init: N(0, std²) with std = gain · √(2 / (fan_in + fan_out)), in place; returns tensor."""
    fan_in, fan_out = _fans("xavier_normal_", _args.float_tensor("hg.nn.init.xavier_normal_", tensor))
    return normal_(tensor, 0.0, gain * _math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(op, tensor, a, mode, nonlinearity):
    fan_in, fan_out = _fans(op, _args.float_tensor(f"hg.nn.init.{op}", tensor))
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"hg.nn.init.{op}: mode must be 'fan_in' or 'fan_out', not {mode!r}")
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / _math.sqrt(fan)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He's uniform init: U(-b, b) with b = √3 · gain / √fan (fan: fan_in or fan_out by mode; gain from nonlinearity
    and a), in place; returns tensor."""
    bound = _math.sqrt(3.0) * _kaiming_std("kaiming_uniform_", tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He's normal init: N(0, std²) with std = gain / √fan (fan: fan_in or fan_out by mode; gain from nonlinearity and
    a), in place; returns tensor."""
    return normal_(tensor, 0.0, _kaiming_std("kaiming_normal_", tensor, a, mode, nonlinearity), generator)
