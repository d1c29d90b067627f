"""Benchmark inputs of the fused recurrent cells (see bench_ops.OPS): n elements
of state as (n/64, 64) rows, the gates 4x (LSTM) or 3x (GRU) as wide."""
from tensorplay._ops.rnn import gru_cell, lstm_cell_packed

from ..common import array


def _cell(k):
    def make(n, d):
        rows = max(2, n // 64)
        return (array((rows, k * 64), d), array((rows, k * 64), d), array((rows, 64), d))
    return make


OPS = {
    "lstm_cell": (_cell(4), lstm_cell_packed),
    "gru_cell": (_cell(3), gru_cell),
}
