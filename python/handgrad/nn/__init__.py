"""hg.nn: for now only hg.nn.functional (modules and optimizers are not bound yet)."""

from . import functional

__all__ = ["functional"]
