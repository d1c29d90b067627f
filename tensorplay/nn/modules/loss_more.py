"""More loss modules (PyTorch's ``torch.nn.modules.loss``, issue 9 second step):
thin wrappers over the ``nn.functional`` losses of ``tensorplay/_ops/loss_more.py``
with PyTorch's constructor arguments; ``weight`` is a buffer, as PyTorch."""
from tensorplay.nn import functional as F
from tensorplay.nn.modules.loss import _Loss, _WeightedLoss
from tensorplay.nn.modules.module import Module

__all__ = ["MarginRankingLoss", "HingeEmbeddingLoss", "SoftMarginLoss",
           "MultiLabelSoftMarginLoss", "MultiLabelMarginLoss", "MultiMarginLoss",
           "TripletMarginLoss", "TripletMarginWithDistanceLoss", "CosineEmbeddingLoss",
           "PoissonNLLLoss", "GaussianNLLLoss"]


class MarginRankingLoss(_Loss):
    """``max(0, -y (x1 - x2) + margin)`` (``torch.nn.MarginRankingLoss``).
    Args: ``margin=0.0, size_average=None, reduce=None, reduction='mean'``."""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``x`` for ``y = 1``, ``max(0, margin - x)`` for ``y = -1``
    (``torch.nn.HingeEmbeddingLoss``).  Args: ``margin=1.0, ...``."""

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """``log(1 + exp(-y x))`` (``torch.nn.SoftMarginLoss``)."""

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class logistic loss averaged over classes (``torch.nn.MultiLabelSoftMarginLoss``).
    Args: ``weight=None (C,), size_average=None, reduce=None, reduction='mean'``."""

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss over int64 class-list targets
    (``torch.nn.MultiLabelMarginLoss``)."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss (``torch.nn.MultiMarginLoss``).

    Args: ``p=1 (1 or 2), margin=1.0, weight=None (C,), size_average=None,
    reduce=None, reduction='mean'``.

    Raises:
        ValueError: p not 1 or 2, a weight that is not 1-D (PyTorch's messages).
    """

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p != 1 and p != 2:
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.dim()}D instead")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``max(0, margin + d(a, p) - d(a, n))`` with the p-norm distance
    (``torch.nn.TripletMarginLoss``).  Args: ``margin=1.0, p=2.0, eps=1e-6,
    swap=False, size_average=None, reduce=None, reduction='mean'``."""

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                 reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """The triplet loss for any distance (``torch.nn.TripletMarginWithDistanceLoss``).

    Args: ``*, distance_function=None (PairwiseDistance()), margin=1.0, swap=False,
    reduction='mean'``.

    Raises:
        ValueError: margin <= 0.
    """

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(None, None, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        if distance_function is None:
            from tensorplay.nn.modules.distance import PairwiseDistance
            distance_function = PairwiseDistance()
        self.distance_function = distance_function
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """``1 - cos`` for ``y = 1``, ``max(0, cos - margin)`` for ``y = -1``
    (``torch.nn.CosineEmbeddingLoss``).  Args: ``margin=0.0, ...``."""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood (``torch.nn.PoissonNLLLoss``).  Args:
    ``log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
    reduction='mean'``."""

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input,
                                  full=self.full, eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood (``torch.nn.GaussianNLLLoss``): ``forward(input,
    target, var)``.  Args: ``*, full=False, eps=1e-6, reduction='mean'``."""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


del Module
