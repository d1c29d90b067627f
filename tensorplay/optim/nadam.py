"""``NAdam``: Adam with Nesterov momentum (PyTorch's ``torch.optim.NAdam``)."""
import numpy as np

from tensorplay.optim._elementwise import _decayed_grad, _Elementwise, _step_tensor, _zeros
from tensorplay.optim.adam import _check_adam_args, _moments
from tensorplay.optim.optimizer import _check_nonneg, _value

__all__ = ["NAdam"]


def _nadam_update(p, g, m, v, t0, t1, maximize, weight_decay, decoupled, lr, beta1, beta2,
                  eps, bias_correction2, grad_coef, avg_coef):
    """One NAdam update of ``p``, ``m``, ``v`` in place from ``g`` (not written;
    ``t0``, ``t1`` scratch), PyTorch's ``_single_tensor_nadam`` op for op:
    ``p += grad_coef * g / denom`` then ``p += avg_coef * m / denom``."""
    g = _decayed_grad(p, g, t0, t1, maximize, weight_decay, decoupled, lr)
    _moments(m, v, g, beta1, beta2, t1)
    np.divide(v, bias_correction2, out=t1)          # denom = sqrt(v / bc2) + eps
    np.sqrt(t1, out=t1)
    t1 += eps
    np.multiply(g, grad_coef, out=t0)               # addcdiv: (value * g) / denom
    t0 /= t1
    p += t0
    np.multiply(m, avg_coef, out=t0)
    t0 /= t1
    p += t0


class NAdam(_Elementwise):
    r"""NAdam (Dozat, 2016), PyTorch's ``torch.optim.NAdam``.

    For each parameter with gradient :math:`g` (negated when ``maximize``), at
    step :math:`t` (from 1), with :math:`\mu_t = \beta_1 (1 - 0.96^{t\psi}/2)`
    (:math:`\psi` = ``momentum_decay``) and :math:`\Pi_t = \prod_{i \le t} \mu_i`::

        g = g + weight_decay * p          (decoupled: p = p * (1 - lr * weight_decay))
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        denom = sqrt(v / (1 - beta2**t)) + eps
        p = p - lr (1 - mu_t) / (1 - Pi_t) * g / denom
              - lr mu_{t+1} / (1 - Pi_t mu_{t+1}) * m / denom

    Args:
        params (iterable): tensors or param-group dicts (see ``Optimizer``).
        lr (float or Tensor, optional): learning rate (default 2e-3).
        betas (Tuple[float, float], optional): default (0.9, 0.999).
        eps (float, optional): added to the denominator (default 1e-8).
        weight_decay (float, optional): default 0.
        momentum_decay (float, optional): :math:`\psi` (default 4e-3).
        decoupled_weight_decay (bool, optional): AdamW-style decay (NAdamW;
            default False).
        foreach, capturable (optional): accepted and kept (one implementation).
        maximize (bool, optional): maximise the objective (default False).
        differentiable (bool, optional): must be False.

    State per parameter: ``step`` and ``mu_product`` (0-d float32, as PyTorch
    keeps them, and :math:`\Pi_t` is multiplied in float32 as there),
    ``exp_avg``, ``exp_avg_sq``.

    Raises:
        ValueError: negative lr, eps, weight_decay or momentum_decay; a beta
            outside [0, 1) (PyTorch's messages).  TypeError: betas not a pair.
        NotImplementedError: ``differentiable=True``.
    """
    _flags = dict(_Elementwise._flags, decoupled_weight_decay=False)
    _state_keys = ("exp_avg", "exp_avg_sq")
    _scalar_state = ("step", "mu_product")
    _update = staticmethod(_nadam_update)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        _check_nonneg(momentum_decay, "momentum_decay value")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _new_state(self, group, pd):
        return {"mu_product": _step_tensor(1.0), "exp_avg": _zeros(pd),
                "exp_avg_sq": _zeros(pd)}

    def _prepare(self, group, state, step):
        lr = _value(group["lr"])
        beta1, beta2 = (_value(b) for b in group["betas"])
        psi = group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * psi)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * psi)))
        mp = state["mu_product"]._data
        mp[...] = mp * mp.dtype.type(mu)            # in mp's dtype (float32), as PyTorch
        mu_product = float(mp)
        return (group["maximize"], group["weight_decay"], group["decoupled_weight_decay"],
                lr, beta1, beta2, group["eps"], 1 - beta2 ** step,
                -lr * (1.0 - mu) / (1.0 - mu_product),
                (-lr * mu_next) / (1.0 - mu_product * mu_next))
