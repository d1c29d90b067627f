"""``RAdam``: rectified Adam (PyTorch's ``torch.optim.RAdam``)."""
import numpy as np

from tensorplay.optim._elementwise import _decayed_grad, _Elementwise, _zeros
from tensorplay.optim.adam import _check_adam_args, _moments
from tensorplay.optim.optimizer import _value

__all__ = ["RAdam"]


def _radam_update(p, g, m, v, t0, t1, maximize, weight_decay, decoupled, lr, beta1, beta2,
                  eps, bias_correction1, bias_correction2_sqrt, rect):
    """One RAdam update of ``p``, ``m``, ``v`` in place from ``g`` (not written;
    ``t0``, ``t1`` scratch), PyTorch's ``_single_tensor_radam`` op for op; ``rect``
    None: the variance is not tractable yet (rho_t <= 5), plain momentum step."""
    g = _decayed_grad(p, g, t0, t1, maximize, weight_decay, decoupled, lr)
    _moments(m, v, g, beta1, beta2, t1)
    np.divide(m, bias_correction1, out=t0)          # m / bc1 * lr
    t0 *= lr
    if rect is not None:                            # * (1 / (sqrt(v) + eps)) * sqrt(bc2)
        np.sqrt(v, out=t1)                          #   (PyTorch's scalar / tensor is
        t1 += eps                                   #    reciprocal() * scalar) * rect
        np.reciprocal(t1, out=t1)
        t1 *= bias_correction2_sqrt
        t0 *= t1
        t0 *= rect
    p -= t0


class RAdam(_Elementwise):
    r"""RAdam (Liu et al., 2019), PyTorch's ``torch.optim.RAdam``.

    For each parameter with gradient :math:`g` (negated when ``maximize``), at
    step :math:`t` (from 1), with :math:`\rho_\infty = 2/(1-\beta_2) - 1` and
    :math:`\rho_t = \rho_\infty - 2t\beta_2^t/(1-\beta_2^t)`::

        g = g + weight_decay * p          (decoupled: p = p * (1 - lr * weight_decay))
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        mhat = m / (1 - beta1**t)
        rho_t > 5:  r = sqrt((rho_t-4)(rho_t-2) rho_inf / ((rho_inf-4)(rho_inf-2) rho_t))
                    p = p - lr * mhat * sqrt(1 - beta2**t) / (sqrt(v) + eps) * r
        otherwise:  p = p - lr * mhat

    Args:
        params (iterable): tensors or param-group dicts (see ``Optimizer``).
        lr (float or Tensor, optional): learning rate (default 1e-3).
        betas (Tuple[float, float], optional): default (0.9, 0.999).
        eps (float, optional): added to the denominator (default 1e-8).
        weight_decay (float, optional): default 0.
        decoupled_weight_decay (bool, optional): AdamW-style decay (default False).
        foreach, capturable (optional): accepted and kept (one implementation).
        maximize (bool, optional): maximise the objective (default False).
        differentiable (bool, optional): must be False.

    State per parameter: ``step`` (0-d float32), ``exp_avg``, ``exp_avg_sq``.

    Raises:
        ValueError: negative lr, eps or weight_decay; a beta outside [0, 1)
            (PyTorch's messages).  TypeError: betas not a pair.
        NotImplementedError: ``differentiable=True``.
    """
    _flags = dict(_Elementwise._flags, decoupled_weight_decay=False)
    _state_keys = ("exp_avg", "exp_avg_sq")
    _update = staticmethod(_radam_update)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _new_state(self, group, pd):
        return {"exp_avg": _zeros(pd), "exp_avg_sq": _zeros(pd)}

    def _prepare(self, group, state, step):
        lr = _value(group["lr"])
        beta1, beta2 = (_value(b) for b in group["betas"])
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        rect = None
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        return (group["maximize"], group["weight_decay"], group["decoupled_weight_decay"],
                lr, beta1, beta2, group["eps"], bias_correction1, bias_correction2 ** 0.5,
                rect)
