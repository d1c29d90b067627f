"""Learning-rate schedules (PyTorch's ``torch.optim.lr_scheduler``).

A scheduler changes ``group["lr"]`` of its optimiser's param groups each time its
``step()`` is called -- once per epoch or per batch, *after* ``optimizer.step()``.
Construction performs the first step (epoch 0) and records each group's
``initial_lr``; ``get_last_lr()`` gives the current rates.  Each schedule uses
PyTorch's *chainable* (recursive) form: the new rate is computed from the group's
current rate, so several schedulers can be stacked on one optimiser.  Schedules
with a closed form (``_get_closed_form_lr``) use it when ``step(epoch)`` is given
an epoch (deprecated in PyTorch; it warns there and here).

This file: ``LRScheduler``, ``LambdaLR``, ``MultiplicativeLR``, ``StepLR``,
``MultiStepLR``, ``ConstantLR``, ``LinearLR``, ``ExponentialLR``, ``PolynomialLR``,
``CosineAnnealingLR``; ``_lr_scheduler_more.py``: ``SequentialLR``,
``ChainedScheduler``, ``ReduceLROnPlateau``, ``OneCycleLR``;
``_lr_scheduler_cyclic.py``: ``CyclicLR``, ``CosineAnnealingWarmRestarts``.  A
name of ``torch.optim.lr_scheduler`` that tensorplay lacks raises an
AttributeError that says so.
"""
import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

from tensorplay._tensor import Tensor
from tensorplay.autograd.grad_mode import no_grad
from tensorplay.optim.optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR",
           "ConstantLR", "LinearLR", "ExponentialLR", "PolynomialLR", "CosineAnnealingLR",
           "SequentialLR", "ChainedScheduler", "ReduceLROnPlateau", "OneCycleLR",
           "CyclicLR", "CosineAnnealingWarmRestarts"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available.")

_ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
    "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
    "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
    "will result in PyTorch skipping the first value of the learning rate schedule.")


def _copy(value):
    return value.clone() if isinstance(value, Tensor) else value


