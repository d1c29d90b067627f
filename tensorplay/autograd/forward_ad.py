"""Forward-mode AD API (``torch.autograd.forward_ad``): ``dual_level``,
``make_dual``, ``unpack_dual``.  Implemented in ``tensorplay.autograd._forward``;
both modules name the same objects.

Example:
    >>> from tensorplay.autograd import forward_ad as fwAD
    >>> x, v = tensorplay.randn(3), tensorplay.ones(3)
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(x, v).exp()
    ...     primal, tangent = fwAD.unpack_dual(y)   # tangent == exp(x) * v
"""
from tensorplay.autograd._forward import (UnpackedDualTensor, dual_level,  # noqa: F401
                                          enter_dual_level, exit_dual_level, make_dual,
                                          unpack_dual)

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "UnpackedDualTensor"]
