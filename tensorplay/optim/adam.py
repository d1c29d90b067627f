"""``Adam`` (PyTorch's ``torch.optim.Adam``); ``AdamW`` (adamw.py) is Adam with
decoupled weight decay."""
import numpy as np

from tensorplay._tensor import Tensor
from tensorplay.autograd._inplace import bump
from tensorplay.optim.optimizer import (Optimizer, _check_differentiable, _check_lr,
                                        _check_nonneg, _grads, _value)

__all__ = ["Adam"]


def _step_tensor():
    """A fresh ``state["step"]``: a 0-d float32 tensor, as PyTorch keeps it."""
    return Tensor._wrap(np.zeros((), np.float32))


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


def _adam_update(p, g, m, v, vmax, t0, t1, maximize, weight_decay, decoupled, lr, beta1,
                 beta2, eps, step_size, bias_correction2_sqrt):
    """One Adam update of the arrays ``p`` (parameter), ``m``, ``v`` and ``vmax``
    (amsgrad, or None) in place, from the gradient ``g`` (not written); ``t0``,
    ``t1`` are scratch.  PyTorch's ``_single_tensor_adam``, op for op."""
    if maximize:
        g = np.negative(g, out=t0)
    if weight_decay != 0:
        if decoupled:
            p *= 1 - lr * weight_decay
        else:                                       # g + wd * p
            np.multiply(p, weight_decay, out=t1)
            g = np.add(g, t1, out=t0)
    _lerp(m, g, 1 - beta1, t1)
    v *= beta2                                      # v += (1 - beta2) * g * g
    np.multiply(g, 1 - beta2, out=t1)
    t1 *= g
    v += t1
    if vmax is not None:
        np.maximum(vmax, v, out=vmax)
        v = vmax
    np.sqrt(v, out=t1)                              # denom
    t1 /= bias_correction2_sqrt
    t1 += eps
    np.divide(m, t1, out=t1)                        # p -= step_size * m / denom
    t1 *= step_size
    p -= t1


class Adam(Optimizer):
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
    _name = "Adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        _check_lr(lr)
        _check_nonneg(eps, "epsilon value")
        _check_betas(betas)
        _check_nonneg(weight_decay, "weight_decay value")
        _check_differentiable(self._name, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
            group.setdefault("decoupled_weight_decay", False)

    def step(self, closure=None):
        """One Adam step over every parameter that has a ``.grad``.

        Args:
            closure (callable, optional): re-evaluates the model and returns the
                loss (called with grad mode on, before the update).

        Returns:
            The closure's loss, or None.
        """
        loss = self._closure_loss(closure, self._name)
        for group in self.param_groups:
            lr = _value(group["lr"])
            beta1, beta2 = (_value(b) for b in group["betas"])
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            amsgrad = group["amsgrad"]
            maximize = group["maximize"]
            decoupled = group.get("decoupled_weight_decay", False)
            for p, pd, g in _grads(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = Tensor._wrap(np.zeros_like(pd, order="C"))
                    state["exp_avg_sq"] = Tensor._wrap(np.zeros_like(pd, order="C"))
                    if amsgrad:
                        state["max_exp_avg_sq"] = Tensor._wrap(np.zeros_like(pd, order="C"))
                st = state["step"]._data
                st += 1
                step = float(st)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                vmax = state["max_exp_avg_sq"]._data if amsgrad else None
                self._run_blocked(
                    _adam_update, (pd, g, state["exp_avg"]._data,
                                   state["exp_avg_sq"]._data, vmax), 2,
                    maximize, weight_decay, decoupled, lr, beta1, beta2, eps,
                    lr / bias_correction1, bias_correction2 ** 0.5)
                bump(p, "addcdiv_")
        return loss
