"""Training losses: modules that take tensors and return a dict of scalar ``*_loss`` tensors."""

from .hmcl import *  # noqa: F403
from .hmcl import __all__ as _hmcl_all

# from .dssdnet import *  # noqa: F403

__all__ = list(_hmcl_all)
