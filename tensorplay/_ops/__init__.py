"""Public op functions over the primitive registry (``REGISTRY``).

Each submodule registers its primitives (forward, VJP, JVP side by side) and
defines the public functions that validate arguments and call ``apply``.
"""
from tensorplay._ops import elementwise, linalg, nn, reduce, shape
from tensorplay._ops._common import normalize_dim, normalize_dims  # noqa: F401
from tensorplay._ops.elementwise import *  # noqa: F401,F403
from tensorplay._ops.linalg import *  # noqa: F401,F403
from tensorplay._ops.nn import *  # noqa: F401,F403
from tensorplay._ops.reduce import *  # noqa: F401,F403
from tensorplay._ops.registry import REGISTRY, apply, sum_to_shape  # noqa: F401
from tensorplay._ops.shape import *  # noqa: F401,F403

# What ``from tensorplay._ops import *`` (in tensorplay/__init__.py) exports: the
# public functions only, not the submodules (``nn`` would shadow tensorplay.nn).
__all__ = (elementwise.__all__ + linalg.__all__ + nn.__all__ + reduce.__all__
           + [n for n in shape.__all__ if n not in ("check_index", "getitem_backward")])
