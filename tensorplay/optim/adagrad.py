"""``Adagrad`` (PyTorch's ``torch.optim.Adagrad``)."""
import numpy as np

from tensorplay._tensor import Tensor
from tensorplay.autograd._inplace import bump
from tensorplay.optim._elementwise import _decayed_grad, _step_tensor
from tensorplay.optim.optimizer import (Optimizer, _check_differentiable, _check_lr,
                                        _check_nonneg, _grads, _value)

__all__ = ["Adagrad"]


def _adagrad_update(p, g, s, t0, t1, maximize, weight_decay, eps, clr):
    """One Adagrad update of ``p`` and the sum of squares ``s`` in place from
    ``g`` (not written; ``t0``, ``t1`` scratch), PyTorch's ``_single_tensor_adagrad``."""
    g = _decayed_grad(p, g, t0, t1, maximize, weight_decay)
    np.multiply(g, g, out=t1)                       # s += g * g
    s += t1
    np.sqrt(s, out=t1)                              # std = sqrt(s) + eps
    t1 += eps
    np.divide(g, t1, out=t1)                        # p += -clr * g / std
    t1 *= clr
    p -= t1


class Adagrad(Optimizer):
    r"""Adagrad (Duchi et al., 2011), PyTorch's ``torch.optim.Adagrad``.

    For each parameter :math:`p` with gradient :math:`g` (negated when
    ``maximize``), at step :math:`t` (from 1)::

        g = g + weight_decay * p                     (if weight_decay != 0)
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g                                (s starts at initial_accumulator_value)
        p = p - clr * g / (sqrt(s) + eps)

    Args:
        params (iterable): tensors or param-group dicts (see ``Optimizer``).
        lr (float or Tensor, optional): learning rate (default 1e-2).
        lr_decay (float, optional): learning-rate decay (default 0).
        weight_decay (float, optional): L2 penalty (default 0).
        initial_accumulator_value (float, optional): starting value of the sums
            of squares (default 0).
        eps (float, optional): added to the denominator (default 1e-10).
        foreach, fused (optional): accepted and kept (one implementation).
        maximize (bool, optional): maximise the objective (default False).
        differentiable (bool, optional): must be False.

    State per parameter, made at construction (as in PyTorch): ``step`` and ``sum``.

    Raises:
        ValueError: negative lr, lr_decay, weight_decay, initial_accumulator_value
            or eps (PyTorch's messages).  NotImplementedError: ``differentiable=True``.
    """

    _state_keys = ("sum",)

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        _check_lr(lr)
        _check_nonneg(lr_decay, "lr_decay value")
        _check_nonneg(weight_decay, "weight_decay value")
        _check_nonneg(initial_accumulator_value, "initial_accumulator_value value")
        _check_nonneg(eps, "epsilon value")
        _check_differentiable("Adagrad", differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _step_tensor()
                state["sum"] = Tensor._wrap(np.full_like(
                    p._data, group["initial_accumulator_value"], order="C"))

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)

    def step(self, closure=None):
        """One Adagrad step over every parameter that has a ``.grad``.

        Args:
            closure (callable, optional): re-evaluates the model and returns the loss.

        Returns:
            The closure's loss, or None.
        """
        loss = self._closure_loss(closure, "Adagrad")
        for group in self.param_groups:
            lr = _value(group["lr"])
            lr_decay = group["lr_decay"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            maximize = group["maximize"]
            for p, pd, g in _grads(group):
                state = self.state[p]
                if "sum" not in state:          # a parameter added after construction
                    state["step"] = _step_tensor()
                    state["sum"] = Tensor._wrap(np.full_like(
                        pd, group["initial_accumulator_value"], order="C"))
                st = state["step"]._data
                st += 1
                step = float(st)
                clr = lr / (1 + (step - 1) * lr_decay)
                self._run_blocked(_adagrad_update, (pd, g, state["sum"]._data), 2,
                                  maximize, weight_decay, eps, clr)
                bump(p, "addcdiv_")
        return loss
