"""hg.optim: SGD and AdamW, the library's optimizers (nn/optim.h), spelled as torch.optim spells them.

step() updates the parameters in place in C++ (without the GIL), so the tensors the model and
Python hold see the new values; parameters without a gradient are skipped, as in PyTorch.
"""

from . import _C

__all__ = ["Optimizer", "SGD", "AdamW"]


def _param_list(params, name):
    params = list(params)
    if any(isinstance(p, dict) for p in params):
        raise NotImplementedError(f"hg.optim.{name}: parameter groups (dicts) are not supported; pass the tensors")
    if not params:
        raise ValueError(f"hg.optim.{name}: got an empty parameter list")
    return params


class Optimizer:
    """What SGD and AdamW share: step(), zero_grad(), param_groups (one group)."""

    def __init__(self, cpp, params, defaults):
        self._cpp = cpp
        self.defaults = dict(defaults)
        self.param_groups = [dict(defaults, params=params)]

    def step(self, closure=None):
        """One update of every parameter from its .grad; closure (if given) recomputes the loss first, under grad mode,
        and its value is returned."""
        loss = None
        if closure is not None:
            from .autograd import enable_grad
            with enable_grad():
                loss = closure()
        self._cpp.step()
        return loss

    def zero_grad(self, set_to_none=True):
        """Drops every parameter's gradient (set_to_none=False zeroes it in place instead)."""
        if set_to_none:
            self._cpp.zero_grad()
            return
        for p in self._cpp.params():
            if p.grad is not None:
                g = p.grad
                g.zero_()

    def to(self, device):
        """Moves the optimizer's state to device, after the model's parameters were moved there."""
        self._cpp.to_device(device)
        return self

    def __repr__(self):
        opts = ", ".join(f"{k}={v}" for k, v in self.defaults.items())
        return f"{type(self).__name__}({opts})"


class SGD(Optimizer):
    """p -= lr * (g + weight_decay * p), with momentum as torch.optim.SGD computes it
    (dampening 0, no Nesterov)."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        if dampening != 0.0 or nesterov:
            raise NotImplementedError("hg.optim.SGD: dampening and nesterov are not implemented")
        params = _param_list(params, "SGD")
        super().__init__(_C.nn.SGD(params, lr, momentum, weight_decay), params,
                         {"lr": lr, "momentum": momentum, "weight_decay": weight_decay})


class AdamW(Optimizer):
    """AdamW exactly as torch.optim.AdamW computes it: decoupled weight decay p *= 1 - lr·wd, then
    m = β1 m + (1 - β1) g, v = β2 v + (1 - β2) g², p -= lr / (1 - β1ᵗ) · m / (√v / √(1 - β2ᵗ) + eps)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False):
        if amsgrad:
            raise NotImplementedError("hg.optim.AdamW: amsgrad is not implemented")
        params = _param_list(params, "AdamW")
        b1, b2 = betas
        super().__init__(_C.nn.AdamW(params, lr, b1, b2, eps, weight_decay), params,
                         {"lr": lr, "betas": (b1, b2), "eps": eps, "weight_decay": weight_decay})

    @property
    def steps(self):
        """How many times step() has run."""
        return self._cpp.steps

    def state_of(self, i):
        """Parameter i's moments (exp_avg, exp_avg_sq), as PyTorch's state[p] names them."""
        return {"exp_avg": self._cpp.exp_avg[i], "exp_avg_sq": self._cpp.exp_avg_sq[i]}
