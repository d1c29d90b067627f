"""``tensorplay.nn``: modules, parameters, initialisation and helpers, with
PyTorch's names (``torch.nn``), built only on tensorplay's public op and autograd
API.

* ``Parameter``, ``Buffer`` (parameter.py); ``Module`` and the containers
  (modules/module.py, modules/container.py);
* layers, activations, losses and recurrent layers (modules/*.py), thin wrappers
  over ``tensorplay.nn.functional``;
* ``nn.init`` (init.py) and ``nn.utils`` (clipping, parameter vectors).
"""
from tensorplay.nn import functional  # noqa: F401
from tensorplay.nn import init  # noqa: F401
from tensorplay.nn.parameter import Buffer, Parameter  # noqa: F401
from tensorplay.nn.modules import *  # noqa: F401,F403
from tensorplay.nn.modules import __all__ as _modules_all
from tensorplay.nn import utils  # noqa: F401
from tensorplay._torch_names_nn import module_getattr as _module_getattr

# names torch.nn has and tensorplay.nn lacks: "torch.nn.X exists in PyTorch; ..."
__getattr__ = _module_getattr(__name__)

__all__ = ["functional", "init", "utils", "Parameter", "Buffer"] + list(_modules_all)
