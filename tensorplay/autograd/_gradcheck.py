"""``gradcheck`` and ``gradgradcheck``: the analytical derivatives -- the VJP rules
(reverse mode) and, with ``check_forward_ad``, the JVP rules (forward mode) --
against central finite differences, with ``torch.autograd.gradcheck``'s
signatures, defaults and checks.

Slow mode (the default) builds whole Jacobians: the numerical one column by column
(each differentiable input entry perturbed by +-eps in place, then restored), the
analytical one row by row (``autograd.grad`` of each output entry) or column by
column (a unit tangent per input entry).  Fast mode (``fast_mode=True``,
PyTorch's "fast gradcheck", pytorch/pytorch#53876 and the "Fast backward mode
gradcheck" section of PyTorch's gradcheck notes) draws one random unit vector
``u`` per input and ``v`` per output and compares the scalars ``v^T J_num u``
(one central difference along ``u``) and ``v^T J_an u`` (one VJP with ``v``): a
wrong Jacobian almost surely moves the projection, as in Freivalds' check of a
matrix product, at the cost of O(1) function evaluations instead of O(numel).
Forward mode compares ``J_num u`` and ``J_an u`` (one JVP).  The tolerance on a
projection is PyTorch's: ``atol * sum(u) * sum(v)`` and ``rtol``.

Jacobians are float64 numpy arrays laid out as PyTorch prints them: one row per
element of the input, one column per element of the output.  Inputs and outputs
are named by their position in ``inputs`` and in the function's result.
"""
import numpy as np

from tensorplay.autograd._gradcheck_parts import (
    GradcheckError, _as_tuple, _tensor_cls, _walk, _replace, _label, _Problem,
    _numpy, _check_inputs, _numerical_jacobian, _numerical_ju, _vjp, _vjp_rows,
    _check_grad, _NONDET_MSG, _reentrant, _jvp_columns, _fmt, _worst_line,
    _mismatch_msg, _FAST_NOTE, _FAST_FAIL_SLOW_OK, _allclose)

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]



# ------------------------------------------------------------------ the checks
def _slow_backward(prob, outs, diff_out, eps, rtol, atol, nondet_tol, check_grad_dtypes):
    numerical = [_numerical_jacobian(prob, c, outs, eps) for c in range(len(prob.diff))]
    if not diff_out:
        return _no_diff_outputs(numerical)
    for k in diff_out:
        j1 = _vjp_rows(prob, outs[k], check_grad_dtypes)
        j2 = _vjp_rows(prob, outs[k], False)
        if not _reentrant(j1, j2, nondet_tol):
            raise GradcheckError(_NONDET_MSG.format(tol=nondet_tol))
        for c in range(len(prob.diff)):
            a, n = j1[c], numerical[c][k]
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(_mismatch_msg(prob, k, c, outs, a, n, rtol, atol, False))


def _no_diff_outputs(numerical):
    """With no output that requires grad, the numerical Jacobians must be zero."""
    for per_out in numerical:
        for j in per_out.values():
            if np.any(j != 0):
                raise GradcheckError("Numerical gradient for function expected to be zero")


def _slow_forward(prob, outs, diff_out, eps, rtol, atol, check_grad_dtypes):
    numerical = [_numerical_jacobian(prob, c, outs, eps) for c in range(len(prob.diff))]
    if not diff_out:
        return _no_diff_outputs(numerical)

    def unit_columns(c, flat):
        for e in range(flat.size):
            flat[:] = 0
            flat[e] = 1
            yield e
    cols = _jvp_columns(prob, diff_out, unit_columns, check_grad_dtypes)
    for k in diff_out:
        for c, (_, t) in enumerate(prob.diff):
            a = np.zeros((t._data.size, outs[k]._data.size))
            for e in range(t._data.size):
                a[e, :] = cols[(c, e)][k]
            n = numerical[c][k]
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(_mismatch_msg(prob, k, c, outs, a, n, rtol, atol, True))


def _random_units(arrays, rng):
    """PyTorch's ``_vec_from_tensor``: a uniform [0, 1) vector per array, of unit norm."""
    us = []
    for a in arrays:
        u = rng.random(a.size)
        norm = np.linalg.norm(u)
        us.append(u / norm if norm else u)
    return us


