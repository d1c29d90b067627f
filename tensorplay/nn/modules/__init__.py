"""The module classes of ``tensorplay.nn``, one file per family (PyTorch's
``torch.nn.modules`` layout)."""
from tensorplay.nn.modules.module import Module
from tensorplay.nn.modules.container import (ModuleDict, ModuleList, ParameterDict,
                                             ParameterList, Sequential)
from tensorplay.nn.modules.linear import Bilinear, Identity, LazyLinear, Linear
from tensorplay.nn.modules.flatten import Flatten, Unflatten
from tensorplay.nn.modules.activation import (CELU, ELU, GELU, GLU, SELU, Hardshrink,
                                              Hardsigmoid, Hardswish, Hardtanh, LeakyReLU,
                                              LogSigmoid, LogSoftmax, Mish, PReLU, ReLU,
                                              ReLU6, Sigmoid, SiLU, Softmax, Softmax2d,
                                              Softmin, Softplus, Softshrink, Softsign, Tanh,
                                              Tanhshrink, Threshold)
from tensorplay.nn.modules.rnn import (GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell,
                                       RNNCellBase)

__all__ = [
    "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "Identity", "Linear", "Bilinear", "LazyLinear", "Flatten", "Unflatten",
    "ReLU", "ReLU6", "Sigmoid", "Tanh", "SiLU", "Mish", "GELU", "ELU", "CELU", "SELU",
    "LeakyReLU", "Hardtanh", "Hardsigmoid", "Hardswish", "Softplus", "LogSigmoid",
    "Softmax", "LogSoftmax", "Softmin", "Softmax2d", "Softsign", "Tanhshrink", "Threshold",
    "Hardshrink", "Softshrink", "PReLU", "GLU",
    "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
]
