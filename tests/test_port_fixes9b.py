"""What the second tutorial port (issue 9) found: inputs PyTorch refuses that
tensorplay accepted.  Each case is checked against torch 2.13 when installed, and
against the message tensorplay promises otherwise."""
import pytest

import tensorplay as tp
import tensorplay.nn.functional as F


def _raises_both(tp_call, torch_call, match):
    with pytest.raises(RuntimeError, match=match):
        tp_call()
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError):
        torch_call(torch)


def test_sdpa_float_mask_of_another_dtype():
    q = tp.randn(5, 4)
    _raises_both(
        lambda: F.scaled_dot_product_attention(q, q, q,
                                               attn_mask=tp.zeros(5, 5, dtype=tp.float64)),
        lambda t: t.nn.functional.scaled_dot_product_attention(
            t.randn(5, 4), t.randn(5, 4), t.randn(5, 4),
            attn_mask=t.zeros(5, 5, dtype=t.float64)),
        "attn_mask dtype")
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=tp.zeros(5, 5))    # same dtype
    assert out.shape == (5, 4)


def test_instance_norm_affine_mixed_dtype():
    x = tp.randn(3, 2, 5, dtype=tp.float64)
    _raises_both(lambda: tp.nn.InstanceNorm1d(2, affine=True)(x),
                 lambda t: t.nn.InstanceNorm1d(2, affine=True)(
                     t.randn(3, 2, 5, dtype=t.float64)),
                 "mixed dtype")
    # running statistics of another dtype are fine, as in torch
    y = tp.nn.InstanceNorm1d(2, track_running_stats=True)(x)
    assert y.dtype == tp.float64


@pytest.mark.parametrize("hook, match", [
    (lambda m, gi, go: gi[0] * 2, "tuple"),
    (lambda m, gi, go: (gi[0].double(),), "changed the type"),
    (lambda m, gi, go: (gi[0][:2],), "changed the size"),
    (lambda m, gi, go: (gi[0], gi[0]), "invalid number of grad_input"),
])
def test_full_backward_hook_bad_results(hook, match):
    m = tp.nn.Linear(3, 2)
    x = tp.randn(4, 3, requires_grad=True)
    m.register_full_backward_hook(hook)
    with pytest.raises(RuntimeError, match=match):
        m(x).sum().backward()
    torch = pytest.importorskip("torch")
    tm = torch.nn.Linear(3, 2)
    tx = torch.randn(4, 3, requires_grad=True)
    tm.register_full_backward_hook(hook)
    with pytest.raises(RuntimeError):
        tm(tx).sum().backward()


def test_full_backward_hook_good_result_scales_the_gradient():
    m = tp.nn.Linear(3, 2).double()
    x = tp.randn(4, 3, dtype=tp.float64, requires_grad=True)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 2,))
    m(x).sum().backward()
    expected = 2 * m.weight.detach().sum(0).expand(4, 3)
    assert tp.allclose(x.grad, expected, rtol=1e-12, atol=1e-14)


def test_cross_entropy_float_class_targets_name_the_dtype():
    with pytest.raises(RuntimeError, match="expected target dtype to be int64"):
        F.cross_entropy(tp.randn(2, 3), tp.tensor([0.0, 1.0]))
