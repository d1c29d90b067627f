"""Benchmark inputs of the normalisation primitives (see bench_ops.OPS): n elements
as (n/64, 64) rows / batches of 64 channels."""
import tensorplay as tp
from tensorplay._ops.normalization import batch_norm_backward
from tensorplay._ops.normalization_rows import layer_norm_backward

from ..common import array

F = tp.nn.functional


def _bn(n, d):
    rows = max(2, n // 64)
    return (array((rows, 64), d), array((64,), d, 0.5, 1.5), array((64,), d))


def _bnb(n, d):
    rows = max(2, n // 64)
    return (array((rows, 64), d), array((rows, 64), d), array((64,), d, 0.5, 1.5))


OPS = {
    "batch_norm": (_bn, lambda x, w, b: F.batch_norm(x, None, None, w, b, True)),
    "batch_norm_backward": (_bnb, batch_norm_backward),
    "layer_norm": (_bn, lambda x, w, b: F.layer_norm(x, (64,), w, b)),
    "layer_norm_backward": (_bnb, layer_norm_backward),
    "group_norm": (_bn, lambda x, w, b: F.group_norm(x, 8, w, b)),
}
