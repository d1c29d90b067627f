"""Public names of PyTorch 2.13.0's ``torch.nn``, ``torch.nn.functional``,
``torch.nn.init`` and ``torch.nn.utils``, so that a name tensorplay lacks there can
say "torch.nn.X exists in PyTorch; tensorplay does not implement it yet" rather
than only "no attribute" (the top level's hint is ``_torch_names.py``).

Generated once from ``dir()`` of each module, keeping the public names that are
callables defined in torch (functions, classes) or submodules of that module, and
dropping imported helpers (``math``, ``warnings``, typing names); regenerate when
moving to a newer PyTorch::

    import types, textwrap, torch.nn, torch.nn.functional, torch.nn.init, torch.nn.utils
    def names(mod):
        keep = []
        for n in dir(mod):
            o = getattr(mod, n)
            if n.startswith("_"):
                continue
            if isinstance(o, types.ModuleType):
                if o.__name__.startswith(mod.__name__ + "."):
                    keep.append(n)
            elif callable(o) and (getattr(o, "__module__", None) or "").startswith("torch"):
                keep.append(n)
        return sorted(keep)

Data only (plus ``missing``, the one-line lookup the modules' ``__getattr__`` use).
"""

NN = frozenset("""
AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveLogSoftmaxWithLoss
AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d AlphaDropout AvgPool1d AvgPool2d
AvgPool3d BCELoss BCEWithLogitsLoss BatchNorm1d BatchNorm2d BatchNorm3d Bilinear Buffer
CELU CTCLoss ChannelShuffle CircularPad1d CircularPad2d CircularPad3d ConstantPad1d
ConstantPad2d ConstantPad3d Container Conv1d Conv2d Conv3d ConvTranspose1d
ConvTranspose2d ConvTranspose3d CosineEmbeddingLoss CosineSimilarity CrossEntropyLoss
CrossMapLRN2d DataParallel Dropout Dropout1d Dropout2d Dropout3d ELU Embedding
EmbeddingBag FeatureAlphaDropout Flatten Fold FractionalMaxPool2d FractionalMaxPool3d
GELU GLU GRU GRUCell GaussianNLLLoss GroupNorm Hardshrink Hardsigmoid Hardswish Hardtanh
HingeEmbeddingLoss HuberLoss Identity InstanceNorm1d InstanceNorm2d InstanceNorm3d
KLDivLoss L1Loss LPPool1d LPPool2d LPPool3d LSTM LSTMCell LayerNorm LazyBatchNorm1d
LazyBatchNorm2d LazyBatchNorm3d LazyConv1d LazyConv2d LazyConv3d LazyConvTranspose1d
LazyConvTranspose2d LazyConvTranspose3d LazyInstanceNorm1d LazyInstanceNorm2d
LazyInstanceNorm3d LazyLinear LeakyReLU Linear LinearCrossEntropyLoss
LinearCrossEntropyOptions LocalResponseNorm LogSigmoid LogSoftmax MSELoss
MarginRankingLoss MaxPool1d MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d Mish
Module ModuleDict ModuleList MultiLabelMarginLoss MultiLabelSoftMarginLoss
MultiMarginLoss MultiheadAttention NLLLoss NLLLoss2d PReLU PairwiseDistance Parameter
ParameterDict ParameterList PixelShuffle PixelUnshuffle PoissonNLLLoss RMSNorm RNN
RNNBase RNNCell RNNCellBase RReLU ReLU ReLU6 ReflectionPad1d ReflectionPad2d
ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d SELU Sequential SiLU
Sigmoid SmoothL1Loss SoftMarginLoss Softmax Softmax2d Softmin Softplus Softshrink
Softsign SyncBatchNorm Tanh Tanhshrink Threshold Transformer TransformerDecoder
TransformerDecoderLayer TransformerEncoder TransformerEncoderLayer TripletMarginLoss
TripletMarginWithDistanceLoss Unflatten Unfold UninitializedBuffer
UninitializedParameter Upsample UpsamplingBilinear2d UpsamplingNearest2d ZeroPad1d
ZeroPad2d ZeroPad3d attention common_types factory_kwargs functional grad init intrinsic
modules parallel parameter qat quantizable quantized utils
""".split())

