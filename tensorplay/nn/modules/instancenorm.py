"""Instance normalisation modules (PyTorch's ``torch.nn.modules.instancenorm``):
``InstanceNorm1d``, ``InstanceNorm2d``, ``InstanceNorm3d`` over
``nn.functional.instance_norm``.

They share BatchNorm's parameters and buffers (and state_dict keys), with
PyTorch's defaults ``affine=False, track_running_stats=False``.  In training (or
without running statistics) each (sample, channel) plane is normalised by its own
statistics, and the running ones, when tracked, move by ``momentum`` (PyTorch does
not count ``num_batches_tracked`` here, and neither does tensorplay); in eval with
tracked statistics the running ones normalise.  Unbatched input (one dim fewer) is
treated as a batch of one.
"""
import warnings

from tensorplay.nn import functional as F
from tensorplay.nn.modules.normalization import _BatchNorm

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_BatchNorm):
    _no_batch_dim = None

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def _check_input_dim(self, input):
        nb = self._no_batch_dim
        if input.dim() not in (nb, nb + 1):
            raise ValueError(f"expected {nb}D or {nb + 1}D input (got {input.dim()}D input)")

    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight,
                               self.bias, self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. "
                          "You can silence this warning by not passing in num_features, "
                          "which is not used because affine=False", stacklevel=2)
        if input.dim() == self._no_batch_dim:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or unbatched (C, L) input
    (``torch.nn.InstanceNorm1d``; Ulyanov et al. 2016).

    Args: ``num_features (C), eps=1e-5, momentum=0.1, affine=False,
    track_running_stats=False, device=None, dtype=None, *, bias=True``.

    Raises:
        ValueError (forward): another rank; a channel count other than num_features
        with ``affine=True`` (without it, PyTorch's warning); one element per plane in
        training (see ``F.instance_norm``).
    """
    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W) input
    (``torch.nn.InstanceNorm2d``); arguments and errors as ``InstanceNorm1d``."""
    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W) input
    (``torch.nn.InstanceNorm3d``); arguments and errors as ``InstanceNorm1d``."""
    _no_batch_dim = 4
