"""``ASGD``: averaged stochastic gradient descent (PyTorch's ``torch.optim.ASGD``)."""
import numpy as np

from tensorplay.optim._elementwise import _decayed_grad, _Elementwise, _step_tensor, _zeros
from tensorplay.optim.optimizer import _check_lr, _check_nonneg, _value

__all__ = ["ASGD"]


def _asgd_update(p, g, ax, t0, t1, maximize, weight_decay, lambd, eta, mu):
    """One ASGD update of ``p`` and the average ``ax`` in place from ``g`` (not
    written; ``t0``, ``t1`` scratch), PyTorch's ``_single_tensor_asgd``."""
    g = _decayed_grad(p, g, t0, t1, maximize, weight_decay)
    p *= 1 - lambd * eta                            # decay, then p += -eta * g
    np.multiply(g, -eta, out=t1)
    p += t1
    if mu != 1:                                     # ax += (p - ax) * mu
        np.subtract(p, ax, out=t1)
        t1 *= mu
        ax += t1
    else:
        np.copyto(ax, p)


class ASGD(_Elementwise):
    r"""Averaged SGD (Polyak & Juditsky, 1992), PyTorch's ``torch.optim.ASGD``.

    For each parameter with gradient :math:`g` (negated when ``maximize``), at
    step :math:`t` (from 1), with :math:`\eta_1 = lr`, :math:`\mu_1 = 1`::

        g = g + weight_decay * p                    (if weight_decay != 0)
        p = p * (1 - lambd * eta_t) - eta_t * g
        ax = ax + mu_t * (p - ax)                   (ax = p while mu_t == 1)
        eta_{t+1} = lr / (1 + lambd * lr * t) ** alpha
        mu_{t+1} = 1 / max(1, t - t0)

    Args:
        params (iterable): tensors or param-group dicts (see ``Optimizer``).
        lr (float or Tensor, optional): learning rate (default 1e-2).
        lambd (float, optional): decay term (default 1e-4).
        alpha (float, optional): power of the eta update (default 0.75).
        t0 (float, optional): the step at which averaging starts (default 1e6).
        weight_decay (float, optional): L2 penalty (default 0).
        foreach, capturable (optional): accepted and kept (one implementation).
        maximize (bool, optional): maximise the objective (default False).
        differentiable (bool, optional): must be False.

    State per parameter: ``step``, ``eta``, ``mu`` (0-d float32: eta and mu are
    rounded to float32 as PyTorch stores them) and ``ax``, the average.

    Raises:
        ValueError: negative lr or weight_decay (PyTorch's checks; lambd, alpha
            and t0 are not checked there either).
        NotImplementedError: ``differentiable=True``.
    """
    _state_keys = ("ax",)
    _scalar_state = ("step", "eta", "mu")
    _bump = "add_"
    _update = staticmethod(_asgd_update)

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_nonneg(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _new_state(self, group, pd):
        return {"eta": _step_tensor(_value(group["lr"])), "mu": _step_tensor(1.0),
                "ax": _zeros(pd)}

    def _prepare(self, group, state, step):
        lr, lambd = _value(group["lr"]), group["lambd"]
        eta_d, mu_d = state["eta"]._data, state["mu"]._data
        eta, mu = float(eta_d), float(mu_d)          # this step's; then the next ones
        eta_d[...] = lr / ((1 + lambd * lr * step) ** group["alpha"])
        mu_d[...] = 1 / max(1, step - group["t0"])
        return group["maximize"], group["weight_decay"], lambd, eta, mu
