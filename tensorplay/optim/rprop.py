"""``Rprop``: resilient backpropagation (PyTorch's ``torch.optim.Rprop``)."""
import numpy as np

from tensorplay._tensor import Tensor
from tensorplay.optim._elementwise import _Elementwise, _zeros
from tensorplay.optim.optimizer import _check_lr, _value

__all__ = ["Rprop"]


def _rprop_update(p, g, prev, ss, t0, t1, maximize, etaminus, etaplus, step_min, step_max):
    """One Rprop update of ``p``, ``prev`` and ``ss`` (step_size) in place from
    ``g`` (not written; ``t0``, ``t1`` scratch), PyTorch's ``_single_tensor_rprop``:
    a sign change since the last step shrinks the step and skips this one."""
    if maximize:
        g = np.negative(g, out=t0)
    np.multiply(g, prev, out=t1)                    # sign of g * prev -> factor
    np.sign(t1, out=t1)
    flipped = t1 < 0
    same = t1 > 0
    np.copyto(t1, 1.0, where=t1 == 0)
    np.copyto(t1, etaplus, where=same)
    np.copyto(t1, etaminus, where=flipped)
    ss *= t1
    np.clip(ss, step_min, step_max, out=ss)
    np.copyto(prev, g)                              # g with the flipped entries 0
    np.copyto(prev, 0, where=flipped)
    np.sign(prev, out=t1)                           # p -= sign(g) * step_size
    t1 *= ss
    p -= t1


class Rprop(_Elementwise):
    r"""Rprop (Riedmiller & Braun, 1993), PyTorch's ``torch.optim.Rprop``.

    Each element keeps its own step size :math:`s` (starting at ``lr``), and
    moves by the gradient's sign only.  With :math:`g` the gradient (negated
    when ``maximize``) and :math:`g'` the one kept from the last step::

        g * g' > 0:  s = min(s * etaplus, step_size_max);   p = p - sign(g) * s
        g * g' < 0:  s = max(s * etaminus, step_size_min);  g = 0 (no move)
        g * g' = 0:  s unchanged (clamped);                 p = p - sign(g) * s
        g' = g

    Args:
        params (iterable): tensors or param-group dicts (see ``Optimizer``).
        lr (float or Tensor, optional): initial step size (default 1e-2).
        etas (Tuple[float, float], optional): (etaminus, etaplus), with
            ``0 < etaminus < 1 < etaplus`` (default (0.5, 1.2)).
        step_sizes (Tuple[float, float], optional): (min, max) step size
            (default (1e-6, 50)).
        capturable, foreach (optional): accepted and kept (one implementation).
        maximize (bool, optional): maximise the objective (default False).
        differentiable (bool, optional): must be False.

    PyTorch's Rprop has no ``weight_decay``; neither has this one.
    State per parameter: ``step`` (0-d float32), ``prev``, ``step_size``.

    Raises:
        ValueError: negative lr; etas out of order (PyTorch's messages).
        TypeError: etas or step_sizes not a pair.
        NotImplementedError: ``differentiable=True``.
    """
    _state_keys = ("prev", "step_size")
    _bump = "addcmul_"
    _update = staticmethod(_rprop_update)

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        for name, pair in (("etas", etas), ("step_sizes", step_sizes)):
            if isinstance(pair, Tensor) or not hasattr(pair, "__len__") or len(pair) != 2:
                raise TypeError(f"Rprop(): {name} must be a pair of floats, got {pair!r}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _new_state(self, group, pd):
        return {"prev": _zeros(pd),
                "step_size": Tensor._wrap(np.full_like(pd, _value(group["lr"]), order="C"))}

    def _prepare(self, group, state, step):
        etaminus, etaplus = group["etas"]
        step_min, step_max = group["step_sizes"]
        return group["maximize"], etaminus, etaplus, step_min, step_max
