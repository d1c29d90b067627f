"""More normalisation modules (issue 9, second step): ``RMSNorm``,
``LocalResponseNorm``, ``BatchNorm3d``, and ``CrossMapLRN2d`` / ``SyncBatchNorm``,
which only say what to use instead."""
import numbers

import tensorplay
from tensorplay.nn import functional as F
from tensorplay.nn import init
from tensorplay.nn.modules.module import Module
from tensorplay.nn.modules.normalization import _BatchNorm
from tensorplay.nn.parameter import Parameter

__all__ = ["RMSNorm", "LocalResponseNorm", "BatchNorm3d", "CrossMapLRN2d", "SyncBatchNorm"]


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape``
    (``torch.nn.RMSNorm``): ``x / sqrt(mean(x^2) + eps) * weight``.

    Args: ``normalized_shape (int or tuple), eps=None (the dtype's machine
    epsilon), elementwise_affine=True, device=None, dtype=None``; weight ones.
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(tensorplay.empty(self.normalized_shape, dtype=dtype,
                                                     device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Weight 1."""
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(
            **self.__dict__)


class LocalResponseNorm(Module):
    """``F.local_response_norm`` as a module (``torch.nn.LocalResponseNorm``).

    Args: ``size, alpha=1e-4, beta=0.75, k=1.0``.
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W) inputs (``torch.nn.BatchNorm3d``).

    Args: as ``BatchNorm1d``.

    Raises:
        ValueError (forward): an input that is not 5-D.
    """

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class CrossMapLRN2d(Module):
    """Not implemented (PyTorch's legacy ``nn.CrossMapLRN2d``): raises
    NotImplementedError naming ``LocalResponseNorm``, the same normalisation across
    channels for (N, C, H, W) input."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1, *args, **kwargs):
        raise NotImplementedError(
            "CrossMapLRN2d is not implemented in tensorplay; use "
            f"nn.LocalResponseNorm({size}, alpha={alpha}, beta={beta}, k={k}), which "
            "normalises across the channels of (N, C, H, W) input by the same formula")


class SyncBatchNorm(Module):
    """Not implemented: tensorplay trains in one process, so there is nothing to
    synchronise.  Constructing one raises NotImplementedError naming BatchNorm1d/2d/3d
    (the same computation on one process)."""

    def __init__(self, num_features, *args, **kwargs):
        raise NotImplementedError(
            "SyncBatchNorm is not implemented in tensorplay (training runs in one "
            f"process); use nn.BatchNorm1d/2d/3d({num_features}, ...), which compute the "
            "same statistics over the local batch")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Raises NotImplementedError (see the class); the model's BatchNorm layers
        already do what one process can."""
        raise NotImplementedError(
            "SyncBatchNorm.convert_sync_batchnorm: tensorplay has no SyncBatchNorm (one "
            "process); keep the model's BatchNorm layers as they are")
