"""Optimisers and learning-rate schedules (PyTorch's ``torch.optim``).

``Optimizer`` (param groups, ``state``, ``state_dict``/``load_state_dict`` in
PyTorch's format, step hooks), ``SGD``, ``Adam``, ``AdamW``, ``RMSprop``,
``Adagrad``, ``LBFGS``, and ``lr_scheduler``.  Every optimiser works on any
leaf ``Tensor`` with ``requires_grad=True`` (``nn.Parameter`` included), updates it
in place outside the autograd graph, and follows PyTorch's update formulas in
PyTorch's order of operations, so float64 trajectories match PyTorch's to
round-off.
"""
from tensorplay.optim import lr_scheduler  # noqa: F401
from tensorplay.optim.adagrad import Adagrad
from tensorplay.optim.adam import Adam
from tensorplay.optim.adamw import AdamW
from tensorplay.optim.lbfgs import LBFGS
from tensorplay.optim.optimizer import Optimizer
from tensorplay.optim.rmsprop import RMSprop
from tensorplay.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "LBFGS",
           "lr_scheduler"]
