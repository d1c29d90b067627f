"""``SGD``: stochastic gradient descent with momentum (PyTorch's ``torch.optim.SGD``)."""
import numpy as np

from tensorplay._tensor import Tensor
from tensorplay.autograd._inplace import bump
from tensorplay.optim._elementwise import _decayed_grad
from tensorplay.optim.optimizer import (Optimizer, _check_differentiable, _check_lr,
                                        _check_nonneg, _grads, _value)

__all__ = ["SGD"]


def _sgd_update(p, g, buf, t0, t1, maximize, weight_decay, momentum, dampening, nesterov,
                lr, first):
    """One SGD update of ``p`` and the momentum buffer ``buf`` (or None) in place
    from the gradient ``g`` (not written; ``t0``, ``t1`` scratch), PyTorch's
    ``_single_tensor_sgd`` op for op.  ``first``: the buffer is new and gets g."""
    g = _decayed_grad(p, g, t0, t1, maximize, weight_decay)
    if buf is not None:
        if first:
            np.copyto(buf, g)
        else:
            buf *= momentum                         # b = momentum b + (1 - dampening) g
            if dampening == 0:
                buf += g
            else:
                buf += np.multiply(g, 1 - dampening, out=t1)
        if nesterov:                                # g + momentum * b
            np.multiply(buf, momentum, out=t1)
            g = np.add(g, t1, out=t0)
        else:
            g = buf
    np.multiply(g, lr, out=t0)
    p -= t0


class SGD(Optimizer):
    r"""Stochastic gradient descent, optionally with momentum (PyTorch's ``SGD``).

    For each parameter :math:`p` with gradient :math:`g` (negated when
    ``maximize``)::

        g = g + weight_decay * p                       (if weight_decay != 0)
        b = g                                          (first step: the buffer is g)
        b = momentum * b + (1 - dampening) * g         (later steps)
        g = g + momentum * b  if nesterov  else  b     (if momentum != 0)
        p = p - lr * g

    Args:
        params (iterable): tensors or param-group dicts (see ``Optimizer``).
        lr (float or Tensor, optional): learning rate (default 1e-3, PyTorch's).
        momentum (float, optional): momentum factor (default 0).
        dampening (float, optional): dampening of the momentum (default 0).
        weight_decay (float, optional): L2 penalty (default 0).
        nesterov (bool, optional): Nesterov momentum (default False).
        maximize (bool, optional): maximise the objective (default False).
        foreach, fused (bool or None, optional): PyTorch's kernel choices, accepted
            and kept in the groups; tensorplay has one implementation.
        differentiable (bool, optional): must be False.

    State: ``momentum_buffer`` per parameter when ``momentum != 0`` (None before
    the first step that saw a gradient).

    Raises:
        ValueError: a negative lr, momentum or weight_decay; ``nesterov`` without
            a positive momentum or with dampening (PyTorch's messages).
        NotImplementedError: ``differentiable=True``.
    """

    _state_keys = ("momentum_buffer",)

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        _check_lr(lr)
        _check_nonneg(momentum, "momentum value")
        _check_nonneg(weight_decay, "weight_decay value")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        _check_differentiable("SGD", differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    def step(self, closure=None):
        """One SGD step over every parameter that has a ``.grad``.

        Args:
            closure (callable, optional): re-evaluates the model and returns the
                loss (called with grad mode on, before the update).

        Returns:
            The closure's loss, or None.
        """
        loss = self._closure_loss(closure, "SGD")
        for group in self.param_groups:
            lr = _value(group["lr"])
            momentum = group["momentum"]
            dampening = group["dampening"]
            weight_decay = group["weight_decay"]
            nesterov = group["nesterov"]
            maximize = group["maximize"]
            for p, pd, g in _grads(group):
                buf = None
                first = False
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:                         # PyTorch: buf = clone(g)
                        buf = Tensor._wrap(np.empty(pd.shape, pd.dtype))
                        state["momentum_buffer"] = buf
                        first = True
                    buf = buf._data
                self._run_blocked(_sgd_update, (pd, g, buf), 2, maximize, weight_decay,
                                  momentum, dampening, nesterov, lr, first)
                bump(p, "add_")
        return loss
