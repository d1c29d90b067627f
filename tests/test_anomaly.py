"""Anomaly mode: detect_anomaly / set_detect_anomaly / is_anomaly_enabled, the
forward traceback kept per node, and the NaN/inf check naming the op."""
import warnings

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import autograd

F64 = tp.float64


@pytest.fixture(autouse=True)
def _anomaly_off():
    autograd.set_detect_anomaly(False)
    yield
    autograd.set_detect_anomaly(False)


def leaf(values):
    return tp.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def test_switches():
    assert not autograd.is_anomaly_enabled()
    assert autograd.is_anomaly_check_nan_enabled()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with autograd.detect_anomaly():
            assert autograd.is_anomaly_enabled()
            with autograd.detect_anomaly(check_nan=False):
                assert not autograd.is_anomaly_check_nan_enabled()
            assert autograd.is_anomaly_check_nan_enabled()
    assert not autograd.is_anomaly_enabled()
    autograd.set_detect_anomaly(True)
    assert autograd.is_anomaly_enabled()
    autograd.set_detect_anomaly(False)
    with autograd.set_detect_anomaly(True, check_nan=False):
        assert autograd.is_anomaly_enabled() and not autograd.is_anomaly_check_nan_enabled()
    assert not autograd.is_anomaly_enabled() and autograd.is_anomaly_check_nan_enabled()
    with pytest.raises(TypeError, match="mode must be a bool"):
        autograd.set_detect_anomaly(1)
    # also at the top level, as torch.is_anomaly_enabled
    with autograd.set_detect_anomaly(True, check_nan=False):
        assert tp.is_anomaly_enabled() and not tp.is_anomaly_check_nan_enabled()
    assert not tp.is_anomaly_enabled() and tp.is_anomaly_check_nan_enabled()


def test_decorator():
    @autograd.detect_anomaly()
    def f():
        return autograd.is_anomaly_enabled()

    with pytest.warns(UserWarning):
        assert f()
    assert not autograd.is_anomaly_enabled()


def test_nan_names_the_op_and_the_forward_line():
    x = leaf([-1.0, 4.0])
    with pytest.warns(UserWarning):
        with autograd.detect_anomaly():
            y = (x.sqrt() * 2).sum()            # sqrt's VJP: 1 / (2 sqrt(-1)) = nan
            with pytest.raises(RuntimeError) as info:
                y.backward()
    msg = str(info.value)
    assert msg.startswith("Function 'SqrtBackward0' returned nan values in its 0th output.")
    assert "test_anomaly.py" in msg and "y = (x.sqrt() * 2).sum()" in msg
    assert x.grad is None


def test_inf_is_reported_too():
    x = leaf([0.0, 4.0])
    with pytest.warns(UserWarning):
        with autograd.detect_anomaly():
            y = x.sqrt().sum()                   # VJP 1 / (2 sqrt(0)) = inf
            with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned inf "
                                                   "values in its 0th output"):
                y.backward()


def test_no_check_without_mode_or_with_check_nan_false():
    x = leaf([-1.0, 1.0])
    x.sqrt().sum().backward()
    assert np.isnan(x.grad.detach().numpy()[0])
    x.grad = None
    with pytest.warns(UserWarning):
        with autograd.detect_anomaly(check_nan=False):
            x.sqrt().sum().backward()
    assert np.isnan(x.grad.detach().numpy()[0])


def test_traceback_recorded_only_in_mode():
    x = leaf([1.0])
    y = x.exp()
    assert y.grad_fn.hooks is None                       # nothing kept when off
    with pytest.warns(UserWarning):
        with autograd.detect_anomaly():
            z = x.exp()
    tb = z.grad_fn.metadata["traceback_"]
    assert isinstance(tb, list) and "z = x.exp()" in tb[-1]
    assert "test_anomaly.py" in tb[-1]
    assert "traceback_" not in y.grad_fn.metadata


def test_other_backward_errors_warn_with_traceback():
    x = leaf([1.0, 2.0])
    with pytest.warns(UserWarning):
        with autograd.detect_anomaly():
            a = x * 1.0
            z = (a * a).sum()
    with tp.no_grad():
        a.add_(1)
    with pytest.warns(UserWarning):
        with autograd.detect_anomaly():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                    z.backward()
    text = "\n".join(str(w.message) for w in caught)
    assert "Error detected in MulBackward0" in text and "z = (a * a).sum()" in text


def test_node_recorded_outside_mode():
    x = leaf([-1.0])
    y = x.sqrt().sum()
    with pytest.warns(UserWarning):
        with autograd.detect_anomaly():
            with pytest.raises(RuntimeError, match="No forward pass information"):
                y.backward()


def test_values_unchanged_in_mode():
    x = leaf([0.5, 1.5])
    with pytest.warns(UserWarning):
        with autograd.detect_anomaly():
            (x.exp() * x).sum().backward()
    v = np.array([0.5, 1.5])
    np.testing.assert_allclose(x.grad.detach().numpy(), np.exp(v) * (1 + v))


class NanBackward(autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


def test_custom_function_nan_is_named():
    x = leaf([1.0])
    with pytest.warns(UserWarning):
        with autograd.detect_anomaly():
            y = NanBackward.apply(x)
            with pytest.raises(RuntimeError) as info:
                y.sum().backward()
    msg = str(info.value)
    assert msg.startswith("Function 'NanBackwardBackward' returned nan values in its 0th "
                          "output.")
    assert "y = NanBackward.apply(x)" in msg
