"""``Adadelta`` (PyTorch's ``torch.optim.Adadelta``)."""
import numpy as np

from tensorplay.optim._elementwise import _decayed_grad, _Elementwise, _zeros
from tensorplay.optim.optimizer import _check_lr, _check_nonneg, _value

__all__ = ["Adadelta"]


def _adadelta_update(p, g, sq, acc, t0, t1, t2, maximize, weight_decay, lr, rho, eps):
    """One Adadelta update of ``p``, ``sq`` (square_avg) and ``acc`` (acc_delta)
    in place from ``g`` (not written; ``t0``-``t2`` scratch), PyTorch's
    ``_single_tensor_adadelta`` op for op."""
    g = _decayed_grad(p, g, t0, t1, maximize, weight_decay)
    sq *= rho                                       # sq = rho sq + (1 - rho) g g
    np.multiply(g, 1 - rho, out=t1)
    t1 *= g
    sq += t1
    np.add(sq, eps, out=t2)                         # std = sqrt(sq + eps)
    np.sqrt(t2, out=t2)
    np.add(acc, eps, out=t1)                        # delta = sqrt(acc + eps) / std * g
    np.sqrt(t1, out=t1)
    t1 /= t2
    t1 *= g
    acc *= rho                                      # acc = rho acc + (1 - rho) d d
    np.multiply(t1, 1 - rho, out=t2)
    t2 *= t1
    acc += t2
    t1 *= -lr                                       # p += -lr * delta
    p += t1


class Adadelta(_Elementwise):
    r"""Adadelta (Zeiler, 2012), PyTorch's ``torch.optim.Adadelta``.

    For each parameter with gradient :math:`g` (negated when ``maximize``)::

        g = g + weight_decay * p                 (if weight_decay != 0)
        v = rho * v + (1 - rho) * g * g
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta

    Args:
        params (iterable): tensors or param-group dicts (see ``Optimizer``).
        lr (float or Tensor, optional): scale of the delta (default 1.0).
        rho (float, optional): decay of the averages, in [0, 1] (default 0.9).
        eps (float, optional): default 1e-6.
        weight_decay (float, optional): L2 penalty (default 0).
        foreach, capturable (optional): accepted and kept (one implementation).
        maximize (bool, optional): maximise the objective (default False).
        differentiable (bool, optional): must be False.

    State per parameter: ``step`` (0-d float32), ``square_avg`` (v),
    ``acc_delta`` (u).

    Raises:
        ValueError: negative lr, eps or weight_decay; rho outside [0, 1]
            (PyTorch's messages).  NotImplementedError: ``differentiable=True``.
    """
    _nscratch = 3
    _state_keys = ("square_avg", "acc_delta")
    _bump = "add_"
    _update = staticmethod(_adadelta_update)

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonneg(eps, "epsilon value")
        _check_nonneg(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, capturable=capturable, foreach=foreach,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _new_state(self, group, pd):
        return {"square_avg": _zeros(pd), "acc_delta": _zeros(pd)}

    def _prepare(self, group, state, step):
        return (group["maximize"], group["weight_decay"], _value(group["lr"]),
                group["rho"], group["eps"])
