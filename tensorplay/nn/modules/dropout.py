"""Dropout modules (PyTorch's ``torch.nn.modules.dropout``): identity in eval
mode, ``nn.functional.dropout*`` (seeded by tensorplay's generator) in training."""
import numbers

from tensorplay.nn import functional as F
from tensorplay.nn.modules.module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "AlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p),
    in training mode (``torch.nn.Dropout``).

    Raises:
        ValueError: ``p`` outside [0, 1].
    """

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) / (C, L) inputs (``torch.nn.Dropout1d``)."""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) inputs (``torch.nn.Dropout2d``)."""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's mean and variance (``torch.nn.AlphaDropout``)."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


# --- layers9 ---
class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels of (N, C, *) input, in training mode
    (``torch.nn.FeatureAlphaDropout``; see ``F.feature_alpha_dropout``)."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)


__all__ += ["FeatureAlphaDropout"]