def _format_param(name, optimizer, param):
    """``param`` for each param group: a list of the groups' length, or one value
    repeated (PyTorch's ``_format_param``)."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(param)} values, param_groups has "
                             f"{len(optimizer.param_groups)}.")
    else:
        param = [param] * len(optimizer.param_groups)
    return [_copy(p) for p in param]


def _group_values(optimizer, key):
    """``group[key]`` of every group (Tensor values cloned, so they never alias)."""
    return [_copy(group[key]) for group in optimizer.param_groups]


def _set_group_value(group, key, value):
    """Set ``group[key]``; a Tensor entry is filled in place (PyTorch's rule)."""
    if isinstance(group[key], Tensor):
        with no_grad():
            group[key].fill_(float(value))
    else:
        group[key] = value


def _check_optimizer(optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


class LRScheduler:
    r"""Base class of the learning-rate schedulers (PyTorch's ``LRScheduler``).

    Subclasses implement ``get_lr()`` (the chainable form, from ``group["lr"]``)
    and optionally ``_get_closed_form_lr()`` (from ``base_lrs`` and ``last_epoch``).

    Args:
        optimizer (Optimizer): the optimiser whose ``group["lr"]`` it sets.
        last_epoch (int): the index of the last epoch; -1 (default) starts a new
            schedule; another value resumes one and needs ``initial_lr`` in every
            group.

    Attributes:
        base_lrs (list): each group's ``initial_lr``.
        last_epoch (int): the epoch of the current rates (0 after construction).

    Raises:
        TypeError: ``optimizer`` is not an ``Optimizer``.
        KeyError: resuming (``last_epoch != -1``) without ``initial_lr`` in a group.
    """
    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   f"when resuming scheduler with last_epoch >= 0 (load the "
                                   f"optimizer's state dict first, or start with "
                                   f"last_epoch=-1)")
        self.base_lrs = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self):
        """Reset the step count and perform the first step (epoch 0)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self):
        """Every attribute except the optimiser, as a dict."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict):
        """Load a dict made by ``state_dict()``."""
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """The learning rates of the last step, one per param group (copies)."""
        return self._last_lr

    def get_lr(self):
        """The next learning rate of each param group (subclasses implement it;
        call ``get_last_lr()`` to read the current ones)."""
        raise NotImplementedError

    def step(self, epoch=None):
        """Advance the schedule by one epoch and set every group's ``lr``.

        Args:
            epoch (int, optional): deprecated (PyTorch warns too): jump to this
                epoch, through the closed form where the schedule has one.
        """
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(_ORDER_WARNING, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        def compute():
            if epoch is None:
                self.last_epoch += 1
                return self.get_lr()
            self.last_epoch = epoch
            if hasattr(self, "_get_closed_form_lr"):
                return self._get_closed_form_lr()
            return self.get_lr()
        self._apply_lr(compute)

    def _apply_lr(self, compute):
        """Set every group's ``lr`` to ``compute()`` (called with ``get_lr``'s
        warning off) and record them for ``get_last_lr``."""
        self._get_lr_called_within_step = True
        try:
            values = compute()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")


def _warn_get_lr(scheduler):
    if not scheduler._get_lr_called_within_step:
        warnings.warn("To get the last learning rate computed by the scheduler, please use "
                      "`get_last_lr()`.", UserWarning, stacklevel=3)


class _LambdaBase(LRScheduler):
    """The per-group function list of LambdaLR and MultiplicativeLR, and their
    state dict (functions are not saved; callable objects' ``__dict__`` is)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but "
                                 f"got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got "
                                f"{type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        """The scheduler's attributes; ``lr_lambdas`` holds None for plain
        functions and lambdas, and a callable object's ``__dict__``."""
        state_dict = {key: value for key, value in self.__dict__.items()
                      if key not in ("optimizer", "lr_lambdas")}
        state_dict["lr_lambdas"] = [None] * len(self.lr_lambdas)
        for idx, fn in enumerate(self.lr_lambdas):
            if not isinstance(fn, types.FunctionType):
                state_dict["lr_lambdas"][idx] = fn.__dict__.copy()
        return state_dict

    def load_state_dict(self, state_dict):
        """Load a dict made by ``state_dict()`` (the functions stay this
        scheduler's own)."""
        state_dict = dict(state_dict)
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for idx, fn in enumerate(lr_lambdas):
            if fn is not None:
                self.lr_lambdas[idx].__dict__.update(fn)


class LambdaLR(_LambdaBase):
    """``lr = initial_lr * lr_lambda(epoch)`` (PyTorch's ``LambdaLR``).

    Args:
        optimizer (Optimizer): wrapped optimiser.
        lr_lambda (callable or list): a function of the epoch (an int), or one
            per param group.
        last_epoch (int): see ``LRScheduler`` (default -1).

    Raises:
        ValueError: a list of functions of another length than the groups.
        TypeError: a function that is not callable.
    """

    def get_lr(self):
        """``base_lr * lr_lambda(last_epoch)`` per group."""
        _warn_get_lr(self)
        return [base_lr * lmbda(self.last_epoch)
                for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaBase):
    """``lr = lr * lr_lambda(epoch)`` at every step after the first (PyTorch's
    ``MultiplicativeLR``).  Arguments and errors as ``LambdaLR``."""

    def get_lr(self):
        """``lr * lr_lambda(last_epoch)`` per group (unchanged at epoch 0)."""
        _warn_get_lr(self)
        if not self._is_initial:
            return [group["lr"] * lmbda(self.last_epoch)
                    for lmbda, group in zip(self.lr_lambdas, self.optimizer.param_groups)]
        return _group_values(self.optimizer, "lr")


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` epochs:
    ``lr = initial_lr * gamma ** (epoch // step_size)`` (PyTorch's ``StepLR``).

    Args:
        optimizer (Optimizer): wrapped optimiser.
        step_size (int): period of the decay.
        gamma (float): factor (default 0.1).
        last_epoch (int): default -1.
    """

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Chainable form."""
        _warn_get_lr(self)
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size)
                for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the rate by ``gamma`` at each milestone epoch (a milestone given k
    times multiplies by ``gamma ** k``): ``lr = initial_lr * gamma **
    bisect_right(milestones, epoch)`` (PyTorch's ``MultiStepLR``).

    Args:
        optimizer (Optimizer): wrapped optimiser.
        milestones (iterable of int): the epochs.
        gamma (float): factor (default 0.1).
        last_epoch (int): default -1.
    """

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Chainable form."""
        _warn_get_lr(self)
        if self.last_epoch not in self.milestones:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch]
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch)
                for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """``lr = initial_lr * factor`` until epoch ``total_iters``, then ``initial_lr``
    (PyTorch's ``ConstantLR``).

    Args:
        optimizer (Optimizer): wrapped optimiser.
        factor (float): in [0, 1] (default 1/3).
        total_iters (int): epochs at the reduced rate (default 5).
        last_epoch (int): default -1.

    Raises:
        ValueError: ``factor`` outside [0, 1] (PyTorch's message).
    """

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Chainable form."""
        _warn_get_lr(self)
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * (1.0 / self.factor) for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters)
                           * (1 - self.factor)) for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """The factor goes linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` epochs: ``lr = initial_lr * (start + (end - start) *
    min(epoch, total_iters) / total_iters)`` (PyTorch's ``LinearLR``).

    Args:
        optimizer (Optimizer): wrapped optimiser.
        start_factor (float): in (0, 1] (default 1/3).
        end_factor (float): in [0, 1] (default 1).
        total_iters (int): default 5.
        last_epoch (int): default -1.

    Raises:
        ValueError: a factor out of its range (PyTorch's messages).
    """

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 "
                             "and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Chainable form."""
        _warn_get_lr(self)
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        change = self.end_factor - self.start_factor
        return [group["lr"] * (1.0 + change / (self.total_iters * self.start_factor
                                               + (self.last_epoch - 1) * change))
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                           * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """``lr = initial_lr * gamma ** epoch`` (PyTorch's ``ExponentialLR``).

    Args:
        optimizer (Optimizer): wrapped optimiser.
        gamma (float): factor per epoch.
        last_epoch (int): default -1.
    """

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Chainable form."""
        _warn_get_lr(self)
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """``lr = initial_lr * (1 - min(epoch, total_iters) / total_iters) ** power``
    (PyTorch's ``PolynomialLR``).

    Args:
        optimizer (Optimizer): wrapped optimiser.
        total_iters (int): epochs of decay (default 5).
        power (float): default 1.
        last_epoch (int): default -1.
    """

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Chainable form."""
        _warn_get_lr(self)
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        decay_factor = ((1.0 - self.last_epoch / self.total_iters)
                        / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [group["lr"] * decay_factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    r"""Cosine annealing (SGDR without restarts), PyTorch's ``CosineAnnealingLR``.

    Closed form: ``lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * epoch /
    T_max)) / 2``; ``step()`` uses PyTorch's recursive form

    .. math:: \eta_{t+1} = \eta_{min} + (\eta_t - \eta_{min})
              \frac{1 + \cos(\pi (t+1) / T_{max})}{1 + \cos(\pi t / T_{max})}

    (equal to the closed form while nothing else changes the rate; past
    ``T_max`` the rate rises again along the same cosine, as in PyTorch).

    Args:
        optimizer (Optimizer): wrapped optimiser.
        T_max (int): half period, in epochs.
        eta_min (float): minimum rate (default 0).
        last_epoch (int): default -1.
    """

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """Recursive (chainable) form."""
        _warn_get_lr(self)
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min)
                    * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min)
                    * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, self.optimizer.param_groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (group["lr"] - self.eta_min) + self.eta_min
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


from tensorplay.optim._lr_scheduler_more import (ChainedScheduler, OneCycleLR,  # noqa: E402
                                                 ReduceLROnPlateau, SequentialLR)
from tensorplay.optim._lr_scheduler_cyclic import (CosineAnnealingWarmRestarts,  # noqa: E402
                                                   CyclicLR)


def __getattr__(name):
    from tensorplay.optim._torch_names import LR_SCHEDULER, missing
    raise missing("optim.lr_scheduler", LR_SCHEDULER, name)
