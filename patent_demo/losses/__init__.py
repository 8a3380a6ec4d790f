"""Training losses: modules that take tensors and return a dict of scalar ``*_loss`` tensors."""

from .dssdnet import *  # noqa: F403
from .dssdnet import __all__ as _dssdnet_all
from .hmcl import *  # noqa: F403
from .hmcl import __all__ as _hmcl_all

__all__ = list(_hmcl_all) + list(_dssdnet_all)
