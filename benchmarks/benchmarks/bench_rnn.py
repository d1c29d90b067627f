"""asv suite: recurrent layers, forward + backward of one batch (issue 9).

``LSTM``/``GRU`` (input 32, hidden 128, 1 or 2 layers, batch 64, 50 steps,
float32, batch_first) at the default threads, as PyTorch's ``nn.LSTM`` example
shapes; ``fused`` toggles the fused cell primitives (False is the op-by-op
reference path), and ``PackedLSTM`` runs the same LSTM on a PackedSequence of
lengths 50 down to 26.  Compare against torch in fresh processes (README's Speed
section); asv times tensorplay alone.
"""
import numpy as np

import tensorplay as tp
from tensorplay.nn.modules import _recurrence
from tensorplay.nn.utils import rnn as rnn_utils

from .common import array


class Recurrent:
    params = [["LSTM", "GRU"], [1, 2], [True, False]]
    param_names = ["mode", "num_layers", "fused"]
    timeout = 60

    def setup(self, mode, num_layers, fused):
        tp.manual_seed(0)
        self.m = getattr(tp.nn, mode)(32, 128, num_layers, batch_first=True)
        self.x = array((64, 50, 32), "float32")
        self.fused = fused

    def teardown(self, mode, num_layers, fused):
        _recurrence.FUSED = True

    def time_forward_backward(self, mode, num_layers, fused):
        _recurrence.FUSED = self.fused
        out, _ = self.m(self.x)
        out.sum().backward()


class PackedLSTM:
    timeout = 60

    def setup(self):
        tp.manual_seed(0)
        self.m = tp.nn.LSTM(32, 128, batch_first=True)
        self.x = array((64, 50, 32), "float32")
        self.lengths = list(np.linspace(50, 26, 64).astype(int))

    def time_forward_backward(self):
        p = rnn_utils.pack_padded_sequence(self.x, self.lengths, batch_first=True)
        out, (h, c) = self.m(p)
        (out.data.sum() + h.sum()).backward()
