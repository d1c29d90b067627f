"""``CosineSimilarity``, ``PairwiseDistance`` (PyTorch's
``torch.nn.modules.distance``) and ``Fold``/``Unfold`` (``torch.nn.modules.fold``),
over ``nn.functional``."""
from tensorplay.nn import functional as F
from tensorplay.nn.modules.module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance", "Fold", "Unfold"]


class CosineSimilarity(Module):
    """``x1 . x2 / max(|x1| |x2|, eps)`` along ``dim`` (default 1, eps 1e-8)."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` along the last dim (p=2, eps=1e-6, keepdim=False)."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class Fold(Module):
    """Sum sliding blocks back into a (N, C, *output_size) tensor (``torch.nn.Fold``)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        return ("output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, "
                "padding={padding}, stride={stride}".format(**self.__dict__))


class Unfold(Module):
    """Extract sliding blocks: (N, C, H, W) -> (N, C*kH*kW, L) (``torch.nn.Unfold``)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return ("kernel_size={kernel_size}, dilation={dilation}, padding={padding}, "
                "stride={stride}".format(**self.__dict__))
