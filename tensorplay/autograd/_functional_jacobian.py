"""``functional.jacobian`` and ``functional.hessian`` (``torch.autograd.functional``).

Layout of a Jacobian block: ``output.shape + input.shape`` -- entry ``[i..., j...]``
is ``d output[i...] / d input[j...]`` (PyTorch's convention).  Several inputs
and/or outputs give a tuple of blocks, or a tuple (one per output) of tuples (one
per input).

How the columns are computed:

* ``strategy="reverse-mode"``, ``vectorize=False``: one reverse pass per output
  element, with a one-hot cotangent (PyTorch's loop).
* ``strategy="reverse-mode"``, ``vectorize=True``: one call of
  ``autograd.grad(..., is_grads_batched=True)`` with the whole identity as a batch
  of cotangents.  That call is a batched pass where the batching machinery
  (``tensorplay.func.vmap``) can run the VJP rules with a leading batch
  dimension, and a loop of reverse passes otherwise (see ``autograd.grad``).
* ``strategy="forward-mode"`` (``vectorize=True`` only, as in PyTorch): the JVP
  rules, one tangent per input element.  Through ``tensorplay.func.vmap`` over the
  basis of tangents when that module is present and can batch the function, and a
  Python loop of forward-mode passes otherwise (the function then runs once per
  column; a vmap attempt that vmap cannot batch is retried by the loop, so a function may see
  one extra call).
"""
import numpy as np

from tensorplay.autograd import functional as _f
from tensorplay.autograd.grad_mode import enable_grad

__all__ = ["jacobian", "hessian"]

_STRATEGIES = ("forward-mode", "reverse-mode")


def _standard_basis(tensors, numels):
    """Blocks of the identity of size ``sum(numels)``: block ``k`` is ``(total,
    numels[k])``, with ones at ``[offset_k + j, j]``; dtype of ``tensors[k]``."""
    from tensorplay._creation import from_numpy
    total = sum(numels)
    blocks, off = [], 0
    for t, n in zip(tensors, numels):
        blocks.append(from_numpy(np.eye(total, n, k=-off, dtype=t._data.dtype)))
        off += n
    return blocks