def _fast_rng():
    # a generator of its own (fixed seed): the user's random state is not touched,
    # and a run is reproducible (PyTorch uses a fresh torch.Generator() the same way)
    return np.random.default_rng(67280421310721)


def _slow_pair(prob, outs, k, c, eps, rtol, atol, forward):
    """Slow-mode Jacobians of one (output, input) pair, for a fast-mode message."""
    n = _numerical_jacobian(prob, c, outs, eps)[k]
    if forward:
        def unit_columns(cc, flat):
            if cc != c:
                return
            for e in range(flat.size):
                flat[:] = 0
                flat[e] = 1
                yield e
        cols = _jvp_columns(prob, [k], unit_columns, False)
        a = np.zeros(n.shape)
        for e in range(n.shape[0]):
            a[e, :] = cols[(c, e)][k]
    else:
        a = _vjp_rows(prob, outs[k], False)[c]
    diff = float(np.max(np.abs(n - a))) if n.size else 0.0
    msg = (_FAST_NOTE + f"Numerical:\n {_fmt(n)}\nAnalytical:\n{_fmt(a)}\n\n"
           f"The max per-element difference (slow mode) is: {diff}.\n")
    if n.size:
        msg += _worst_line(prob, k, c, outs, a, n, rtol, atol)
    if _allclose(a, n, rtol, atol):
        msg += _FAST_FAIL_SLOW_OK
    return msg


def _fast_backward(prob, outs, diff_out, eps, rtol, atol, nondet_tol, check_grad_dtypes):
    from tensorplay._tensor import Tensor
    rng = _fast_rng()
    us = _random_units([t._data for _, t in prob.diff], rng)
    vs = dict(zip(diff_out, _random_units([outs[k]._data for k in diff_out], rng)))
    jus = [_numerical_ju(prob, c, u, eps) for c, u in enumerate(us)]
    if not diff_out:
        for ju in jus:
            for v in ju.values():
                if v.size and np.max(np.abs(v)) > nondet_tol:
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    for k in diff_out:
        o = outs[k]
        v = Tensor._wrap(vs[k].reshape(o._data.shape).astype(o._data.dtype))
        g1 = _vjp(prob, o, v)
        g2 = _vjp(prob, o, v)
        for c, g in enumerate(g1):
            _check_grad(prob, c, g, check_grad_dtypes)
        flat1 = [np.zeros(t._data.size) if g is None else _numpy(g).ravel()
                 for g, (_, t) in zip(g1, prob.diff)]
        flat2 = [np.zeros(t._data.size) if g is None else _numpy(g).ravel()
                 for g, (_, t) in zip(g2, prob.diff)]
        if not _reentrant(flat1, flat2, nondet_tol):
            raise GradcheckError(_NONDET_MSG.format(tol=nondet_tol))
        for c, u in enumerate(us):
            a = float(flat1[c] @ u)
            n = float(vs[k] @ jus[c][k])
            tol = atol * float(u.sum()) * float(vs[k].sum())
            if not _allclose(np.float64(a), np.float64(n), rtol, tol):
                path = prob.diff[c][0]
                raise GradcheckError(
                    f"Jacobian mismatch for output {k} with respect to {_label(path)},\n"
                    f"numerical:{n!r}\nanalytical:{a!r}\n(fast mode: v^T J u for random "
                    f"unit vectors u over {_label(path)} and v over output {k})\n"
                    + _slow_pair(prob, outs, k, c, eps, rtol, atol, False))


def _fast_forward(prob, outs, diff_out, eps, rtol, atol, check_grad_dtypes):
    rng = _fast_rng()
    us = _random_units([t._data for _, t in prob.diff], rng)
    jus = [_numerical_ju(prob, c, u, eps) for c, u in enumerate(us)]
    if not diff_out:
        return _no_diff_outputs(jus)

    def along_u(c, flat):
        flat[:] = us[c]
        yield 0
    cols = _jvp_columns(prob, diff_out, along_u, check_grad_dtypes)
    for k in diff_out:
        for c, u in enumerate(us):
            a, n = cols[(c, 0)][k], jus[c][k]
            tol = atol * float(u.sum())
            if not _allclose(a, n, rtol, tol):
                path = prob.diff[c][0]
                raise GradcheckError(
                    f"Jacobian computed with forward mode mismatch for output {k} with "
                    f"respect to {_label(path)},\nnumerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n"
                    f"(fast mode: J u for a random unit vector u over {_label(path)})\n"
                    + _slow_pair(prob, outs, k, c, eps, rtol, atol, True))


