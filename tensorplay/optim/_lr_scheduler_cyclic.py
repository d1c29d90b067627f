"""Cyclical schedules (split from lr_scheduler.py, which re-exports them):
``CyclicLR`` and ``CosineAnnealingWarmRestarts`` -- PyTorch's, with its formulas."""
import math
import types

from tensorplay.optim.lr_scheduler import (LRScheduler, _check_optimizer, _format_param,
                                           _set_group_value, _warn_get_lr)

__all__ = ["CyclicLR", "CosineAnnealingWarmRestarts"]


def _set_momentum(optimizer, use_beta1, momentums):
    """Write each group's momentum, or Adam's beta1 (``betas[0]``)."""
    for group, momentum in zip(optimizer.param_groups, momentums):
        if use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum


class CyclicLR(LRScheduler):
    r"""Cyclical learning rates (Smith, 2017), PyTorch's ``CyclicLR``: the rate
    goes from ``base_lr`` up to ``max_lr`` over ``step_size_up`` steps and back
    over ``step_size_down``, the amplitude scaled per cycle or per step; the
    momentum (or Adam's beta1) moves the opposite way.  Step it once per batch.

    With ``c = floor(1 + t / (up + down))``, ``x = 1 + t / (up + down) - c`` and
    ``r = up / (up + down)``: ``h = x / r`` while ``x <= r``, else ``(x - 1) / (r -
    1)``, and ``lr = base_lr + (max_lr - base_lr) * h * scale``, where ``scale`` is
    1 (``"triangular"``), ``1 / 2**(c - 1)`` (``"triangular2"``), ``gamma**t``
    (``"exp_range"``), or ``scale_fn(c)`` / ``scale_fn(t)`` (``scale_mode``
    ``"cycle"`` / ``"iterations"``).  ``momentum = max_momentum - (max_momentum -
    base_momentum) * h * scale``.

    Args:
        optimizer (Optimizer): wrapped optimiser.
        base_lr (float or list): lower rate(s); set in the groups at construction.
        max_lr (float or list): upper rate(s).
        step_size_up (int): steps of the rising half (default 2000).
        step_size_down (int, optional): steps of the falling half (default:
            ``step_size_up``).
        mode (str): ``"triangular"`` (default), ``"triangular2"`` or
            ``"exp_range"``; ignored when ``scale_fn`` is given.
        gamma (float): ``exp_range``'s base (default 1.0).
        scale_fn (callable, optional): a custom ``scale(x)`` in [0, 1].
        scale_mode (str): ``"cycle"`` (default) or ``"iterations"``: what
            ``scale_fn`` is given (the built-in modes set their own).
        cycle_momentum (bool): default True; needs ``momentum`` or ``betas`` in
            the optimiser's defaults.
        base_momentum, max_momentum (float or list): default 0.8, 0.9.
        last_epoch (int): the batch index to resume at (default -1).

    Raises:
        ValueError: an unknown mode without ``scale_fn``; ``cycle_momentum`` with
            an optimiser that has neither momentum nor betas; a list of rates or
            momentums of another length than the groups (PyTorch's messages).
        TypeError: ``optimizer`` is not an Optimizer.
    """

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None,
                 mode="triangular", gamma=1.0, scale_fn=None, scale_mode="cycle",
                 cycle_momentum=True, base_momentum=0.8, max_momentum=0.9, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                _set_group_value(group, "lr", lr)
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None \
            else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with "
                                 "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            self.max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                _set_momentum(optimizer, self.use_beta1, self.max_momentums)
                for m, b, group in zip(self.max_momentums, self.base_momentums,
                                       optimizer.param_groups):
                    group["max_momentum"] = m
                    group["base_momentum"] = b
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self):
        """The built-in mode's scale function and scale mode (none with a custom
        ``scale_fn``)."""
        if self._scale_fn_custom is not None:
            return
        if self.mode in ("triangular", "triangular2"):
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self.scale_mode = "iterations"

    def scale_fn(self, x):
        """The amplitude's scale at ``x`` (the cycle number or the step)."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self):
        """The rate of the current batch (sets the momentum / beta1 too)."""
        _warn_get_lr(self)
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base_lr + (max_lr - base_lr) * scale_factor * scale
               for base_lr, max_lr in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            _set_momentum(self.optimizer, self.use_beta1,
                          [m - (m - b) * scale_factor * scale
                           for b, m in zip(self.base_momentums, self.max_momentums)])
        return lrs

    def state_dict(self):
        """The attributes; ``_scale_fn_custom`` holds None for a plain function or
        lambda, and a callable object's ``__dict__``."""
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict):
        """Load a dict made by ``state_dict()`` (a custom ``scale_fn`` stays this
        scheduler's own; a callable object's saved ``__dict__`` is loaded into it)."""
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    r"""Cosine annealing with warm restarts (SGDR, Loshchilov & Hutter, 2017),
    PyTorch's ``CosineAnnealingWarmRestarts``:

    .. math:: \eta = \eta_{min} + (\eta_{base} - \eta_{min})
              \frac{1 + \cos(\pi T_{cur} / T_i)}{2}

    where :math:`T_{cur}` counts epochs since the last restart and the i-th
    period is :math:`T_i = T_0 T_{mult}^i`.

    ``step()`` advances by one epoch; ``step(epoch)`` jumps to ``epoch``, which
    may be fractional (``epoch + batch / batches_per_epoch`` to anneal within an
    epoch), and finds the period it falls in.  Neither warns (as in PyTorch,
    where this scheduler's ``step(epoch)`` is not deprecated).

    Args:
        optimizer (Optimizer): wrapped optimiser.
        T_0 (int): epochs of the first period (positive).
        T_mult (int): growth factor of the periods (>= 1, default 1).
        eta_min (float): minimum rate (default 0).
        last_epoch (int): default -1.

    Raises:
        ValueError: T_0 not a positive int, T_mult not an int >= 1, eta_min not
            a number; a negative epoch (PyTorch's messages).
    """

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The closed form at ``T_cur`` within the period ``T_i``."""
        _warn_get_lr(self)
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch=None):
        """Advance one epoch, or jump to ``epoch`` (a float allowed).

        Raises:
            ValueError: a negative ``epoch``.
        """
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1),
                                     self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._apply_lr(self.get_lr)
