"""``gradcheck``: compare the analytical Jacobian (from the VJP rules, and the JVP
rules with ``check_forward_ad``) against central finite differences.

As in ``torch.autograd.gradcheck``: inputs should be float64 (float32 central
differences are too coarse for the default tolerances); each differentiable input
entry is perturbed by ±eps, and the check passes when
``|analytical - numerical| <= atol + rtol * |numerical|`` everywhere.
"""
import numpy as np

__all__ = ["gradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when the analytical and numerical Jacobians differ."""


def _outputs_tuple(out):
    """The function's result as a tuple of Tensors (TypeError otherwise)."""
    from tensorplay.autograd.functional import _as_tuple
    return _as_tuple(out, "outputs", "gradcheck")[1]


def _numerical_jacobians(func, inputs, diff_idx, eps):
    """J[k][j] of shape (out_k.numel(), in_j.numel()) by central differences.

    Each input entry is perturbed in place and restored in a ``finally``, so the
    inputs are unchanged even when ``func`` raises.  Grad mode is left on: ``func``
    may call ``autograd.grad`` itself (``gradgradcheck``).
    """
    base = _outputs_tuple(func(*inputs))
    jac = [[np.zeros((o.numel(), inputs[j].numel())) for j in diff_idx] for o in base]
    for col, j in enumerate(diff_idx):
        x = inputs[j]._data
        if not x.flags.writeable or not x.flags.c_contiguous:
            raise ValueError(f"gradcheck(): input {j} must be a writable, contiguous "
                             f"tensor (clone() it)")
        flat = x.reshape(-1)
        for e in range(flat.size):
            orig = flat[e]
            try:
                flat[e] = orig + eps
                plus = [o._data.astype(np.float64).ravel() for o in
                        _outputs_tuple(func(*inputs))]
                flat[e] = orig - eps
                minus = [o._data.astype(np.float64).ravel() for o in
                         _outputs_tuple(func(*inputs))]
            finally:
                flat[e] = orig
            for k in range(len(base)):
                jac[k][col][:, e] = (plus[k] - minus[k]) / (2 * eps)
    return base, jac


def _analytical_vjp(func, inputs, diff_idx, outputs_like):
    from tensorplay import autograd
    from tensorplay._creation import zeros_like
    jac = [[np.zeros((o.numel(), inputs[j].numel())) for j in diff_idx] for o in outputs_like]
    for k, o in enumerate(outputs_like):
        for r in range(o.numel()):
            outs = _outputs_tuple(func(*inputs))
            if not outs[k]._requires_grad:
                continue
            u = zeros_like(outs[k])
            u._data.reshape(-1)[r] = 1.0
            grads = autograd.grad(outs[k], [inputs[j] for j in diff_idx], u,
                                  allow_unused=True)
            for col, g in enumerate(grads):
                if g is not None:
                    jac[k][col][r, :] = g._data.astype(np.float64).ravel()
    return jac


def _analytical_jvp(func, inputs, diff_idx, outputs_like):
    from tensorplay._creation import zeros_like
    from tensorplay.autograd import _forward as fw
    from tensorplay.autograd.grad_mode import no_grad
    jac = [[np.zeros((o.numel(), inputs[j].numel())) for j in diff_idx] for o in outputs_like]
    for col, j in enumerate(diff_idx):
        for e in range(inputs[j].numel()):
            t = zeros_like(inputs[j])
            t._data.reshape(-1)[e] = 1.0
            with no_grad(), fw.dual_level():
                args = list(inputs)
                args[j] = fw.make_dual(inputs[j].detach(), t)
                outs = _outputs_tuple(func(*args))
                for k, o in enumerate(outs):
                    tan = fw.unpack_dual(o).tangent
                    if tan is not None:
                        jac[k][col][:, e] = tan._data.astype(np.float64).ravel()
    return jac


def _check_args(func, inputs, op):
    """``inputs`` as a tuple; TypeError for a func that is not callable or inputs
    that are neither a Tensor nor a sequence."""
    from tensorplay._tensor import Tensor
    if not callable(func):
        raise TypeError(f"{op}(): func must be callable, got {type(func).__name__}")
    if isinstance(inputs, Tensor):
        return (inputs,)
    if not isinstance(inputs, (tuple, list)):
        raise TypeError(f"{op}(): inputs must be a Tensor or a tuple of Tensors, got "
                        f"{type(inputs).__name__}")
    return tuple(inputs)


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              check_forward_ad=False, check_backward_ad=True):
    """Check gradients of ``func`` at ``inputs`` against central finite differences.

    Args:
        func (callable): takes the inputs, returns a Tensor or a tuple of Tensors.
        inputs (Tensor or tuple): float64 tensors; those with ``requires_grad`` are
            checked, others held fixed.
        eps (float): finite-difference step.
        atol, rtol (float): tolerances, ``|a - n| <= atol + rtol * |n|``.
        raise_exception (bool): raise ``GradcheckError`` on failure (else return False).
        check_forward_ad (bool): also check the JVP rules (forward mode).
        check_backward_ad (bool): check the VJP rules (reverse mode).

    Returns:
        True when every checked Jacobian matches.

    Raises:
        GradcheckError: a mismatch (with ``raise_exception``); the message shows the
            numerical and analytical Jacobians (rows: output entries, columns: input
            entries).
        ValueError: no input requires grad.  TypeError: a func that is not
            callable, inputs that are not a Tensor or a tuple of Tensors.
    """
    from tensorplay._tensor import Tensor
    inputs = _check_args(func, inputs, "gradcheck")
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck(): at least one input must require grad")
    for i in diff_idx:
        if inputs[i]._data.dtype != np.float64:
            import warnings
            warnings.warn(f"gradcheck(): input {i} is {inputs[i].dtype}, not float64; "
                          f"expect false failures", stacklevel=2)
    base, numerical = _numerical_jacobians(func, inputs, diff_idx, eps)
    checks = []
    if check_backward_ad:
        checks.append(("backward (VJP)", _analytical_vjp(func, inputs, diff_idx, base)))
    if check_forward_ad:
        checks.append(("forward (JVP)", _analytical_jvp(func, inputs, diff_idx, base)))
    for mode, analytical in checks:
        for k in range(len(base)):
            for col, j in enumerate(diff_idx):
                a = analytical[k][col]
                n = numerical[k][col]
                if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
                    msg = (f"Jacobian mismatch for output {k} with respect to input {j} "
                           f"({mode}),\nnumerical:{n}\nanalytical:{a}\n")
                    if raise_exception:
                        raise GradcheckError(msg)
                    return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True):
    """``gradcheck`` of the VJP itself: checks second derivatives (``create_graph``).

    ``grad_outputs`` (one per output, default random normal, float64) is treated as
    a further differentiable input.
    """
    from tensorplay import autograd
    from tensorplay._creation import randn_like
    from tensorplay._tensor import Tensor
    inputs = _check_args(func, inputs, "gradgradcheck")
    outs = _outputs_tuple(func(*inputs))
    if grad_outputs is None:
        grad_outputs = tuple(randn_like(o).requires_grad_() for o in outs)
    n_in = len(inputs)

    def vjp_func(*args):
        xs, us = args[:n_in], args[n_in:]
        os_ = _outputs_tuple(func(*xs))
        gs = autograd.grad(os_, [x for x in xs if isinstance(x, Tensor) and x._requires_grad],
                           us, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)
    return gradcheck(vjp_func, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
