"""Functional neural-network ops (``torch.nn.functional`` names)."""
from tensorplay._ops.elementwise import relu, sigmoid, tanh  # noqa: F401
from tensorplay._ops.nn import cross_entropy, log_softmax, nll_loss, softmax  # noqa: F401

__all__ = ["relu", "sigmoid", "tanh", "log_softmax", "softmax", "nll_loss", "cross_entropy"]
