"""``RReLU`` (PyTorch's ``torch.nn.RReLU``), issue 9 second step."""
from tensorplay.nn import functional as F
from tensorplay.nn.modules.module import Module

__all__ = ["RReLU"]


class RReLU(Module):
    """Randomized leaky ReLU: negative slopes drawn from U(lower, upper) per element
    in training (tensorplay's seeded generator), ``(lower + upper) / 2`` in eval.

    Args: ``lower=1/8, upper=1/3, inplace=False``.
    """

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}{', inplace=True' if self.inplace else ''}"
