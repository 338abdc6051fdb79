"""hg.nn's modules: Module, Linear, Embedding and TinyCharLM, spelled as torch.nn spells them.

Linear, Embedding and TinyCharLM are the C++ library's modules (nn/module.h, nn/tinycharlm.h):
their parameters are the library's tensors themselves, so a gradient the C++ backward writes and
an update an optimizer makes in place are what Python sees. A Python Module registers the modules
and parameters assigned to its attributes, as torch.nn.Module does.
"""

from collections import OrderedDict as _OrderedDict

from .. import _C
from .._C import Error, Tensor

__all__ = ["Module", "Parameter", "Linear", "Embedding", "TinyCharLM"]


def _default_generator(generator):
    if generator is not None:
        return generator
    from .._factories import _default_generator as g  # hg.manual_seed reseeds it, as torch.manual_seed does
    return g


def _dtype(dtype):
    return _C.dtype.float32 if dtype is None else dtype


def Parameter(data, requires_grad=True):  # noqa: N802 (torch.nn.Parameter's spelling)
    """A leaf tensor that a Module registers when it is assigned to an attribute. handgrad has no
    Parameter class: any leaf tensor that requires grad, assigned to a Module, is a parameter."""
    t = data.detach() if data.grad_fn is not None else data
    return t.requires_grad_(requires_grad)


