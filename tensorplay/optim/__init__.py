"""Optimisers and learning-rate schedules (PyTorch's ``torch.optim``).

``Optimizer`` (param groups, ``state``, ``state_dict``/``load_state_dict`` in
PyTorch's format, step hooks), ``SGD``, ``Adam``, ``AdamW``, ``NAdam``, ``RAdam``,
``Adamax``, ``Adadelta``, ``RMSprop``, ``Adagrad``, ``ASGD``, ``Rprop``, ``LBFGS``,
and ``lr_scheduler``.  Every optimiser works on any leaf ``Tensor`` with
``requires_grad=True`` (``nn.Parameter`` included), updates it in place outside
the autograd graph, and follows PyTorch's update formulas in PyTorch's order of
operations, so float64 trajectories match PyTorch's to round-off.  A name of
``torch.optim`` that tensorplay lacks (``SparseAdam``, ``swa_utils``, ...) raises
an AttributeError that says so.
"""
from tensorplay.optim import lr_scheduler  # noqa: F401
from tensorplay.optim.adadelta import Adadelta
from tensorplay.optim.adagrad import Adagrad
from tensorplay.optim.adam import Adam
from tensorplay.optim.adamax import Adamax
from tensorplay.optim.adamw import AdamW
from tensorplay.optim.asgd import ASGD
from tensorplay.optim.lbfgs import LBFGS
from tensorplay.optim.nadam import NAdam
from tensorplay.optim.optimizer import Optimizer
from tensorplay.optim.radam import RAdam
from tensorplay.optim.rmsprop import RMSprop
from tensorplay.optim.rprop import Rprop
from tensorplay.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "Adadelta",
           "RMSprop", "Adagrad", "ASGD", "Rprop", "LBFGS", "lr_scheduler"]


def __getattr__(name):
    from tensorplay.optim._torch_names import OPTIM, missing
    raise missing("optim", OPTIM, name)
