"""tensorplay: a CPU array library with automatic differentiation in both directions.

Reverse mode (``tensorplay.autograd.grad``, ``Tensor.backward``) and forward mode
(``tensorplay.autograd.forward_ad``, ``autograd.functional.jvp(mode="forward")``)
run on one registry of primitives whose kernels are typed Cython, parallelised
with OpenMP.  Names and semantics follow PyTorch.
"""
__version__ = "0.1.0"

from tensorplay import _compiled  # noqa: E402  (first: it picks compiled or source modules)

_compiled.install()

from tensorplay import _dtype  # noqa: E402
from tensorplay._dtype import (bool, dtype, float32, float64, get_default_dtype,  # noqa: E402,A004
                               int32, int64, promote_types, set_default_dtype)
from tensorplay._tensor import Size, Tensor  # noqa: E402
from tensorplay._ops import *  # noqa: E402,F401,F403
from tensorplay._ops import REGISTRY  # noqa: E402,F401
from tensorplay._creation import *  # noqa: E402,F401,F403
from tensorplay._random import *  # noqa: E402,F401,F403
from tensorplay._generator import (Generator, default_generator,  # noqa: E402,F401
                                   get_rng_state, seed, set_rng_state)
from tensorplay._tensor_factory import from_dlpack  # noqa: E402,F401
from tensorplay._device import device  # noqa: E402,F401
from tensorplay._config import get_num_threads, set_num_threads, show_config  # noqa: E402
from tensorplay.autograd.grad_mode import (enable_grad, inference_mode,  # noqa: E402
                                           is_grad_enabled, is_inference,
                                           is_inference_mode_enabled, no_grad,
                                           set_grad_enabled)
from tensorplay import autograd  # noqa: E402  (already loaded by grad_mode)
from tensorplay.autograd.anomaly_mode import (is_anomaly_check_nan_enabled,  # noqa: E402
                                              is_anomaly_enabled)
from tensorplay.serialization import load, save  # noqa: E402

float = float32    # noqa: A001 -- PyTorch's aliases
double = float64
long = int64
int = int32        # noqa: A001


def result_type(tensor1, tensor2):
    """The dtype an elementwise op on the two operands returns (PyTorch's rules)."""
    return _dtype.result_type(tensor1, tensor2)


def is_tensor(obj):
    """True when ``obj`` is a tensorplay Tensor."""
    return isinstance(obj, Tensor)


def _warn_if_serial():
    from tensorplay._kernels import _openmp_helpers
    if not _openmp_helpers.openmp_enabled():
        import warnings
        warnings.warn("tensorplay was built without OpenMP: kernels run on one thread. "
                      "Rebuild with an OpenMP-capable compiler for parallel kernels "
                      "(see tensorplay.show_config()).", RuntimeWarning, stacklevel=2)


_warn_if_serial()

# Imported on first use (PEP 562), to keep `import tensorplay` cheap: nothing at
# import time needs it, and it is a plain attribute once loaded.
_LAZY_SUBMODULES = ("nn", "cuda", "linalg", "func", "optim", "utils", "distributed")


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module(f"tensorplay.{name}")   # also binds it here
    from tensorplay._torch_names import TORCH
    if name in TORCH:
        raise AttributeError(f"module 'tensorplay' has no attribute {name!r}: PyTorch has "
                             f"torch.{name}, and tensorplay does not implement it (yet)")
    raise AttributeError(f"module 'tensorplay' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))
