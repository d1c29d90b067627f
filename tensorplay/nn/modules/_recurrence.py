"""The time loop of ``RNN``/``LSTM``/``GRU`` (tensorplay/nn/modules/rnn.py), for
padded and packed inputs alike.

Every input reaches the loop as 2-D rows in time-major order plus the number of
running sequences per step (``batch_sizes``): a padded (T, N, I) input is T
steps of N rows, a ``PackedSequence`` is its ``data`` with its ``batch_sizes``
(sorted longest first, so the sequences running at step t are rows 0..b_t-1 of
the state).  Per layer and direction:

1. the input projection of all steps is one matmul, ``x W_ih^T + b``;
2. the rows are cut into per-step pieces by recursive halving (``_pieces``):
   slicing T pieces off the whole projection directly would make each piece's
   VJP allocate a projection-sized cotangent (O(T^2) memory traffic, the main
   cost of the loop before); halving makes it O(T log T);
3. the loop runs one step function per step.  Going forward in time the state
   shrinks when sequences end (the rows that leave are kept as those sequences'
   final states); going backward it grows (new sequences start from their
   initial state), which is how PyTorch's h_n holds each sequence's state at its
   own last step;
4. the step outputs are joined with one ``cat``.

Step functions: with ``fused`` (the default) an LSTM/GRU step is ``h W_hh^T``
plus one fused cell primitive (tensorplay/_ops/rnn.py); otherwise (``fused=False``,
the reference the tests compare against) it is the gate math in ordinary ops.
"""
import tensorplay
from tensorplay.nn import functional as F

__all__ = ["run_layers"]

_LEAF = 4          # pieces cut directly off a block of at most this many steps
FUSED = True       # the default of run_layers(fused=None); tests switch it off


def _pieces(t, offsets, lo, hi, out):
    """Append to ``out`` the rows ``offsets[s]:offsets[s+1]`` (relative to
    ``offsets[lo]``) of ``t`` for s in [lo, hi), halving the block first."""
    base = offsets[lo]
    if hi - lo <= _LEAF:
        for s in range(lo, hi):
            out.append(t[offsets[s] - base:offsets[s + 1] - base])
        return
    mid = (lo + hi) // 2
    cut = offsets[mid] - base
    _pieces(t[:cut], offsets, lo, mid, out)
    _pieces(t[cut:], offsets, mid, hi, out)


def _step_fn(mode, w_hh, b_hh, w_hr, fused):
    """``step(gx_t, states) -> (output_t, states)`` for one direction's weights."""
    w_hh_t = w_hh.mT
    if mode == "LSTM":
        w_hr_t = None if w_hr is None else w_hr.mT
        if fused:
            from tensorplay._ops.rnn import lstm_cell

            def step(gx, states):
                h, c = lstm_cell(gx, states[0].matmul(w_hh_t), states[1])
                if w_hr_t is not None:
                    h = h.matmul(w_hr_t)
                return h, (h, c)
        else:
            def step(gx, states):
                h, c = states
                i, f, g, o = (gx + h.matmul(w_hh_t)).chunk(4, 1)
                c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
                h = F.sigmoid(o) * F.tanh(c)
                if w_hr_t is not None:
                    h = h.matmul(w_hr_t)
                return h, (h, c)
        return step
    if mode == "GRU":
        if fused:
            from tensorplay._ops.rnn import gru_cell

            def step(gx, states):
                h = states[0]
                gh = h.matmul(w_hh_t)
                if b_hh is not None:
                    gh = gh + b_hh
                h = gru_cell(gx, gh, h)
                return h, (h,)
        else:
            def step(gx, states):
                h = states[0]
                gh = h.matmul(w_hh_t)
                if b_hh is not None:
                    gh = gh + b_hh
                i_r, i_z, i_n = gx.chunk(3, 1)
                h_r, h_z, h_n = gh.chunk(3, 1)
                r = F.sigmoid(i_r + h_r)
                z = F.sigmoid(i_z + h_z)
                n = F.tanh(i_n + r * h_n)
                h = n + z * (h - n)                  # (1 - z) n + z h
                return h, (h,)
        return step
    act = F.tanh if mode == "RNN_TANH" else F.relu

    def step(gx, states):
        h = act(gx + states[0].matmul(w_hh_t))
        return h, (h,)
    return step


def _direction(mode, gx, offsets, sizes, init, weights, reverse, fused):
    """One direction of one layer over the projected rows ``gx`` (R, G).
    Returns the output rows (R, H_out) and the final states (one (B, *) tensor
    per state kind)."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    steps = len(sizes)
    step = _step_fn(mode, w_hh, b_hh, w_hr, fused)
    gxs = []
    _pieces(gx, offsets, 0, steps, gxs)
    outs = [None] * steps
    full = init[0].shape[0]
    if not reverse:
        states, cur, tails = tuple(init), full, []
        for t in range(steps):
            b = sizes[t]
            if b < cur:           # sequences b..cur-1 ended at step t-1
                tails.append([s[b:cur] for s in states])
                states = tuple(s[:b] for s in states)
                cur = b
            outs[t], states = step(gxs[t], states)
        if tails:
            last = [tensorplay.cat([s] + [tl[k] for tl in reversed(tails)], 0)
                    for k, s in enumerate(states)]
        else:
            last = list(states)
    else:
        cur = sizes[-1] if steps else full
        states = tuple(s[:cur] for s in init) if cur < full else tuple(init)
        for t in range(steps - 1, -1, -1):
            b = sizes[t]
            if b > cur:           # sequences cur..b-1 start here, from their h0
                states = tuple(tensorplay.cat([s, s0[cur:b]], 0)
                               for s, s0 in zip(states, init))
                cur = b
            outs[t], states = step(gxs[t], states)
        last = list(states)
    if steps == 0:
        out = tensorplay.zeros((0, init[0].shape[-1]), dtype=gx.dtype)
    else:
        out = tensorplay.cat(outs, 0)
    return out, last


def run_layers(module, x, sizes, states, fused=None):
    """Run all of ``module``'s layers on the rows ``x`` (R, H_in), time-major with
    ``sizes[t]`` rows at step t.  ``states``: one (L*D, B, *) tensor per state
    kind (h, or h and c).  Returns the output rows (R, D*H_out) and the final
    states stacked in the same layout."""
    if fused is None:
        fused = FUSED
    num_directions = 2 if module.bidirectional else 1
    offsets = [0]
    for b in sizes:
        offsets.append(offsets[-1] + b)
    finals = [[] for _ in states]
    mode = module.mode
    for layer in range(module.num_layers):
        outs = []
        for direction in range(num_directions):
            idx = layer * num_directions + direction
            weights = module._layer_weights(layer, direction)
            w_ih, w_hh, b_ih, b_hh, _ = weights
            gx = x.matmul(w_ih.mT)
            if b_ih is not None:
                # RNN and LSTM add both biases before the gates; GRU keeps b_hh
                # inside r * (h W_hn^T + b_hn)
                gx = gx + (b_ih + b_hh if mode != "GRU" else b_ih)
            out, last = _direction(mode, gx, offsets, sizes, [s[idx] for s in states],
                                   weights, direction == 1, fused)
            outs.append(out)
            for f, s in zip(finals, last):
                f.append(s)
        x = outs[0] if num_directions == 1 else tensorplay.cat(outs, 1)
        if module.dropout and module.training and layer < module.num_layers - 1:
            x = F.dropout(x, module.dropout, True)
    return x, [tensorplay.stack(f, 0) for f in finals]
