"""``Adam`` (PyTorch's ``torch.optim.Adam``); ``AdamW`` (adamw.py) is Adam with
decoupled weight decay."""
import numpy as np

from tensorplay.optim._elementwise import _decayed_grad, _Elementwise, _zeros
from tensorplay.optim.optimizer import _check_lr, _check_nonneg, _value

__all__ = ["Adam"]


def _check_betas(betas):
    try:
        b0, b1 = betas
    except (TypeError, ValueError):
        raise TypeError(f"betas must be a pair of floats (beta1, beta2), got "
                        f"{betas!r}") from None
    if not 0.0 <= _value(b0) < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {b0}")
    if not 0.0 <= _value(b1) < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {b1}")


def _check_adam_args(lr, betas, eps, weight_decay):
    """The argument checks Adam, AdamW, NAdam, RAdam and Adamax share (PyTorch's
    messages)."""
    _check_lr(lr)
    _check_nonneg(eps, "epsilon value")
    _check_betas(betas)
    _check_nonneg(weight_decay, "weight_decay value")


def _lerp(start, end, weight, tmp):
    """``start += weight * (end - start)`` in place, in PyTorch's form of lerp:
    ``end - (end - start) * (1 - weight)`` when ``|weight| >= 0.5``."""
    np.subtract(end, start, out=tmp)
    if abs(weight) < 0.5:
        tmp *= weight
        start += tmp
    else:
        tmp *= 1 - weight
        np.subtract(end, tmp, out=start)


def _moments(m, v, g, beta1, beta2, tmp):
    """Adam's moment averages in place: ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 *
    v + (1 - beta2) * g * g`` (PyTorch's ``lerp_`` and ``mul_().addcmul_()``)."""
    _lerp(m, g, 1 - beta1, tmp)
    v *= beta2
    np.multiply(g, 1 - beta2, out=tmp)
    tmp *= g
    v += tmp


def _adam_update(p, g, m, v, vmax, t0, t1, maximize, weight_decay, decoupled, lr, beta1,
                 beta2, eps, step_size, bias_correction2_sqrt):
    """One Adam update of the arrays ``p`` (parameter), ``m``, ``v`` and ``vmax``
    (amsgrad, or None) in place, from the gradient ``g`` (not written); ``t0``,
    ``t1`` are scratch.  PyTorch's ``_single_tensor_adam``, op for op."""
    g = _decayed_grad(p, g, t0, t1, maximize, weight_decay, decoupled, lr)
    _moments(m, v, g, beta1, beta2, t1)
    if vmax is not None:
        np.maximum(vmax, v, out=vmax)
        v = vmax
    np.sqrt(v, out=t1)                              # denom
    t1 /= bias_correction2_sqrt
    t1 += eps
    np.divide(m, t1, out=t1)                        # p -= step_size * m / denom
    t1 *= step_size
    p -= t1


class Adam(_Elementwise):
    r"""Adam (Kingma & Ba, 2014), PyTorch's ``torch.optim.Adam``.

    For each parameter :math:`p` with gradient :math:`g` (negated when
    ``maximize``), at step :math:`t` (counted per parameter from 1)::

        g = g + weight_decay * p              (L2; decoupled: p = p * (1 - lr * wd))
        m = m + (1 - beta1) * (g - m)         (PyTorch's lerp)
        v = beta2 * v + (1 - beta2) * g * g
        vhat = max(vhat, v) if amsgrad else v
        denom = sqrt(vhat) / sqrt(1 - beta2**t) + eps
        p = p - lr / (1 - beta1**t) * m / denom

    Args:
        params (iterable): tensors or param-group dicts (see ``Optimizer``).
        lr (float or Tensor, optional): learning rate (default 1e-3).
        betas (Tuple[float, float], optional): decay rates of the first and second
            moment averages (default (0.9, 0.999)).
        eps (float, optional): added to the denominator (default 1e-8).
        weight_decay (float, optional): weight decay (default 0): an L2 term added
            to the gradient, or with ``decoupled_weight_decay`` AdamW's shrink.
        amsgrad (bool, optional): the AMSGrad variant (default False).
        maximize (bool, optional): maximise the objective (default False).
        decoupled_weight_decay (bool, optional): AdamW's decay (default False).
        foreach, capturable, fused (optional): PyTorch's kernel choices, accepted
            and kept in the groups; tensorplay has one implementation.
        differentiable (bool, optional): must be False.

    State per parameter: ``step`` (0-d float32 tensor), ``exp_avg``,
    ``exp_avg_sq`` and, with ``amsgrad``, ``max_exp_avg_sq``.

    Raises:
        ValueError: negative lr, eps or weight_decay; a beta outside [0, 1)
            (PyTorch's messages).  TypeError: betas not a pair.
        NotImplementedError: ``differentiable=True``.
    """
    _flags = dict(_Elementwise._flags, amsgrad=False, decoupled_weight_decay=False,
                  fused=None)
    _state_keys = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
    _update = staticmethod(_adam_update)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _new_state(self, group, pd):
        state = {"exp_avg": _zeros(pd), "exp_avg_sq": _zeros(pd)}
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = _zeros(pd)
        return state

    def _prepare(self, group, state, step):
        lr = _value(group["lr"])
        beta1, beta2 = (_value(b) for b in group["betas"])
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        return (group["maximize"], group["weight_decay"],
                group.get("decoupled_weight_decay", False), lr, beta1, beta2, group["eps"],
                lr / bias_correction1, bias_correction2 ** 0.5)