def _undefined_forward(prob, outs, diff_out):
    """PyTorch's ``_test_undefined_forward_mode``: each differentiable input in
    turn gets no tangent at all (a plain tensor; its JVP rules see ``None``) and,
    separately, a zero tangent; both must run and give the same output tangents."""
    from tensorplay._creation import zeros_like
    from tensorplay.autograd import _forward as fw
    from tensorplay._tensor import Tensor
    rng = _fast_rng()
    us = _random_units([t._data for _, t in prob.diff], rng)
    with fw.dual_level():
        tangents = [Tensor._wrap(u.reshape(t._data.shape).astype(t._data.dtype))
                    for u, (_, t) in zip(us, prob.diff)]
        for c, (path, t) in enumerate(prob.diff):
            new = prob.duals(tangents, skip=c)
            new[path] = fw.make_dual(t.detach(), zeros_like(t))
            outs1 = prob.call(_replace(prob.inputs, new))
            new[path] = t.detach()
            try:
                outs2 = prob.call(_replace(prob.inputs, new))
            except Exception as e:
                raise GradcheckError(
                    f"The forward-mode (JVP) rules failed when {_label(path)} has no "
                    f"tangent (an undefined tangent, None in the rule): "
                    f"{type(e).__name__}: {e}") from e
            for k in diff_out:
                r1 = fw.unpack_dual(outs1[k]).tangent
                r2 = fw.unpack_dual(outs2[k]).tangent
                if r1 is None or r2 is None:
                    continue
                if not np.allclose(_numpy(r1), _numpy(r2), rtol=1e-5, atol=1e-8):
                    raise GradcheckError(
                        f"Mismatch in tangent values for output with index: {k} when "
                        f"{_label(path)} has an undefined tangent value. Got: "
                        f"{_fmt(_numpy(r1))} but expected: {_fmt(_numpy(r2))}")


def _mul_by_grad_output(prob, outs, diff_out):
    """PyTorch's ``_test_backward_mul_by_grad_output``: zero cotangents give zero
    gradients of the inputs' shapes and dtypes."""
    from tensorplay import autograd
    from tensorplay._creation import zeros_like
    if not diff_out:
        return
    gs = autograd.grad([outs[k] for k in diff_out], [t for _, t in prob.diff],
                       [zeros_like(outs[k]) for k in diff_out], retain_graph=True,
                       allow_unused=True)
    for g, (path, t) in zip(gs, prob.diff):
        if g is None:
            continue
        if np.any(g._data != 0):
            raise GradcheckError(f"backward not multiplied by grad_output: zero cotangents "
                                 f"gave a nonzero gradient for {_label(path)}")
        if g._data.dtype != t._data.dtype:
            raise GradcheckError(f"grad is incorrect type: {g.dtype} for {_label(path)} of "
                                 f"type {t.dtype}")
        if g._data.shape != t._data.shape:
            raise GradcheckError(f"grad is incorrect size: {list(g.shape)} for "
                                 f"{_label(path)} of size {list(t.shape)}")


def _undefined_backward(prob, diff_out):
    """PyTorch's ``_test_undefined_backward_mode``.  Every output's cotangent zero
    (``_mul_by_grad_output``), then, with several differentiable outputs, one
    output at a time left out of ``autograd.grad`` -- its cotangent is then
    undefined: a multi-output node (a custom Function) receives None for it (or
    zeros, materialised).  The backward must run and give None or zeros."""
    from tensorplay import autograd
    from tensorplay._creation import zeros_like
    if len(diff_out) < 2:
        return
    for skip in diff_out:
        outs = prob.call()
        keep = [outs[k] for k in diff_out if k != skip and outs[k]._requires_grad]
        if not keep:
            continue
        try:
            gs = autograd.grad(keep, [t for _, t in prob.diff],
                               [zeros_like(o) for o in keep], allow_unused=True)
        except Exception as e:
            raise GradcheckError(
                f"Expected backward function to handle undefined output grads: the "
                f"backward failed when output {skip}'s gradient is undefined (output {skip} "
                f"not among autograd.grad's outputs, the others with zero cotangents): "
                f"{type(e).__name__}: {e}") from e
        for g, (path, _) in zip(gs, prob.diff):
            if g is not None and np.any(g._data != 0):
                raise GradcheckError(
                    f"Expected all input grads to be undefined or zero when all output grads "
                    f"are undefined or zero: {_label(path)} got a nonzero gradient with "
                    f"output {skip}'s gradient undefined and the others zero")


