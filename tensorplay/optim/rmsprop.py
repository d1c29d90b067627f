"""``RMSprop`` (PyTorch's ``torch.optim.RMSprop``)."""
import numpy as np

from tensorplay.optim._elementwise import _decayed_grad, _Elementwise, _zeros
from tensorplay.optim.adam import _lerp
from tensorplay.optim.optimizer import _check_lr, _check_nonneg, _value

__all__ = ["RMSprop"]


def _rmsprop_update(p, g, v, buf, ga, t0, t1, avg, maximize, weight_decay, alpha, eps,
                    momentum, lr):
    """One RMSprop update of ``p``, ``v`` (square_avg), ``buf`` (momentum, or
    None) and ``ga`` (grad_avg when centered, or None) in place from ``g`` (not
    written; ``t0``, ``t1``, ``avg`` scratch), PyTorch's ``_single_tensor_rmsprop``."""
    g = _decayed_grad(p, g, t0, t1, maximize, weight_decay)
    v *= alpha                                      # v += (1 - alpha) * g * g
    np.multiply(g, 1 - alpha, out=t1)
    t1 *= g
    v += t1
    if ga is not None:                              # centered: sqrt(v - ga * ga)
        _lerp(ga, g, 1 - alpha, t1)
        np.multiply(ga, -1, out=t1)
        t1 *= ga
        np.add(v, t1, out=avg)
        np.sqrt(avg, out=avg)
    else:
        np.sqrt(v, out=avg)
    avg += eps
    np.divide(g, avg, out=t1)
    if buf is not None:                             # b = momentum b + g / avg
        buf *= momentum
        buf += t1
        np.multiply(buf, lr, out=t1)
    else:                                           # p += -lr * g / avg
        t1 *= lr
    p -= t1


class RMSprop(_Elementwise):
    r"""RMSprop (Hinton's lecture 6e), PyTorch's ``torch.optim.RMSprop``.

    For each parameter :math:`p` with gradient :math:`g` (negated when
    ``maximize``)::

        g = g + weight_decay * p                     (if weight_decay != 0)
        v = alpha * v + (1 - alpha) * g * g
        avg = sqrt(v - ga * ga)  with  ga = ga + (1 - alpha) * (g - ga)   (centered)
        avg = sqrt(v)                                                     (otherwise)
        avg = avg + eps
        b = momentum * b + g / avg;  p = p - lr * b  (momentum > 0)
        p = p - lr * g / avg                         (otherwise)

    Args:
        params (iterable): tensors or param-group dicts (see ``Optimizer``).
        lr (float or Tensor, optional): learning rate (default 1e-2).
        alpha (float, optional): smoothing constant (default 0.99).
        eps (float, optional): added to the denominator (default 1e-8).
        weight_decay (float, optional): L2 penalty (default 0).
        momentum (float, optional): momentum factor (default 0).
        centered (bool, optional): normalise by the estimated variance (default False).
        capturable, foreach (optional): accepted and kept (one implementation).
        maximize (bool, optional): maximise the objective (default False).
        differentiable (bool, optional): must be False.

    State per parameter: ``step``, ``square_avg``, ``momentum_buffer`` (momentum >
    0) and ``grad_avg`` (centered).

    Raises:
        ValueError: negative lr, eps, momentum, weight_decay or alpha (PyTorch's
            messages).  NotImplementedError: ``differentiable=True``.
    """

    _flags = dict(_Elementwise._flags, momentum=0, centered=False)
    _nscratch = 3
    _state_keys = ("square_avg", "momentum_buffer", "grad_avg")
    _update = staticmethod(_rmsprop_update)

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_lr(lr)
        _check_nonneg(eps, "epsilon value")
        _check_nonneg(momentum, "momentum value")
        _check_nonneg(weight_decay, "weight_decay value")
        _check_nonneg(alpha, "alpha value")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _new_state(self, group, pd):
        state = {"square_avg": _zeros(pd)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = _zeros(pd)
        if group["centered"]:
            state["grad_avg"] = _zeros(pd)
        return state

    def _prepare(self, group, state, step):
        return (group["maximize"], group["weight_decay"], group["alpha"], group["eps"],
                group["momentum"], _value(group["lr"]))
