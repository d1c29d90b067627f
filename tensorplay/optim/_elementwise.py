"""``_Elementwise``: the shared body of the optimisers whose update is one
elementwise function of each parameter, its gradient and its state (Adam, AdamW,
NAdam, RAdam, Adamax, Adadelta, ASGD, Rprop, RMSprop).

A subclass gives:

* ``_flags``: the options ``__setstate__`` fills in when an older pickle or state
  dict lacks them (PyTorch's ``group.setdefault(...)`` lines);
* ``_new_state(group, pd)``: the state of a parameter seen for the first time
  (``step`` is added first, as PyTorch orders its state);
* ``_prepare(group, state, step)``: the group's options and this step's scalars
  (bias corrections, ...) as the tuple of extra arguments of ``_update``;
* ``_update(p, g, *state_arrays, *scratch, *args)``: the numpy update, run by
  ``Optimizer._run_blocked`` on ``(pd, g, *_arrays(state))`` with ``_nscratch``
  scratch buffers.

``step()`` is written once here: closure, writability check, per-parameter state,
``step += 1``, the update, the version-counter bump.
"""
import numpy as np

from tensorplay._tensor import Tensor
from tensorplay.autograd._inplace import bump
from tensorplay.optim.optimizer import Optimizer, _check_differentiable, _grads

__all__ = []


def _step_tensor(value=0.0):
    """A 0-d float32 state scalar (``step``, NAdam's ``mu_product``, ASGD's ``eta``
    and ``mu``), as PyTorch keeps them."""
    return Tensor._wrap(np.array(value, np.float32))


def _zeros(pd):
    """A state tensor of zeros shaped and typed like the parameter's array."""
    return Tensor._wrap(np.zeros_like(pd, order="C"))


def _decayed_grad(p, g, t0, t1, maximize, weight_decay, decoupled=False, lr=0.0):
    """The gradient an update uses: ``-g`` when ``maximize``, plus the L2 term
    ``weight_decay * p`` -- or, ``decoupled``, the parameter shrunk in place by
    ``1 - lr * weight_decay`` instead (AdamW's decay).  ``g`` is not written; the
    result may live in the scratch ``t0`` (``t1`` is scratch too)."""
    if maximize:
        g = np.negative(g, out=t0)
    if weight_decay != 0:
        if decoupled:
            p *= 1 - lr * weight_decay
        else:                                       # g + wd * p
            np.multiply(p, weight_decay, out=t1)
            g = np.add(g, t1, out=t0)
    return g


class _Elementwise(Optimizer):
    """Base of the elementwise optimisers (see the module docstring).

    Raises:
        NotImplementedError: ``differentiable=True`` in ``defaults``.
    """
    _flags = {"foreach": None, "maximize": False, "capturable": False,
              "differentiable": False}
    _nscratch = 2
    _bump = "addcdiv_"          # the in-place op the version counter names

    def __init__(self, params, defaults):
        _check_differentiable(type(self).__name__, defaults.get("differentiable"))
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for key, default in self._flags.items():
                group.setdefault(key, default)

    def _new_state(self, group, pd):
        raise NotImplementedError

    def _prepare(self, group, state, step):
        raise NotImplementedError

    def _arrays(self, state):
        """The state arrays passed to ``_update`` after ``(p, g)``: those named by
        ``_state_keys``, in order (None for an absent optional one)."""
        return tuple(state[k]._data if k in state else None for k in self._state_keys)

    def step(self, closure=None):
        """One optimisation step over every parameter that has a ``.grad``.

        Args:
            closure (callable, optional): re-evaluates the model and returns the
                loss (called with grad mode on, before the update).

        Returns:
            The closure's loss, or None.

        Raises:
            RuntimeError: a parameter to update is read-only (before any write).
        """
        loss = self._closure_loss(closure, type(self).__name__)
        for group in self.param_groups:
            for p, pd, g in _grads(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state.update(self._new_state(group, pd))
                st = state["step"]._data
                st += 1
                args = self._prepare(group, state, float(st))
                self._run_blocked(type(self)._update, (pd, g, *self._arrays(state)),
                                  self._nscratch, *args)
                bump(p, self._bump)
        return loss