_BATCHED_MSG = (
    "gradcheck or gradgradcheck failed while testing batched gradient computation "
    "(autograd.grad(..., is_grads_batched=True) against one autograd.grad per cotangent). "
    "Call gradcheck/gradgradcheck with check_batched_grad=False to skip this check.")


def _batched_grad(prob, outs, k):
    """PyTorch's ``_test_batched_grad``: ``autograd.grad`` with two cotangents
    stacked (``is_grads_batched=True``) against one call per cotangent."""
    from tensorplay import autograd
    from tensorplay._creation import randn_like, zeros_like
    from tensorplay._ops.shape import stack
    o = outs[k]
    inputs = [t for _, t in prob.diff]
    gos = [randn_like(o) for _ in range(2)]

    def vjp(g):
        gs = autograd.grad(o, inputs, g, retain_graph=True, allow_unused=True)
        return [zeros_like(t) if gi is None else gi for gi, t in zip(gs, inputs)]
    expected = [stack(list(shards), 0) for shards in zip(*[vjp(g) for g in gos])]
    try:
        got = autograd.grad(o, inputs, stack(gos, 0), retain_graph=True, allow_unused=True,
                            is_grads_batched=True)
    except RuntimeError as e:
        raise GradcheckError(f"While computing batched gradients, got: {e}\n\n"
                             f"{_BATCHED_MSG}") from e
    for c, (res, exp) in enumerate(zip(got, expected)):
        res = zeros_like(exp) if res is None else res
        if res._data.shape != exp._data.shape or not np.allclose(
                _numpy(res), _numpy(exp), rtol=1e-5, atol=1e-8):
            raise GradcheckError(f"For output {k} and {_label(prob.diff[c][0])}:\n\n"
                                 f"{_BATCHED_MSG}\n\nGot:\n{_fmt(_numpy(res))}\n\n"
                                 f"Expected:\n{_fmt(_numpy(exp))}")


def _vmap():
    try:
        from tensorplay.func import vmap
        return vmap
    except ImportError:
        pass
    try:
        from tensorplay.func._vmap import vmap
        return vmap
    except ImportError:
        return None


def _batched_forward_grad(prob):
    """PyTorch's ``_test_batched_grad_forward_ad``: the JVP under ``vmap`` over two
    stacked tangents against one JVP per tangent."""
    from tensorplay._creation import randn_like, zeros_like
    from tensorplay._ops.shape import stack
    from tensorplay.autograd import _forward as fw
    vmap = _vmap()
    if vmap is None:
        raise NotImplementedError("gradcheck(): check_batched_forward_grad=True needs "
                                  "tensorplay.func.vmap, which this build does not have")
    for c, (path, t) in enumerate(prob.diff):
        def jvp(tangent):
            with fw.dual_level():
                new = {p: x.detach() for p, x in prob.diff}
                new[path] = fw.make_dual(t.detach(), tangent)
                outs = prob.call(_replace(prob.inputs, new))
                ret = []
                for o in outs:
                    primal, tan = fw.unpack_dual(o)
                    ret.append(tan if tan is not None else zeros_like(primal))
                return tuple(ret)
        tangents = [randn_like(t) for _ in range(2)]
        expected = [stack(list(s), 0) for s in zip(*[jvp(x) for x in tangents])]
        try:
            got = vmap(jvp)(stack(tangents, 0))
        except RuntimeError as e:
            raise GradcheckError(f"While computing batched gradients with forward-mode AD "
                                 f"(vmap over the tangent of {_label(path)}), got: {e}. Call "
                                 f"gradcheck with check_batched_forward_grad=False to skip "
                                 f"this check.") from e
        for k, (res, exp) in enumerate(zip(_as_tuple(got), expected)):
            if res._data.shape != exp._data.shape or not np.allclose(
                    _numpy(res), _numpy(exp), rtol=1e-5, atol=1e-8):
                raise GradcheckError(
                    f"For output {k} and {_label(path)}: gradcheck failed while testing "
                    f"batched gradient computation with forward-mode AD (vmap over the "
                    f"tangent).\n\nGot:\n{_fmt(_numpy(res))}\n\nExpected:\n"
                    f"{_fmt(_numpy(exp))}")