FUNCTIONAL = frozenset("""
ScalingType SwizzleType Tensor adaptive_avg_pool1d adaptive_avg_pool2d
adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool1d_with_indices
adaptive_max_pool2d adaptive_max_pool2d_with_indices adaptive_max_pool3d
adaptive_max_pool3d_with_indices affine_grid alpha_dropout assert_int_or_pair avg_pool1d
avg_pool2d avg_pool3d batch_norm bilinear binary_cross_entropy
binary_cross_entropy_with_logits boolean_dispatch celu celu_ channel_shuffle conv1d
conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d
cosine_embedding_loss cosine_similarity cross_entropy ctc_loss dropout dropout1d
dropout2d dropout3d elu elu_ embedding embedding_bag feature_alpha_dropout fold
fractional_max_pool2d fractional_max_pool2d_with_indices fractional_max_pool3d
fractional_max_pool3d_with_indices gaussian_nll_loss gelu glu grid_sample group_norm
grouped_mm gumbel_softmax handle_torch_function hardshrink hardsigmoid hardswish
hardtanh hardtanh_ has_torch_function has_torch_function_unary
has_torch_function_variadic hinge_embedding_loss huber_loss instance_norm interpolate
kl_div l1_loss layer_norm leaky_relu leaky_relu_ linear linear_cross_entropy
local_response_norm log_softmax logsigmoid lp_pool1d lp_pool2d lp_pool3d
margin_ranking_loss max_pool1d max_pool1d_with_indices max_pool2d
max_pool2d_with_indices max_pool3d max_pool3d_with_indices max_unpool1d max_unpool2d
max_unpool3d mish mse_loss multi_head_attention_forward multi_margin_loss
multilabel_margin_loss multilabel_soft_margin_loss native_channel_shuffle nll_loss
normalize one_hot pad pairwise_distance pdist pixel_shuffle pixel_unshuffle
poisson_nll_loss prelu relu relu6 relu_ rms_norm rrelu rrelu_
scaled_dot_product_attention scaled_grouped_mm scaled_mm selu selu_ sigmoid silu
smooth_l1_loss soft_margin_loss softmax softmin softplus softshrink softsign tanh
tanhshrink threshold threshold_ triplet_margin_loss triplet_margin_with_distance_loss
unfold upsample upsample_bilinear upsample_nearest
""".split())

INIT = frozenset("""
Tensor calculate_gain constant constant_ dirac dirac_ eye eye_ kaiming_normal
kaiming_normal_ kaiming_uniform kaiming_uniform_ normal normal_ ones_ orthogonal
orthogonal_ sparse sparse_ trunc_normal_ uniform uniform_ xavier_normal xavier_normal_
xavier_uniform xavier_uniform_ zeros_
""".split())

UTILS = frozenset("""
clip_grad clip_grad_norm clip_grad_norm_ clip_grad_value_ clip_grads_with_norm_
convert_conv2d_weight_memory_format convert_conv3d_weight_memory_format
convert_parameters fuse_conv_bn_eval fuse_conv_bn_weights fuse_linear_bn_eval
fuse_linear_bn_weights fusion get_total_norm init memory_format parameters_to_vector
parametrizations parametrize remove_spectral_norm remove_weight_norm rnn skip_init
spectral_norm stateless vector_to_parameters weight_norm
""".split())


_TABLES = {"tensorplay.nn": ("torch.nn", NN),
           "tensorplay.nn.functional": ("torch.nn.functional", FUNCTIONAL),
           "tensorplay.nn.init": ("torch.nn.init", INIT),
           "tensorplay.nn.utils": ("torch.nn.utils", UTILS)}


def missing(module, name):
    """The AttributeError for ``module.name`` (``module``: a tensorplay.nn module's
    ``__name__``), with the PyTorch hint when torch has that name there.  Called
    from the module's ``__getattr__``, which Python runs only for names the module
    does not define, so a name tensorplay adds later never gets the hint."""
    torch_mod, table = _TABLES[module]
    if name in table:
        return AttributeError(f"module {module!r} has no attribute {name!r}: "
                              f"{torch_mod}.{name} exists in PyTorch; tensorplay does not "
                              f"implement it yet")
    return AttributeError(f"module {module!r} has no attribute {name!r}")


def module_getattr(module):
    """A PEP 562 ``__getattr__`` for the tensorplay module named ``module``: a
    submodule file that exists is imported (``tensorplay.nn.parallel`` without an
    import first), anything else raises ``missing(module, name)``."""
    def __getattr__(name):
        if not name.startswith("__"):
            import importlib
            import importlib.util
            try:
                found = importlib.util.find_spec(f"{module}.{name}") is not None
            except (ImportError, ValueError):
                found = False
            if found:
                return importlib.import_module(f"{module}.{name}")
        raise missing(module, name)
    return __getattr__
