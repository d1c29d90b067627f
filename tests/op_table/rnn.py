"""Op-table rows of the fused recurrent cells (tensorplay/_ops/rnn.py):
lstm_cell ([h', c'] stacked) and gru_cell (h').  References are numpy closed forms of PyTorch's gate equations;
the torch counterpart is the same equations in torch ops (torch's own fused
cells are private)."""
import numpy as np

from tensorplay._ops.rnn import gru_cell, lstm_cell_packed

from ._base import Fuzz, OpSpec, _normal, _side, fixed_samples


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _lstm_ref(gx, gh, c):
    i, f, g, o = np.split(gx + gh, 4, axis=-1)
    i, f, g, o = _sig(i), _sig(f), np.tanh(g), _sig(o)
    c1 = f * c + i * g
    t = np.tanh(c1)
    return np.stack([o * t, c1])


def _lstm_torch(T, gx, gh, c):
    i, f, g, o = (gx + gh).chunk(4, -1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    c1 = f * c + i * g
    t = c1.tanh()
    return T.stack([o * t, c1])


def _gru_ref(gx, gh, h):
    xr, xz, xn = np.split(gx, 3, axis=-1)
    hr, hz, hn = np.split(gh, 3, axis=-1)
    r, z = _sig(xr + hr), _sig(xz + hz)
    n = np.tanh(xn + r * hn)
    return (1 - z) * n + z * h


def _gru_torch(T, gx, gh, h):
    xr, xz, xn = gx.chunk(3, -1)
    hr, hz, hn = gh.chunk(3, -1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return (1 - z) * n + z * h


def _cell_samples(k):
    return fixed_samples(
        ("2d", [(_normal, (3, k * 2)), (_normal, (3, k * 2)), (_normal, (3, 2))], {}),
        ("3d", [(_normal, (2, 2, k * 3)), (_normal, (2, 2, k * 3)), (_normal, (2, 2, 3))],
         {}),
        ("1d", [(_normal, (k,)), (_normal, (k,)), (_normal, (1,))], {}),
        ("noncontig", [(_normal, (3, k * 2)), (_normal, (3, k * 2)), (_normal, (3, 2))],
         {}))


def _cell_shapes(k):
    def shapes(draw):
        rows, hidden = _side(draw, 1, 3), _side(draw, 1, 3)
        return [(rows, k * hidden), (rows, k * hidden), (rows, hidden)]
    return shapes


SPECS = [
    OpSpec("lstm_cell", lstm_cell_packed, _lstm_ref, _cell_samples(4),
           fuzz=Fuzz("lstm_cell", ("input_gates", "hidden_gates", "cx"),
                     shapes=_cell_shapes(4), special=False),
           torch=_lstm_torch),
    OpSpec("gru_cell", gru_cell, _gru_ref, _cell_samples(3),
           fuzz=Fuzz("gru_cell", ("input_gates", "hidden_gates", "hx"),
                     shapes=_cell_shapes(3), special=False),
           torch=_gru_torch),
]