# ------------------------------------------------------------------ public API
def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """Check the gradients of ``func`` at ``inputs`` against central finite
    differences (``torch.autograd.gradcheck``).

    For every input tensor that requires grad, and every output that requires
    grad, the numerical Jacobian (each input entry perturbed by ``+-eps``) must
    match the analytical one -- built from the VJP rules (``check_backward_ad``)
    and/or the JVP rules (``check_forward_ad``) -- entrywise:
    ``|analytical - numerical| <= atol + rtol * |numerical|`` (``allclose``; a nan
    fails).  Central differences in float32 are too coarse for the defaults:
    inputs should be float64 (a UserWarning says so otherwise, as PyTorch's).

    Besides the Jacobians (PyTorch's extra checks, in its order): the backward is
    run twice and must agree within ``nondet_tol``; zero cotangents must give zero
    gradients of the inputs' shapes and dtypes; with ``check_undefined_grad`` the
    rules must cope with undefined cotangents and tangents (see below).

    Args:
        func (callable): takes the inputs (``func(*inputs)``), returns a Tensor or a
            tuple/list of Tensors.  Outputs that do not require grad (integer ones,
            detached ones) are not checked; with none that does, the numerical
            Jacobian must be zero.
        inputs (Tensor or tuple): ``func``'s arguments.  Tensors with
            ``requires_grad`` are checked -- also inside (nested) lists and tuples,
            which PyTorch does not support (docs/DECISIONS.md) -- other arguments
            (tensors without requires_grad, numbers, anything) are passed as they
            are.  Checked tensors are perturbed in place (and restored), so they must
            be writable and must not overlap in memory (no ``expand``).
        eps (float): finite-difference step.
        atol, rtol (float): tolerances (fast mode scales ``atol``, as PyTorch).
        raise_exception (bool): raise ``GradcheckError`` on a failure; when False,
            return False instead.
        nondet_tol (float): how far two backward passes with the same input and
            cotangent may differ (0: bitwise equal).
        check_undefined_grad (bool): the backward must accept undefined cotangents:
            with several differentiable outputs each one in turn is left out of
            ``autograd.grad`` (a multi-output node then gets None for it) and the
            gradients must be None or zero.  With ``check_forward_ad`` the JVP rules
            must accept an input without a tangent (None) and give what a zero
            tangent gives.
        check_grad_dtypes (bool): gradients (and tangents) must have the input's
            (output's) dtype.
        check_batched_grad (bool): ``autograd.grad(..., is_grads_batched=True)`` must
            match one ``autograd.grad`` per cotangent.
        check_batched_forward_grad (bool): the JVP under ``tensorplay.func.vmap``
            must match one JVP per tangent (needs ``check_forward_ad``; raises
            NotImplementedError on a build without ``tensorplay.func.vmap``).
        check_forward_ad (bool): check the JVP rules (forward mode; dual inputs made
            from the detached inputs, as PyTorch).
        check_backward_ad (bool): check the VJP rules (reverse mode).
        fast_mode (bool): compare random projections ``v^T J u`` instead of whole
            Jacobians (module docstring; PyTorch's fast gradcheck,
            pytorch/pytorch#53876); a failure recomputes the failing pair in slow
            mode for the message.
        masked (bool, optional): for sparse inputs in PyTorch; tensorplay tensors are
            dense, so it has no effect.

    Returns:
        bool: True when every check passes (False on a failure with
        ``raise_exception=False``).

    Raises:
        GradcheckError (a RuntimeError): a failed check.  A Jacobian mismatch names
            the output and the input (their positions in ``func``'s result and in
            ``inputs``) and prints the numerical and analytical Jacobians -- rows:
            the input's elements, columns: the output's, as PyTorch prints them --
            then the worst entry (its element of the output and of the input, both
            values, the difference and the tolerance).  In fast mode, the two
            projections, then the slow-mode Jacobians of the failing pair.
        ValueError: no input requires grad.
        RuntimeError: a checked input with a stride-0 dimension or read-only memory.
        AssertionError: incompatible flags (PyTorch's): neither check_forward_ad nor
            check_backward_ad; check_batched_grad without check_backward_ad;
            check_batched_forward_grad without check_forward_ad.
        TypeError: ``func`` not callable, or returning something other than Tensors;
            ``inputs`` neither a Tensor nor a tuple/list (PyTorch wraps it as one
            argument and then raises ValueError: no input requires grad).

    Example:
        >>> x = tensorplay.randn(3, dtype=tensorplay.float64, requires_grad=True)
        >>> tensorplay.autograd.gradcheck(lambda x: (x.exp() * x).sum(), (x,),
        ...                               check_forward_ad=True)
        True
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad "
                             "to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to "
                             "be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires "
                             "check_forward_ad to be True")
    if not callable(func):
        raise TypeError(f"gradcheck(): func must be callable, got {type(func).__name__}")
    try:
        return _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                          check_grad_dtypes, check_batched_grad, check_batched_forward_grad,
                          check_forward_ad, check_backward_ad, fast_mode, "gradcheck")
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _check_tupled(inputs, op):
    """``inputs`` as a tuple: a Tensor alone, or a tuple/list.  (PyTorch wraps any
    other object as a one-argument tuple and then finds no tensor in it.)"""
    if not isinstance(inputs, (_tensor_cls(), tuple, list)):
        raise TypeError(f"{op}(): inputs must be a Tensor or a tuple of Tensors (and other "
                        f"arguments), got {type(inputs).__name__}")
    return _as_tuple(inputs)


def _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
               check_grad_dtypes, check_batched_grad, check_batched_forward_grad,
               check_forward_ad, check_backward_ad, fast_mode, op):
    prob = _Problem(func, _check_tupled(inputs, op), op)
    _check_inputs(prob)
    outs = prob.call()
    diff_out = [k for k, o in enumerate(outs) if o._requires_grad]
    if check_backward_ad:
        if fast_mode:
            _fast_backward(prob, outs, diff_out, eps, rtol, atol, nondet_tol,
                           check_grad_dtypes)
        else:
            _slow_backward(prob, outs, diff_out, eps, rtol, atol, nondet_tol,
                           check_grad_dtypes)
    if check_forward_ad:
        if fast_mode:
            _fast_forward(prob, outs, diff_out, eps, rtol, atol, check_grad_dtypes)
        else:
            _slow_forward(prob, outs, diff_out, eps, rtol, atol, check_grad_dtypes)
        if check_undefined_grad:
            _undefined_forward(prob, outs, diff_out)
    if check_batched_forward_grad:
        _batched_forward_grad(prob)
    if not check_backward_ad:
        return True
    if check_batched_grad:
        for k in diff_out:
            _batched_grad(prob, outs, k)
    _mul_by_grad_output(prob, outs, diff_out)
    if check_undefined_grad:
        _undefined_backward(prob, diff_out)
    return True


def _random_grad_output(o, noncontiguous):
    """PyTorch's ``make_tensor(low=-1, high=1, requires_grad=True)`` for an output:
    uniform in [-1, 1) from tensorplay's random generator, the output's dtype
    (float64 for a non-float output); non-contiguous (every other element of a
    buffer twice as long in the last dim) on request."""
    from tensorplay._creation import rand
    from tensorplay._dtype import float64, from_numpy_dtype
    from tensorplay._tensor import Tensor
    d = o._data
    dtype = from_numpy_dtype(d.dtype) if d.dtype.kind == "f" else float64
    shape = tuple(d.shape)
    if noncontiguous and d.size > 1:
        buf = rand(*(shape[:-1] + (2 * shape[-1],)), dtype=dtype)._data * 2 - 1
        arr = buf[..., ::2]
    else:
        arr = np.array(rand(*shape, dtype=dtype)._data * 2 - 1)   # (0-d: an array)
    return Tensor._wrap(arr).requires_grad_()


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False,
                  check_rev_over_rev=True, fast_mode=False, masked=False):
    """Check second derivatives: ``gradcheck`` of the VJP of ``func``
    (``torch.autograd.gradgradcheck``).

    The function checked is ``(inputs, grad_outputs) -> autograd.grad(func(inputs),
    inputs, grad_outputs, create_graph=True)`` (the gradients that are not None),
    differentiated with respect to the inputs that require grad and the
    ``grad_outputs`` that require grad -- by reverse mode over the reverse pass
    (``check_rev_over_rev``, double backward) and/or forward mode over it
    (``check_fwd_over_rev``).  Every VJP rule must therefore be differentiable
    itself (written in tensorplay ops, DESIGN.md fixed point 3).

    Args:
        func, inputs: as for ``gradcheck``.
        grad_outputs (Tensor or tuple, optional): one cotangent per output of
            ``func`` that requires grad.  Default: uniform in [-1, 1), shaped and
            typed like each output (float64 for non-float ones), requiring grad
            (PyTorch's ``make_tensor(low=-1, high=1)``), drawn from tensorplay's
            random generator (``tensorplay.manual_seed`` makes it reproducible).
        gen_non_contig_grad_outputs (bool): make the default grad_outputs
            non-contiguous.
        check_fwd_over_rev (bool): check the derivative of the VJP in forward mode.
        check_rev_over_rev (bool): ... in reverse mode.
        eps, atol, rtol, raise_exception, nondet_tol, check_undefined_grad,
        check_grad_dtypes, check_batched_grad, fast_mode, masked: as for
            ``gradcheck``.

    Returns:
        bool: True when every check passes (False on a failure with
        ``raise_exception=False``).

    Raises:
        GradcheckError: as ``gradcheck``; "input j" counts ``inputs`` and then the
            ``grad_outputs`` (input ``len(inputs) + i`` is grad_outputs[i]).
        AssertionError (PyTorch's): neither check; check_undefined_grad or
            check_batched_grad without check_rev_over_rev.
        ValueError, TypeError: as ``gradcheck``.
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or "
                             "check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev "
                             "to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to "
                             "be True")
    if not callable(func):
        raise TypeError(f"gradgradcheck(): func must be callable, got {type(func).__name__}")
    from tensorplay import autograd
    from tensorplay._tensor import Tensor
    tupled_inputs = _check_tupled(inputs, "gradgradcheck")
    probe = _Problem(func, tupled_inputs, "gradgradcheck")
    if grad_outputs is None:
        outs = probe.call()
        tupled_grad_outputs = tuple(_random_grad_output(o, gen_non_contig_grad_outputs)
                                    for o in outs if o._requires_grad)
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    n_in, n_go = len(tupled_inputs), len(tupled_grad_outputs)
    # gradcheck makes the inputs dual from detached copies for forward mode, so
    # which ones require grad is remembered here and restored in new_func (PyTorch)
    diff_paths = [p for p, t in _walk(tupled_inputs) if t._requires_grad]
    diff_go = {i for i, g in enumerate(tupled_grad_outputs)
               if isinstance(g, Tensor) and g._requires_grad}

    def new_func(*args):
        xs = args[:n_in]
        restore = {}
        for p, t in _walk(xs):
            if p in diff_paths and not t._requires_grad:
                restore[p] = t.requires_grad_()
        xs = _replace(xs, restore) if restore else xs
        outs = [o for o in _as_tuple(func(*xs)) if o._requires_grad]
        gos = tuple(g.requires_grad_() if i in diff_go and not g._requires_grad else g
                    for i, g in enumerate(args[n_in:]))
        diff_xs = [t for p, t in _walk(xs) if p in diff_paths]
        grads = autograd.grad(outs, diff_xs, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    if n_go == 0:
        raise ValueError("gradgradcheck(): func has no output that requires grad, so there "
                         "is no first derivative to check")
    return gradcheck(new_func, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes,
                     check_batched_grad=check_batched_grad, fast_mode=fast_mode,
                     check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, masked=masked)
