"""Gradient clipping (PyTorch's ``torch.nn.utils.clip_grad``).

Both functions change ``.grad`` in place without recording history and accept
one Tensor or an iterable of them (parameters without a gradient are skipped).
"""
import math
import numbers
import warnings

import tensorplay
from tensorplay._tensor import Tensor
from tensorplay.autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_"]


def _grads(parameters, op):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        try:
            parameters = list(parameters)
        except TypeError:
            raise TypeError(f"{op}(): 'parameters' must be a Tensor or an iterable of "
                            f"Tensors, not {type(parameters).__name__}") from None
    for p in parameters:
        if not isinstance(p, Tensor):
            raise TypeError(f"{op}(): 'parameters' must hold Tensors, got "
                            f"{type(p).__name__}")
    return [p.grad for p in parameters if p.grad is not None]


def _real(v, op, name):
    if isinstance(v, bool) or not isinstance(v, (numbers.Real, Tensor)):
        raise TypeError(f"{op}(): argument '{name}' must be a number, not "
                        f"{type(v).__name__}")
    return float(v)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale the gradients so that their joint ``norm_type``-norm is at most
    ``max_norm`` (PyTorch's formula: ``g *= min(1, max_norm / (total + 1e-6))``).

    The joint norm is the norm of the vector of per-gradient norms, which equals
    the norm of all gradients concatenated.

    Args:
        parameters (Tensor or iterable of Tensors): whose ``.grad`` to clip.
        max_norm (float): the bound.
        norm_type (float): p of the p-norm; ``inf`` for the max-abs norm.
        error_if_nonfinite (bool): raise instead of scaling by a nan/inf norm.
        foreach: accepted and ignored (one code path).

    Returns:
        0-d Tensor: the total norm before clipping (``tensor(0.)`` when no
        parameter has a gradient).

    Raises:
        RuntimeError: a non-finite total norm with ``error_if_nonfinite``
        (nothing is changed then).  TypeError: bad arguments.
    """
    grads = _grads(parameters, "clip_grad_norm_")
    max_norm = _real(max_norm, "clip_grad_norm_", "max_norm")
    norm_type = _real(norm_type, "clip_grad_norm_", "norm_type")
    if not grads:
        return tensorplay.tensor(0.0)
    vector_norm = tensorplay.linalg.vector_norm
    with no_grad():
        norms = [vector_norm(g, norm_type) for g in grads]
        dt = norms[0].dtype
        for n in norms[1:]:
            dt = tensorplay.promote_types(dt, n.dtype)
        total = vector_norm(tensorplay.stack([n.to(dt) for n in norms]), norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                               f"`parameters` is non-finite, so it cannot be clipped. To "
                               f"disable this error and scale the gradients by the "
                               f"non-finite norm anyway, set `error_if_nonfinite=False`")
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    """Deprecated alias of ``clip_grad_norm_`` (warns, as PyTorch)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place.

    Returns:
        None.

    Raises:
        TypeError: bad arguments.
    """
    grads = _grads(parameters, "clip_grad_value_")
    clip_value = _real(clip_value, "clip_grad_value_", "clip_value")
    with no_grad():
        for g in grads:
            g.copy_(g.clamp(min=-clip_value, max=clip_value))
