"""Composable function transforms, with torch.func's (and JAX's) names.

``grad``, ``grad_and_value``, ``vjp``, ``jvp`` (``_transforms.py``), ``jacrev``,
``jacfwd``, ``hessian`` and ``linearize`` (``_jacobians.py``) are thin layers over tensorplay's reverse
and forward engines; they nest (``grad(grad(f))``, ``jacfwd(jacrev(f))``, ...)
and take pytrees (tuples, lists, dicts) of Tensors.  ``vmap`` (``_vmap.py``) runs
a function over a batch dimension with a batching rule per primitive.

Example:
    >>> from tensorplay.func import grad, hessian
    >>> x = tensorplay.randn(3)
    >>> grad(lambda x: (x ** 3).sum())(x)          # 3 x^2
    >>> hessian(lambda x: (x ** 3).sum())(x)       # diag(6 x)
"""
from tensorplay.func._jacobians import hessian, jacfwd, jacrev, linearize  # noqa: F401
from tensorplay.func._transforms import grad, grad_and_value, jvp, vjp  # noqa: F401

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
           "linearize", "vmap", "functional_call"]


def __getattr__(name):
    # vmap lives in its own module (the batching machinery), imported on first use
    if name == "vmap":
        from tensorplay.func._vmap import vmap
        globals()["vmap"] = vmap
        return vmap
    if name == "functional_call":       # torch.func's name for nn.utils.functional_call
        from tensorplay.nn.utils.stateless import functional_call
        globals()["functional_call"] = functional_call
        return functional_call
    raise AttributeError(f"module 'tensorplay.func' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"vmap", "functional_call"})
