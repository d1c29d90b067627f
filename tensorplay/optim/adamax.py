"""``Adamax``: Adam with the infinity norm (PyTorch's ``torch.optim.Adamax``)."""
import numpy as np

from tensorplay.optim._elementwise import _decayed_grad, _Elementwise, _zeros
from tensorplay.optim.adam import _check_adam_args, _lerp
from tensorplay.optim.optimizer import _value

__all__ = ["Adamax"]


def _adamax_update(p, g, m, u, t0, t1, maximize, weight_decay, beta1, beta2, eps, clr):
    """One Adamax update of ``p``, ``m`` (exp_avg), ``u`` (exp_inf) in place from
    ``g`` (not written; ``t0``, ``t1`` scratch), PyTorch's ``_single_tensor_adamax``."""
    g = _decayed_grad(p, g, t0, t1, maximize, weight_decay)
    _lerp(m, g, 1 - beta1, t1)
    u *= beta2                                      # u = max(beta2 * u, |g| + eps)
    np.abs(g, out=t1)
    t1 += eps
    np.maximum(u, t1, out=u)
    np.multiply(m, -clr, out=t1)                    # addcdiv: (-clr * m) / u
    t1 /= u
    p += t1


class Adamax(_Elementwise):
    r"""Adamax (Kingma & Ba, 2014, section 7), PyTorch's ``torch.optim.Adamax``.

    For each parameter with gradient :math:`g` (negated when ``maximize``), at
    step :math:`t` (from 1)::

        g = g + weight_decay * p             (if weight_decay != 0)
        m = lerp(m, g, 1 - beta1)
        u = max(beta2 * u, |g| + eps)
        p = p - lr / (1 - beta1**t) * m / u

    Args:
        params (iterable): tensors or param-group dicts (see ``Optimizer``).
        lr (float or Tensor, optional): learning rate (default 2e-3).
        betas (Tuple[float, float], optional): default (0.9, 0.999).
        eps (float, optional): default 1e-8.
        weight_decay (float, optional): L2 penalty (default 0).
        foreach, capturable (optional): accepted and kept (one implementation).
        maximize (bool, optional): maximise the objective (default False).
        differentiable (bool, optional): must be False.

    State per parameter: ``step`` (0-d float32), ``exp_avg``, ``exp_inf``.

    Raises:
        ValueError: negative lr, eps or weight_decay; a beta outside [0, 1)
            (PyTorch's messages).  TypeError: betas not a pair.
        NotImplementedError: ``differentiable=True``.
    """
    _state_keys = ("exp_avg", "exp_inf")
    _update = staticmethod(_adamax_update)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _new_state(self, group, pd):
        return {"exp_avg": _zeros(pd), "exp_inf": _zeros(pd)}

    def _prepare(self, group, state, step):
        beta1, beta2 = (_value(b) for b in group["betas"])
        return (group["maximize"], group["weight_decay"], beta1, beta2, group["eps"],
                _value(group["lr"]) / (1 - beta1 ** step))
