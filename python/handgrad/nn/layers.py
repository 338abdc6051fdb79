"""hg.nn's layers written in Python over the library's ops: the normalizations (LayerNorm,
RMSNorm), activations (GELU, ReLU), Dropout, the containers (Sequential, ModuleList), and the
transformer block of Module 6 built from them: a feed-forward MLP and a pre-norm TransformerBlock.

Their parameters are the library's tensors, registered by the Module they are assigned to, so
parameters(), state_dict(), to() and the optimizers treat them as they treat Linear's.
"""

from collections import OrderedDict as _OrderedDict

from . import functional as F
from .modules import Linear, Module, Parameter

__all__ = ["LayerNorm", "RMSNorm", "GELU", "ReLU", "Dropout", "Sequential", "ModuleList", "MLP", "TransformerBlock"]


def _ones(shape, dtype):
    from .. import float32, ones
    return ones(*shape, dtype=float32 if dtype is None else dtype)


def _zeros(shape, dtype):
    from .. import float32, zeros
    return zeros(*shape, dtype=float32 if dtype is None else dtype)


class LayerNorm(Module):
    """y = (x − μ) / √(σ² + eps) ∘ weight + bias over the trailing dims normalized_shape names;
    weight starts at ones and bias at zeros (elementwise_affine=False: neither; bias=False: no bias)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, dtype=None):
        super().__init__()
        self.normalized_shape = F._normalized_shape(normalized_shape, "LayerNorm")
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.weight = Parameter(_ones(self.normalized_shape, dtype)) if elementwise_affine else None
        self.bias = Parameter(_zeros(self.normalized_shape, dtype)) if elementwise_affine and bias else None

    def forward(self, input):
        """y for input (..., *normalized_shape), as the class says."""
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class RMSNorm(Module):
    """y = x / √(mean(x²) + eps) ∘ weight over the trailing dims normalized_shape names; eps None is
    the dtype's machine epsilon, as PyTorch's; weight starts at ones."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, dtype=None):
        super().__init__()
        self.normalized_shape = F._normalized_shape(normalized_shape, "RMSNorm")
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.weight = Parameter(_ones(self.normalized_shape, dtype)) if elementwise_affine else None

    def forward(self, input):
        """y for input (..., *normalized_shape), as the class says."""
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GELU(Module):
    """x Φ(x) (approximate='none') or its tanh approximation (approximate='tanh')."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        """GELU of input, elementwise."""
        return F.gelu(input, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class ReLU(Module):
    """max(x, 0)."""

    def __init__(self, inplace=False):
        super().__init__()
        if inplace:
            raise ValueError("ReLU: inplace=True is not implemented")

    def forward(self, input):
        """max(input, 0), elementwise."""
        return F.relu(input)


class Dropout(Module):
    """In training mode each entry is zeroed with probability p and the rest scaled by 1/(1 − p)
    (a mask from hg.manual_seed's generator); in eval mode, and at p = 0, the input itself."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a probability in [0, 1], got {p}")
        if inplace:
            raise ValueError("Dropout: inplace=True is not implemented")
        self.p = p

    def forward(self, input):
        """input with the dropout mask applied in training mode; input itself in eval mode."""
        return F.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class _InOrder(Module):
    """Modules held in order and named by position: their number, iteration over them, one by
    index and a slice as a holder of the same kind."""

    def _of(self, modules):
        raise NotImplementedError

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, index):
        mods = list(self._modules.values())
        return self._of(mods[index]) if isinstance(index, slice) else mods[index]