def _check_strategy(strategy, fn_name):
    # AssertionError: PyTorch's type for this error
    if strategy not in _STRATEGIES:
        raise AssertionError(f"{fn_name}(): Expected strategy to be either \"forward-mode\" "
                             f"or \"reverse-mode\", got {strategy!r}. Hint: If your function "
                             f"has more outputs than inputs, \"forward-mode\" tends to be "
                             f"more performant. Otherwise, prefer to use \"reverse-mode\".")


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``.

    Args:
        func (callable): takes Tensors, returns a Tensor or a tuple of Tensors.
        inputs (Tensor or tuple of Tensor): float32/float64 point of evaluation.
        create_graph (bool): make the Jacobian differentiable (reverse mode only,
            as in PyTorch).
        strict (bool): raise when an output does not depend on an input; when
            False that block is zeros.  Not with ``vectorize`` (PyTorch's rule).
        vectorize (bool): compute all columns in one batched call rather than a
            loop of passes (see the module docstring for what runs).
        strategy (str): ``"reverse-mode"`` (one VJP per output element: best for
            few outputs) or ``"forward-mode"`` (one JVP per input element: best for
            few inputs; needs ``vectorize=True``, as PyTorch).

    Returns:
        Tensor of shape ``output.shape + input.shape`` for one input and one
        output; a tuple over inputs (one output) or over outputs (one input); a
        tuple over outputs of tuples over inputs when both are tuples.  A block's
        dtype is its input's in reverse mode (gradients take their input's
        dtype) and its output's in forward mode (tangents take their output's),
        as in PyTorch; they differ only when inputs and outputs do.

    Raises:
        AssertionError: an unknown ``strategy`` (PyTorch's exception type).
        RuntimeError: ``strict`` together with ``vectorize`` or with
            forward mode; strict violations; non-floating inputs or outputs.
        NotImplementedError: forward mode with ``create_graph=True`` or
            ``vectorize=False`` (PyTorch's limits).
        TypeError: non-Tensor inputs or outputs.

    Example:
        >>> def exp_adder(x, y):
        ...     return 2 * x.exp() + 3 * y
        >>> inputs = (tensorplay.rand(2), tensorplay.rand(2))
        >>> jx, jy = jacobian(exp_adder, inputs)   # diag(2 exp(x)), diag(3): (2, 2) each
    """
    _check_strategy(strategy, "jacobian")
    _f._check_callable(func, "jacobian")
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "jacobian(): `create_graph=True` and `strategy=\"forward-mode\"` are not "
                "supported together (yet). Please either set `create_graph=False` or "
                "`strategy=\"reverse-mode\"`.")
        return _jacfwd(func, inputs, strict, vectorize)
    is_inputs_tuple, inputs = _f._as_tuple(inputs, "inputs", "jacobian")
    _f._check_float(inputs, "inputs", "jacobian")
    with enable_grad():
        inputs = _f._grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _f._as_tuple(outputs, "outputs of the user-provided "
                                                 "function", "jacobian")
        _f._check_float(outputs, "outputs", "jacobian")
        _f._check_requires_grad(outputs, "outputs", strict, "jacobian")
        if vectorize:
            if strict:
                raise RuntimeError(
                    "jacobian(): `strict=True` and `vectorized=True` are not supported "
                    "together. Please either set `strict=False` or `vectorize=False`.")
            jac = _jacrev_batched(outputs, inputs, create_graph)
        else:
            jac = _jacrev_loop(outputs, inputs, create_graph, strict)
    jac = tuple(tuple(_f._own(b) for b in row) for row in _f._grad_postprocess(jac, create_graph))
    return _f._tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _jacrev_batched(outputs, inputs, create_graph):
    """All rows at once: the identity as a batch of cotangents."""
    from tensorplay._creation import zeros
    numels = [o._data.size for o in outputs]
    total = sum(numels)
    basis = [b.reshape((total,) + tuple(o.shape))
             for b, o in zip(_standard_basis(outputs, numels), outputs)]
    vj = _f._autograd_grad(outputs, inputs, basis, create_graph=create_graph,
                           retain_graph=create_graph, is_grads_batched=True)
    jac = []
    for o, off, n in zip(outputs, np.cumsum([0] + numels[:-1]), numels):
        row = []
        for inp, g in zip(inputs, vj):
            shape = tuple(o.shape) + tuple(inp.shape)
            row.append(zeros(shape, dtype=inp.dtype) if g is None
                       else g[int(off):int(off) + n].reshape(shape))
        jac.append(tuple(row))
    return tuple(jac)


def _jacrev_loop(outputs, inputs, create_graph, strict):
    """PyTorch's loop: one reverse pass per output element (a one-hot cotangent)."""
    from tensorplay._creation import from_numpy, zeros, zeros_like
    from tensorplay._ops.shape import stack
    jac = []
    for i, out in enumerate(outputs):
        cols = [[] for _ in inputs]
        n = out._data.size
        for j in range(n):
            onehot = np.zeros(n, dtype=out._data.dtype)
            onehot[j] = 1
            vj = _f._autograd_grad((out,), inputs, (from_numpy(onehot.reshape(out._data.shape)),),
                                   retain_graph=True, create_graph=create_graph)
            for k, (g, inp) in enumerate(zip(vj, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"jacobian(): Output {i} of the user-provided "
                                           f"function is independent of input {k}. This "
                                           f"is not allowed in strict mode.")
                    g = zeros_like(inp)
                elif strict and create_graph and not g._requires_grad:
                    raise RuntimeError(f"jacobian(): The jacobian of the user-provided "
                                       f"function is independent of input {k}. This is "
                                       f"not allowed in strict mode when "
                                       f"create_graph=True.")
                cols[k].append(g)
        jac.append(tuple(
            stack(c, 0).reshape(tuple(out.shape) + tuple(inp.shape)) if c
            else zeros(tuple(out.shape) + tuple(inp.shape), dtype=inp.dtype)
            for c, inp in zip(cols, inputs)))
    return tuple(jac)


def _jacfwd(func, inputs, strict, vectorize):
    """Forward mode: one JVP per input element (PyTorch's ``_jacfwd``)."""
    if strict:
        raise RuntimeError(
            "jacobian(): `strict=True` and `strategy=\"forward-mode\"` are not supported "
            "together (yet). Please either set `strict=False` or "
            "`strategy=\"reverse-mode\"`.")
    is_inputs_tuple, inputs = _f._as_tuple(inputs, "inputs", "jacobian")
    _f._check_float(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError(
            "jacobian(): Computing Jacobian using forward-AD or forward-over-reverse "
            "Hessian is only implemented for `vectorize=True`.")
    numels = [t._data.size for t in inputs]
    basis = _standard_basis(inputs, numels)
    is_outputs_tuple, outputs, columns = _forward_columns(func, inputs, basis)
    jac = []
    for o, col in zip(outputs, columns):            # col: (N, *o.shape)
        col = col.detach()
        row, off = [], 0
        for inp, n in zip(inputs, numels):
            block = col[off:off + n]                 # (n, *o.shape)
            off += n
            block = block.permute(*range(1, block.ndim), 0)
            row.append(_f._own(block.reshape(tuple(o.shape) + tuple(inp.shape))))
        jac.append(tuple(row))
    return _f._tuple_postprocess(tuple(jac), (is_outputs_tuple, is_inputs_tuple))


def _forward_columns(func, inputs, basis):
    """``(is_outputs_tuple, outputs, columns)``: ``columns[k]`` stacks, along a new
    dim 0, the JVP of output ``k`` for every row of ``basis`` (one tangent per
    input element)."""
    from tensorplay._creation import zeros_like
    from tensorplay._ops.shape import stack
    info = {}

    def column(*tangents):
        v = tuple(t.reshape(inp.shape) for t, inp in zip(tangents, inputs))
        is_tuple, outs, tans = _f._jvp_forward(func, inputs, v, False)
        _f._check_float(outs, "outputs", "jacobian")
        info["out"] = (is_tuple, tuple(o.detach() for o in outs))
        return tuple(zeros_like(o) if t is None else t for o, t in zip(outs, tans))

    n = basis[0]._data.shape[0] if basis else 0
    vmap = _vmap()
    if vmap is not None and n > 0:
        try:
            cols = vmap(column)(*basis)
            return info["out"][0], info["out"][1], tuple(cols)
        except RuntimeError as exc:
            # what vmap cannot batch (values read per example, in-place writes, a
            # sampler) is retried by the loop; the function's own errors propagate
            if "vmap" not in str(exc):
                raise
            info.clear()
    per = [column(*(b[i] for b in basis)) for i in range(n)]
    if not per:                  # no input elements: run once for the outputs' shapes
        is_tuple, outs, _ = _f._jvp_forward(func, inputs, tuple(zeros_like(t) for t in inputs),
                                            False)
        cols = tuple(zeros_like(o).unsqueeze(0)[:0] for o in outs)
        return is_tuple, tuple(o.detach() for o in outs), cols
    cols = tuple(stack([p[k] for p in per], 0) for k in range(len(per[0])))
    return info["out"][0], info["out"][1], cols


def _vmap():
    """``tensorplay.func.vmap`` when that module exists, else None."""
    try:
        from tensorplay.func._vmap import vmap
    except ImportError:
        return None
    return vmap


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function at ``inputs``: the Jacobian of its gradient.

    Args:
        func (callable): takes Tensors, returns a single one-element Tensor.
        inputs (Tensor or tuple of Tensor): float32/float64 point of evaluation.
        create_graph (bool): make the Hessian differentiable (reverse mode only).
        strict (bool): raise (PyTorch's messages) when the output does not depend
            on an input or the Hessian is independent of the inputs; when False,
            zeros.
        vectorize (bool): the outer Jacobian in one batched call (as ``jacobian``).
        outer_jacobian_strategy (str): how the Jacobian of the gradient is taken:
            ``"reverse-mode"`` (reverse-over-reverse) or ``"forward-mode"``
            (forward-over-reverse; needs ``vectorize=True``, as PyTorch).  The
            gradient itself is always reverse mode.

    Returns:
        Tensor of shape ``input.shape + input.shape`` for one input; for a tuple of
        inputs a tuple of tuples, ``H[i][j]`` of shape ``inputs[i].shape +
        inputs[j].shape`` (the block ``d2 f / d inputs[i] d inputs[j]``).

    Raises:
        RuntimeError: ``func`` returns a tuple or more than one element; strict
            violations (and ``strict`` with ``vectorize``, as ``jacobian``).
        AssertionError: an unknown ``outer_jacobian_strategy`` (PyTorch's type).
        NotImplementedError: forward mode with ``create_graph`` or without
            ``vectorize`` (PyTorch's limits).

    Example:
        >>> def pow_adder_reducer(x, y):
        ...     return (2 * x.pow(2) + 3 * y.pow(2)).sum()
        >>> inputs = (tensorplay.rand(2), tensorplay.rand(2))
        >>> (hxx, hxy), (hyx, hyy) = hessian(pow_adder_reducer, inputs)  # 4 I, 0, 0, 6 I
    """
    _check_strategy(outer_jacobian_strategy, "hessian")
    _f._check_callable(func, "hessian")
    is_inputs_tuple, inputs = _f._as_tuple(inputs, "inputs", "hessian")

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _f._as_tuple(out, "outputs of the user-provided function",
                                           "hessian")
        _f._check_requires_grad(t_out, "outputs", strict, "hessian")
        if is_out_tuple:
            raise RuntimeError("hessian(): The function given to hessian should return a "
                               "single Tensor")
        if out._data.size != 1:
            raise RuntimeError(f"hessian(): The Tensor returned by the function given to "
                               f"hessian should contain a single element (got shape "
                               f"{list(out.shape)})")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            # so that the inner jacobian keeps the dual inputs (a view, not a detach)
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _f._check_requires_grad(jac, "jacobian", strict, "hessian")
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _f._tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))
