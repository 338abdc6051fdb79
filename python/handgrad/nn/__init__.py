"""hg.nn: modules, optimizers, the repeated-sequence task and checkpoints, as torch.nn spells them,
over the C++ library's nn/ (and hg.nn.functional)."""

from . import functional
from . import init
from .checkpoint import load, load_metadata, save
from .data import SplitLosses, accuracy_per_position, repeated_batch, split_losses
from .layers import GELU, MLP, Dropout, LayerNorm, ModuleList, ReLU, RMSNorm, Sequential, TransformerBlock
from .modules import Embedding, Linear, Module, Parameter, TinyCharLM
from ..optim import SGD, AdamW  # also hg.optim.SGD / hg.optim.AdamW

__all__ = ["functional", "init", "Module", "Parameter", "Linear", "Embedding", "TinyCharLM", "LayerNorm", "RMSNorm", "GELU",
           "ReLU", "Dropout", "Sequential", "ModuleList", "MLP", "TransformerBlock", "SGD", "AdamW",
           "repeated_batch", "split_losses", "SplitLosses", "accuracy_per_position", "save", "load",
           "load_metadata"]