class Module:
    """The base of every module: parameters()/named_parameters() (depth first, in the order the
    attributes were assigned), zero_grad(), train()/eval(), state_dict()/load_state_dict(), to(),
    and __call__ running forward()."""

    _cpp = None  # the library's module, for Linear, Embedding and TinyCharLM

    def __init__(self):
        object.__setattr__(self, "_parameters", _OrderedDict())
        object.__setattr__(self, "_modules", _OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_modules" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before assigning '{name}'")
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Module):
            self._modules[name] = value
        elif isinstance(value, Tensor) and value.is_leaf and value.requires_grad:
            self._parameters[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        """Registers param as a parameter under name (setattr(self, name, Parameter(param)))."""
        setattr(self, name, Parameter(param))

    def forward(self, *args, **kwargs):
        """The module's computation; a subclass defines it, and calling the module runs it."""
        raise NotImplementedError(f"{type(self).__name__} has no forward(); define one")

    def __call__(self, *args, **kwargs):
        """module(*args) is module.forward(*args)."""
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------ parameters
    def named_parameters(self, prefix="", recurse=True):
        """(name, tensor) pairs, dotted as PyTorch names them ("blks.0.qkv.weight")."""
        dot = prefix + "." if prefix else ""
        if self._cpp is not None:
            for name, p in self._cpp.named_parameters():
                yield dot + name, p
        for name, p in self._parameters.items():
            yield dot + name, p
        if recurse:
            for name, m in self._modules.items():
                yield from m.named_parameters(dot + name)

    def parameters(self, recurse=True):
        """The parameters (this module's, then its submodules' when recurse), in the order named_parameters gives."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_modules(self, prefix=""):
        """(name, module) pairs: this module (named prefix) and every module below it, depth first."""
        yield prefix, self
        for name, m in self._modules.items():
            yield from m.named_modules(prefix + "." + name if prefix else name)

    def modules(self):
        """This module and every module below it, depth first."""
        for _, m in self.named_modules():
            yield m

    def children(self):
        """The direct submodules, in the order they were assigned."""
        return iter(self._modules.values())

    def zero_grad(self, set_to_none=True):
        """Drops every parameter's gradient (set_to_none=False zeroes it in place instead)."""
        for p in self.parameters():
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                g = p.grad
                g.zero_()

    def train(self, mode=True):
        """Sets training mode here and below: Dropout draws its mask only in training mode; no other
        module of handgrad's computes differently."""
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        """Evaluation mode here and below: train(False)."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Starts (or stops) every parameter recording gradients; returns the module."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    # ------------------------------------------------------------ state and devices
    def state_dict(self):
        """An ordered dict name -> parameter (the parameters themselves, not copies)."""
        return _OrderedDict(self.named_parameters())

    def load_state_dict(self, state_dict, strict=True):
        """Copies values into the parameters by name. Every name must match and every shape and
        dtype agree (strict=False is not supported): a failed load leaves the module unchanged."""
        if not strict:
            raise NotImplementedError("load_state_dict: only strict=True is implemented")
        values = list(state_dict.items())
        if self._cpp is not None and not self._parameters and not self._modules:
            self._cpp.load_parameters(values)
            return self
        mine = dict(self.named_parameters())
        missing = [k for k in mine if k not in state_dict]
        unexpected = [k for k in state_dict if k not in mine]
        mismatched = [f"{k}: given {tuple(v.shape)} {v.dtype}, the module has {tuple(mine[k].shape)} {mine[k].dtype}"
                      for k, v in values if k in mine and (v.shape != mine[k].shape or v.dtype != mine[k].dtype)]
        if missing or unexpected or mismatched:
            raise Error(f"load_state_dict: the values do not match {type(self).__name__}'s {len(mine)} parameters:"
                        + (f"\n  missing: {', '.join(missing)}" if missing else "")
                        + (f"\n  unexpected: {', '.join(unexpected)}" if unexpected else "")
                        + (f"\n  shape or dtype differs: {'; '.join(mismatched)}" if mismatched else ""))
        from ..autograd import no_grad
        with no_grad():
            for k, v in values:
                mine[k].copy_(v)
        return self

    def to(self, device_or_dtype):
        """Moves every parameter to a device ("cpu", "cuda") or converts it to a dtype, in place:
        each parameter stays the same tensor (optimizers built before still hold it). The library
        moves them: its own modules' with their Module::to, and the tensors a Python module holds
        (LayerNorm's weight, ...) registered under their names in a library Module of their own."""
        movers, frozen = [], []
        for m in self.modules():
            if m._cpp is not None:
                movers.append(m._cpp)
            if m._parameters:
                frozen += [p for p in m._parameters.values() if not p.requires_grad]
                movers.append(_C.nn.Parameters(list(m._parameters.items())))  # registering sets requires_grad
        for p in frozen:
            p.requires_grad_(False)
        for mover in movers:
            if isinstance(device_or_dtype, str):
                mover.to_device(device_or_dtype)
            else:
                mover.to_dtype(device_or_dtype)
        return self

    def cpu(self):
        """Every parameter moved to the CPU, in place: to('cpu')."""
        return self.to("cpu")

    def cuda(self):
        """Every parameter moved to the GPU, in place: to('cuda')."""
        return self.to("cuda")

    def float(self):
        """Every parameter converted to float32, in place."""
        return self.to(_C.dtype.float32)

    def double(self):
        """Every parameter converted to float64, in place."""
        return self.to(_C.dtype.float64)

    def extra_repr(self):
        """The module's settings as repr() shows them inside its parentheses (a subclass fills it in)."""
        return ""

    def __repr__(self):
        lines = [f"({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + (")" if not lines else "\n  " + "\n  ".join(lines) + "\n)")


class _Wrapped(Module):
    """A Python face for a C++ module of the library: made here (Linear, Embedding) or by it (a
    TinyCharLM's submodules)."""

    def __init__(self, cpp):
        super().__init__()
        object.__setattr__(self, "_cpp", cpp)

    def forward(self, input):
        """The library's forward of this module (Linear's input @ weight.T + bias over input's last
        dim, Embedding's weight[input] for int64 indices)."""
        return self._cpp.forward(input)


def _from_cpp(attr, doc):
    """A read-only property: the C++ module's attribute of that name."""
    return property(lambda self: getattr(self._cpp, attr), doc=doc)


def _weight_size(dim, doc):
    """A read-only property: the weight's size along dim."""
    return property(lambda self: self.weight.shape[dim], doc=doc)


class Linear(_Wrapped):
    """y = x Wᵀ + b with W (out_features, in_features), b (out_features); W and b uniform in
    ±1/sqrt(in_features), as PyTorch initialises them."""

    def __init__(self, in_features, out_features, bias=True, dtype=None, generator=None, _cpp=None):
        super().__init__(_cpp if _cpp is not None else _C.nn.Linear(in_features, out_features, bias,
                                                                   _default_generator(generator), _dtype(dtype)))

    weight = _from_cpp("weight", "The weight, (out_features, in_features).")
    bias = _from_cpp("bias", "The bias, (out_features,), or None.")
    in_features = _weight_size(1, "The size of each input's last dim.")
    out_features = _weight_size(0, "The size of each output's last dim.")

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(_Wrapped):
    """Rows of a (num_embeddings, embedding_dim) table, looked up by int64 indices. Initialised
    N(0, 0.02²), as TinyCharLM uses it (PyTorch's nn.Embedding draws N(0, 1))."""

    def __init__(self, num_embeddings, embedding_dim, dtype=None, generator=None, _cpp=None):
        super().__init__(_cpp if _cpp is not None else _C.nn.Embedding(num_embeddings, embedding_dim,
                                                                      _default_generator(generator), _dtype(dtype)))

    weight = _from_cpp("weight", "The table, (num_embeddings, embedding_dim).")
    num_embeddings = _weight_size(0, "The number of rows (the vocabulary size).")
    embedding_dim = _weight_size(1, "The length of each row.")

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"


class _Block(_Wrapped):
    """One attention-only block; blk['qkv'] and blk['proj'] as the text indexes d2l's blocks."""

    def __getitem__(self, name):
        if name == "qkv":
            return Linear(0, 0, _cpp=self._cpp.qkv)
        if name == "proj":
            return Linear(0, 0, _cpp=self._cpp.proj)
        raise KeyError(f"a TinyCharLM block holds 'qkv' and 'proj', not {name!r}")

    def forward(self, input):
        """Not run alone: a TinyCharLM runs its blocks (call the model, model(x))."""
        raise NotImplementedError("a TinyCharLM block runs inside its model: call the model, model(x)")

    def extra_repr(self):
        return f"qkv={tuple(self._cpp.qkv.weight.shape)}, proj={tuple(self._cpp.proj.weight.shape)}"


class TinyCharLM(Module):
    """The attention-only TinyCharLM of "What Attention Computes": a token embedding E (V, d),
    num_blks blocks of causal multi-head attention added to the residual stream (a fused qkv
    Linear(d, 3d) and proj Linear(d, d), no bias unless bias=True), and the tied head H Eᵀ.
    pos: 'rope', 'alibi', 'learned', 'sinusoidal' or 'none'. model(x) maps int64 tokens (B, T) to
    logits (B, T, V); attention_weights(x) returns every block's weights (B, H, T, T)."""

    def __init__(self, vocab_size, num_hiddens=128, num_heads=4, num_blks=2, pos="rope", bias=False, max_len=256,
                 dtype=None, generator=None):
        super().__init__()
        cfg = _C.nn.TinyCharLMConfig()
        cfg.vocab, cfg.d, cfg.heads, cfg.blocks = vocab_size, num_hiddens, num_heads, num_blks
        cfg.pos, cfg.bias, cfg.max_len, cfg.dtype = pos, bias, max_len, _dtype(dtype)
        object.__setattr__(self, "_cpp", _C.nn.TinyCharLM(cfg, _default_generator(generator)))

    @property
    def vocab_size(self):
        """The number of tokens."""
        return self._cpp.config.vocab

    @property
    def num_hiddens(self):
        """The width of the residual stream."""
        return self._cpp.config.d

    @property
    def num_heads(self):
        """The attention heads per block."""
        return self._cpp.config.heads

    @property
    def num_blks(self):
        """The number of transformer blocks."""
        return self._cpp.config.blocks

    @property
    def token_emb(self):
        """The token embedding (an hg.nn.Embedding)."""
        return Embedding(0, 0, _cpp=self._cpp.token_emb)

    @property
    def pos_emb(self):
        """The learned position table (pos='learned'; an hg.nn.Embedding), or None for the other schemes."""
        return None if self._cpp.pos_emb is None else Embedding(0, 0, _cpp=self._cpp.pos_emb)

    @property
    def blks(self):
        """The transformer blocks, in order."""
        return [_Block(b) for b in self._cpp.blks]

    def forward(self, x):
        """The logits (batch, length, vocab_size) for token ids x (batch, length)."""
        return self._cpp.forward(x)

    def forward_with(self, x, params):
        """The same forward with params (aligned with parameters()) in place of the model's own."""
        return self._cpp.forward_with(x, list(params))

    def attention_weights(self, x):
        """Every block's attention weights P (B, H, T, T), computed without recording."""
        return self._cpp.attention_weights(x)

    def ablate_head(self, block, head, on=True):
        """Zeroes head `head` of block `block` (0-based) in every later forward; on=False restores it."""
        self._cpp.ablate_head(block, head, on)

    def clear_ablations(self):
        """Turns every ablated head back on."""
        self._cpp.clear_ablations()

    def is_ablated(self, block, head):
        """Whether head of block is ablated (its output zeroed)."""
        return self._cpp.is_ablated(block, head)

    def extra_repr(self):
        c = self._cpp.config
        return (f"vocab_size={c.vocab}, num_hiddens={c.d}, num_heads={c.heads}, num_blks={c.blocks}, "
                f"pos={c.pos!r}, bias={c.bias}")
