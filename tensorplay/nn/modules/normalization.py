"""Normalisation modules (PyTorch's ``torch.nn.modules.batchnorm`` and
``normalization``): ``BatchNorm1d``, ``BatchNorm2d``, ``LayerNorm``,
``GroupNorm``, over ``nn.functional.batch_norm`` / ``layer_norm`` / ``group_norm``.

BatchNorm keeps PyTorch's buffers (``running_mean`` zeros, ``running_var`` ones,
``num_batches_tracked`` int64 0) and update rule: in training mode the running
statistics move by ``momentum`` (the unbiased batch variance), or, with
``momentum=None``, by ``1 / num_batches_tracked`` (a cumulative average); in eval
mode they normalise.  Without ``track_running_stats`` the buffers are None and
batch statistics are used in both modes.
"""
import numbers

import tensorplay
from tensorplay.nn import functional as F
from tensorplay.nn import init
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm"]


def _affine_params(module, affine, bias, shape, kw):
    """``weight`` (and ``bias`` unless ``bias=False``) of ``shape``, or None."""
    if affine:
        module.weight = Parameter(tensorplay.empty(shape, **kw))
        if bias:
            module.bias = Parameter(tensorplay.empty(shape, **kw))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(module):
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class _BatchNorm(Module):
    _version = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if isinstance(num_features, bool) or not isinstance(num_features, int) \
                or num_features <= 0:
            raise ValueError(f"{type(self).__name__}: num_features must be a positive int, "
                             f"got {num_features!r}")
        if momentum is not None and (isinstance(momentum, bool)
                                     or not isinstance(momentum, numbers.Real)):
            raise TypeError(f"{type(self).__name__}: momentum must be a number or None, got "
                            f"{type(momentum).__name__}")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        kw = {"dtype": dtype, "device": device}
        _affine_params(self, affine, bias, num_features, kw)
        if track_running_stats:
            self.register_buffer("running_mean", tensorplay.zeros(num_features, **kw))
            self.register_buffer("running_var", tensorplay.ones(num_features, **kw))
            self.register_buffer("num_batches_tracked",
                                 tensorplay.tensor(0, dtype=tensorplay.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        """Running mean 0, variance 1, batch count 0."""
        if self.track_running_stats:
            with tensorplay.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        """Running statistics reset; weight 1, bias 0."""
        self.reset_running_stats()
        _reset_affine(self)

    def extra_repr(self):
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, "
                "bias={use_bias}, track_running_stats={track_running_stats}".format(
                    **self.__dict__, use_bias=self.bias is not None))

    def _check_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                               missing_keys, unexpected_keys, error_msgs, plan):
        # PyTorch: a checkpoint from before version 2 has no num_batches_tracked;
        # it loads as 0 (without writing into the caller's dict)
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and \
                key not in state_dict:
            state_dict = dict(state_dict)
            state_dict[key] = tensorplay.tensor(0, dtype=tensorplay.int64)
        super()._check_from_state_dict(state_dict, prefix, local_metadata, strict,
                                       missing_keys, unexpected_keys, error_msgs, plan)

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with tensorplay.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        bn_training = True if self.training else (self.running_mean is None
                                                  and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias,
                            bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L) inputs (``torch.nn.BatchNorm1d``).

    Args: ``num_features (C), eps=1e-5, momentum=0.1 (None: cumulative
    average), affine=True, track_running_stats=True, device=None, dtype=None,
    *, bias=True`` (torch 2.13's keyword: False drops the bias of the affine part).

    Raises:
        ValueError (forward): an input that is not 2-D or 3-D.
    """

    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W) inputs (``torch.nn.BatchNorm2d``).

    Args: as ``BatchNorm1d``.

    Raises:
        ValueError (forward): an input that is not 4-D.
    """

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class LayerNorm(Module):
    """Normalise over the last dims ``normalized_shape`` (``torch.nn.LayerNorm``).

    Args: ``normalized_shape (int or tuple), eps=1e-5, elementwise_affine=True,
    bias=True, device=None, dtype=None``; weight ones and bias zeros of
    ``normalized_shape``.
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        kw = {"dtype": dtype, "device": device}
        _affine_params(self, elementwise_affine, bias, self.normalized_shape, kw)
        self.reset_parameters()

    def reset_parameters(self):
        """Weight 1, bias 0."""
        _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return ("{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}, "
                "bias={use_bias}".format(**self.__dict__, use_bias=self.bias is not None))


class GroupNorm(Module):
    """Normalise over groups of channels (``torch.nn.GroupNorm``).

    Args: ``num_groups, num_channels, eps=1e-5, affine=True, device=None,
    dtype=None``; per-channel weight ones and bias zeros.

    Raises:
        ValueError: num_channels not divisible by num_groups.
    """

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        kw = {"dtype": dtype, "device": device}
        _affine_params(self, affine, bias, num_channels, kw)
        self.reset_parameters()

    def reset_parameters(self):
        """Weight 1, bias 0."""
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return ("{num_groups}, {num_channels}, eps={eps}, affine={affine}, "
                "bias={use_bias}".format(**self.__dict__, use_bias=self.bias is not None))