class Sequential(_InOrder):
    """Modules called one after another; their parameters are named "0.weight", "1.bias", ...
    as PyTorch names them (or by the keys of an OrderedDict given as the one argument)."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], (dict, _OrderedDict)):
            items = list(modules[0].items())
        else:
            items = [(str(i), m) for i, m in enumerate(modules)]
        for name, m in items:
            if not isinstance(m, Module):
                raise TypeError(f"Sequential: {name} is a {type(m).__name__}, not a Module")
            setattr(self, name, m)

    def forward(self, input):
        """input through each module in turn."""
        for m in self._modules.values():
            input = m(input)
        return input

    def append(self, module):
        """module added at the end (named by its position); returns the Sequential."""
        setattr(self, str(len(self._modules)), module)
        return self

    def _of(self, modules):
        return Sequential(*modules)


class ModuleList(_InOrder):
    """A list of modules whose parameters the holder sees ("blocks.0.ln1.weight", ...); it has no
    forward of its own: iterate over it."""

    def __init__(self, modules=None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def append(self, module):
        """module added at the end (named by its position); returns the list."""
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList: {type(module).__name__} is not a Module")
        setattr(self, str(len(self._modules)), module)
        return self

    def extend(self, modules):
        """each of modules appended in turn; returns the list."""
        for m in modules:
            self.append(m)
        return self

    def _of(self, modules):
        return ModuleList(modules)

    def __setitem__(self, index, module):
        keys = list(self._modules)
        setattr(self, keys[index], module)


class MLP(Module):
    """The transformer's feed-forward network, applied to each position on its own:
    fc2(act(fc1(x))) with fc1 Linear(d_model, d_hidden), act GELU (or the module given),
    fc2 Linear(d_hidden, d_model); d_hidden defaults to 4 · d_model."""

    def __init__(self, d_model, d_hidden=None, bias=True, activation=None, dtype=None, generator=None):
        super().__init__()
        d_hidden = 4 * d_model if d_hidden is None else d_hidden
        self.fc1 = Linear(d_model, d_hidden, bias=bias, dtype=dtype, generator=generator)
        self.act = GELU() if activation is None else activation
        self.fc2 = Linear(d_hidden, d_model, bias=bias, dtype=dtype, generator=generator)

    def forward(self, x):
        """fc2(activation(fc1(x))), at each position."""
        return self.fc2(self.act(self.fc1(x)))


class _SelfAttention(Module):
    """Multi-head self-attention as TinyCharLM's blocks compute it: a fused projection qkv
    Linear(d, 3d) cut into num_heads heads of d / num_heads, attention over them (one op, the
    library's attention_qkv, no rotation), the heads merged and projected by proj Linear(d, d)."""

    def __init__(self, d_model, num_heads, causal=True, bias=True, dtype=None, generator=None):
        super().__init__()
        if num_heads < 1 or d_model % num_heads != 0:
            raise ValueError(f"TransformerBlock: d_model {d_model} must split into num_heads {num_heads} equal heads")
        self.num_heads = num_heads
        self.causal = causal
        self.qkv = Linear(d_model, 3 * d_model, bias=bias, dtype=dtype, generator=generator)
        self.proj = Linear(d_model, d_model, bias=bias, dtype=dtype, generator=generator)

    def forward(self, x):
        B, T, d = x.shape                                   # (B, T, d)
        heads = F.attention_qkv(self.qkv(x), self.num_heads, rotate=False, is_causal=self.causal)  # (B, H, T, d_h)
        return self.proj(heads.transpose(1, 2).reshape(B, T, d))  # heads side by side, (B, T, d)

    def extra_repr(self):
        return f"num_heads={self.num_heads}, causal={self.causal}"


class TransformerBlock(Module):
    """One pre-norm transformer block (Module 6, Section 5): each sublayer reads the residual
    stream through a LayerNorm and adds its output back,
        x = x + attn(ln1(x))       multi-head (causal) self-attention
        x = x + mlp(ln2(x))        the feed-forward MLP, d_hidden = 4 · d_model by default
    on x (B, T, d_model) or (T, d_model)."""

    def __init__(self, d_model, num_heads, d_hidden=None, causal=True, bias=True, dtype=None, generator=None):
        super().__init__()
        self.ln1 = LayerNorm(d_model, bias=bias, dtype=dtype)
        self.attn = _SelfAttention(d_model, num_heads, causal, bias, dtype, generator)
        self.ln2 = LayerNorm(d_model, bias=bias, dtype=dtype)
        self.mlp = MLP(d_model, d_hidden, bias, dtype=dtype, generator=generator)

    def forward(self, x):
        """The two residual updates of the class docstring, applied to x."""
        unbatched = x.dim() == 2
        if unbatched:
            x = x.unsqueeze(0)
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x.squeeze(0) if unbatched else x
