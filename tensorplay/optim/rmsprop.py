"""``RMSprop`` (PyTorch's ``torch.optim.RMSprop``)."""
import numpy as np

from tensorplay._tensor import Tensor
from tensorplay.autograd._inplace import bump
from tensorplay.optim.adam import _lerp, _step_tensor
from tensorplay.optim.optimizer import (Optimizer, _check_differentiable, _check_lr,
                                        _check_nonneg, _grads, _value)

__all__ = ["RMSprop"]


def _rmsprop_update(p, g, v, buf, ga, t0, t1, avg, maximize, weight_decay, alpha, eps,
                    momentum, lr):
    """One RMSprop update of ``p``, ``v`` (square_avg), ``buf`` (momentum, or
    None) and ``ga`` (grad_avg when centered, or None) in place from ``g`` (not
    written; ``t0``, ``t1``, ``avg`` scratch), PyTorch's ``_single_tensor_rmsprop``."""
    if maximize:
        g = np.negative(g, out=t0)
    if weight_decay != 0:
        np.multiply(p, weight_decay, out=t1)
        g = np.add(g, t1, out=t0)
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


class RMSprop(Optimizer):
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

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_lr(lr)
        _check_nonneg(eps, "epsilon value")
        _check_nonneg(momentum, "momentum value")
        _check_nonneg(weight_decay, "weight_decay value")
        _check_nonneg(alpha, "alpha value")
        _check_differentiable("RMSprop", differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def step(self, closure=None):
        """One RMSprop step over every parameter that has a ``.grad``.

        Args:
            closure (callable, optional): re-evaluates the model and returns the loss.

        Returns:
            The closure's loss, or None.
        """
        loss = self._closure_loss(closure, "RMSprop")
        for group in self.param_groups:
            lr = _value(group["lr"])
            alpha = group["alpha"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            momentum = group["momentum"]
            centered = group["centered"]
            maximize = group["maximize"]
            for p, pd, g in _grads(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = Tensor._wrap(np.zeros_like(pd, order="C"))
                    if momentum > 0:
                        state["momentum_buffer"] = Tensor._wrap(np.zeros_like(pd, order="C"))
                    if centered:
                        state["grad_avg"] = Tensor._wrap(np.zeros_like(pd, order="C"))
                state["step"]._data += 1
                mb = state["momentum_buffer"]._data if momentum > 0 else None
                ga = state["grad_avg"]._data if centered else None
                self._run_blocked(_rmsprop_update,
                                  (pd, g, state["square_avg"]._data, mb, ga), 3,
                                  maximize, weight_decay, alpha, eps, momentum, lr)
                bump(p, "addcdiv_")
        return loss
