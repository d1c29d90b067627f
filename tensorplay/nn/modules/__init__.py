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
from tensorplay.nn.modules.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from tensorplay.nn.modules.pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d,
                                           AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d,
                                           AvgPool2d, ConstantPad1d, ConstantPad2d, MaxPool1d,
                                           MaxPool2d, ReflectionPad1d, ReflectionPad2d,
                                           ReplicationPad1d, ReplicationPad2d, Upsample,
                                           UpsamplingBilinear2d, UpsamplingNearest2d,
                                           ZeroPad1d, ZeroPad2d)
from tensorplay.nn.modules.normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm
from tensorplay.nn.modules.dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d
from tensorplay.nn.modules.sparse import Embedding
from tensorplay.nn.modules.loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss,
                                        HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss,
                                        SmoothL1Loss)
from tensorplay.nn.modules.distance import CosineSimilarity, Fold, PairwiseDistance, Unfold
from tensorplay.nn.modules.rnn import (GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell,
                                       RNNCellBase)
# --- attn9 --- attention and Transformer (issue 9, second step)
from tensorplay.nn.modules.activation_attention import (MultiheadAttention,
                                                        NonDynamicallyQuantizableLinear)
from tensorplay.nn.modules.transformer import (Transformer, TransformerDecoder,
                                               TransformerDecoderLayer, TransformerEncoder,
                                               TransformerEncoderLayer)

# --- layers9 ---
from tensorplay.nn.modules.instancenorm import (InstanceNorm1d, InstanceNorm2d,
                                                InstanceNorm3d)
from tensorplay.nn.modules.normalization_more import (BatchNorm3d, CrossMapLRN2d,
                                                      LocalResponseNorm, RMSNorm,
                                                      SyncBatchNorm)
from tensorplay.nn.modules.pixelshuffle import (ChannelShuffle, PixelShuffle,
                                                PixelUnshuffle)
from tensorplay.nn.modules.pooling_more import (FractionalMaxPool2d,
                                                FractionalMaxPool3d, LPPool1d, LPPool2d,
                                                MaxUnpool1d, MaxUnpool2d)
from tensorplay.nn.modules.loss_more import (CosineEmbeddingLoss, GaussianNLLLoss,
                                             HingeEmbeddingLoss, MarginRankingLoss,
                                             MultiLabelMarginLoss, MultiLabelSoftMarginLoss,
                                             MultiMarginLoss, PoissonNLLLoss, SoftMarginLoss,
                                             TripletMarginLoss, TripletMarginWithDistanceLoss)
from tensorplay.nn.modules.sparse import EmbeddingBag
from tensorplay.nn.modules.dropout import FeatureAlphaDropout
from tensorplay.nn.modules.activation_more import RReLU

__all__ = [
    "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "Identity", "Linear", "Bilinear", "LazyLinear", "Flatten", "Unflatten",
    "ReLU", "ReLU6", "Sigmoid", "Tanh", "SiLU", "Mish", "GELU", "ELU", "CELU", "SELU",
    "LeakyReLU", "Hardtanh", "Hardsigmoid", "Hardswish", "Softplus", "LogSigmoid",
    "Softmax", "LogSoftmax", "Softmin", "Softmax2d", "Softsign", "Tanhshrink", "Threshold",
    "Hardshrink", "Softshrink", "PReLU", "GLU",
    "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d",
    "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "ConstantPad1d", "ConstantPad2d", "ZeroPad1d",
    "ZeroPad2d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
    "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
    "BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm",
    "Dropout", "Dropout1d", "Dropout2d", "AlphaDropout", "Embedding",
    "L1Loss", "MSELoss", "NLLLoss", "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss",
    "KLDivLoss", "SmoothL1Loss", "HuberLoss",
    "CosineSimilarity", "PairwiseDistance", "Fold", "Unfold",
    "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
]

# --- attn9 ---
__all__ += ["MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder",
            "TransformerEncoderLayer", "TransformerDecoderLayer"]
# --- layers9 ---
__all__ += [
    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm", "LocalResponseNorm",
    "BatchNorm3d", "CrossMapLRN2d", "SyncBatchNorm", "PixelShuffle", "PixelUnshuffle",
    "ChannelShuffle", "MaxUnpool1d", "MaxUnpool2d", "LPPool1d", "LPPool2d",
    "FractionalMaxPool2d", "FractionalMaxPool3d", "MarginRankingLoss", "HingeEmbeddingLoss",
    "SoftMarginLoss", "MultiLabelSoftMarginLoss", "MultiLabelMarginLoss", "MultiMarginLoss",
    "TripletMarginLoss", "TripletMarginWithDistanceLoss", "CosineEmbeddingLoss",
    "PoissonNLLLoss", "GaussianNLLLoss", "EmbeddingBag", "FeatureAlphaDropout", "RReLU",
]
