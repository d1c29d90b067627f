"""Higher-level autodiff API over functions (``torch.autograd.functional``).

This slice has ``jvp``; ``vjp``, ``jacobian``, ``hessian``, ``hvp`` and ``vhp``
come later.
"""
import threading

from tensorplay.autograd import _forward as fw
from tensorplay.autograd import grad as _grad
from tensorplay.autograd.grad_mode import STATE, enable_grad, no_grad

__all__ = ["jvp", "NeedsReverseGraph"]


class NeedsReverseGraph(BaseException):
    """Raised by ``autograd.grad`` / ``backward`` for a tensor that does not require
    grad while ``jvp(mode="forward")`` runs its function without a reverse graph;
    jvp catches it and runs the function again with inputs that require grad.

    A ``BaseException``, like ``KeyboardInterrupt``, so that a function's own
    ``except RuntimeError`` / ``except Exception`` cannot swallow it and silently
    change the result."""


class _GraphFree(threading.local):
    active = False          # True while jvp(mode="forward") runs func under no_grad


_GRAPH_FREE = _GraphFree()


def _as_tuple(x, arg, op):
    from tensorplay._tensor import Tensor
    is_tuple = isinstance(x, (tuple, list))
    seq = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(seq):
        if not isinstance(t, Tensor):
            where = f"{arg}[{i}]" if is_tuple else arg
            raise TypeError(f"{op}(): {where} must be a Tensor, got {type(t).__name__}"
                            + (" (the function must return a Tensor or a tuple of Tensors)"
                               if arg == "outputs" else ""))
    return is_tuple, seq


def _autograd_grad(outputs, inputs, grad_outputs, create_graph):
    """``grad`` that skips outputs not requiring grad and returns None for inputs
    the outputs do not reach (instead of raising)."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs)
             if o is not None and o._requires_grad]
    wanted = [i for i, t in enumerate(inputs) if t is not None and t._requires_grad]
    res = [None] * len(inputs)
    if not pairs or not wanted:
        return tuple(res)
    got = _grad([o for o, _ in pairs], [inputs[i] for i in wanted], [g for _, g in pairs],
                create_graph=create_graph, retain_graph=True, allow_unused=True)
    for i, g in zip(wanted, got):
        res[i] = g
    return tuple(res)


def jvp(func, inputs, v=None, create_graph=False, strict=False, mode="reversed"):
    """The Jacobian of ``func`` at ``inputs`` times the vector ``v``.

    Args:
        func (callable): takes Tensors, returns a Tensor or a tuple of Tensors.
        inputs (Tensor or tuple of Tensor): float32/float64 point of evaluation.
        v (Tensor or tuple of Tensor, optional): the tangent, shaped like
            ``inputs``.  May be None only when the input is a single one-element
            Tensor (then v = 1).
        create_graph (bool): make the outputs and the JVP differentiable
            (with respect to ``inputs`` and ``v``).
        strict (bool): raise when an output does not depend on the inputs; when
            False, the JVP for such an output is zeros.
        mode (str): ``"reversed"`` -- the double-backward trick of
            ``torch.autograd.functional.jvp`` (two reverse passes: the VJP
            ``u -> J^T u`` is linear in ``u``, and its VJP at ``v`` is ``J v``);
            ``"forward"`` -- forward mode: the JVP rules of every primitive
            propagate ``v`` alongside the forward pass, one pass per op.  Both give
            the same numbers.

    Forward mode records no reverse graph unless the function needs one.
    Without ``create_graph`` it runs ``func`` under ``no_grad`` with inputs that do
    not require grad: only the forward kernels and the tangent kernels run.  A
    function that calls ``autograd.grad`` or ``backward`` itself (forward-over-
    reverse, e.g. a Hessian-vector product) stops at that call with
    ``NeedsReverseGraph`` and is run a second time, with grad mode on and inputs
    that require grad, as ``mode="reversed"`` and ``torch.autograd.functional``
    give them.  Such a function therefore runs twice up to its first grad call
    (side effects there happen twice).  With ``create_graph`` the graph is
    recorded from the start.

    Returns:
        ``(func_output, jvp)``: each a Tensor when ``func`` returns a Tensor, a tuple
        when it returns a tuple (PyTorch's convention); ``jvp`` is shaped like the
        output.

    Raises:
        ValueError: an unknown ``mode``.
        TypeError: a ``func`` that is not callable; non-Tensor inputs, ``v`` or
            outputs.
        RuntimeError: a ``v`` of the wrong length or shape, ``v=None`` with more than
            one input element, non-floating inputs or outputs, or (``strict``) an
            output independent of the inputs.

    Example:
        >>> def exp_reducer(x):
        ...     return x.exp().sum(dim=1)
        >>> inputs = tensorplay.rand(4, 4)
        >>> v = tensorplay.ones(4, 4)
        >>> out, jv = jvp(exp_reducer, inputs, v, mode="forward")   # jv equals out
    """
    if mode not in ("reversed", "forward"):
        raise ValueError(f"jvp(): mode must be 'reversed' or 'forward', got {mode!r}")
    if not callable(func):
        raise TypeError(f"jvp(): func must be callable, got {type(func).__name__}")
    _, inputs = _as_tuple(inputs, "inputs", "jvp")   # result structure follows the outputs
    for i, t in enumerate(inputs):
        if t._data.dtype.kind != "f":
            raise RuntimeError(f"jvp(): inputs[{i}] must be a floating point tensor, got "
                               f"{t.dtype}")
    if v is not None:
        _, v = _as_tuple(v, "v", "jvp")
        if len(v) != len(inputs):
            raise RuntimeError(f"jvp(): v is a tuple of invalid length: should be "
                               f"{len(inputs)} but got {len(v)}.")
        for i, (vi, inp) in enumerate(zip(v, inputs)):
            if vi._data.shape != inp._data.shape:
                raise RuntimeError(f"jvp(): v has invalid size: entry {i} should be "
                                   f"{list(inp.shape)} but got {list(vi.shape)}.")
    else:
        if len(inputs) != 1 or inputs[0]._data.size != 1:
            raise RuntimeError("jvp(): the vector v can only be None if the input to the "
                               "user-provided function is a single Tensor with a single "
                               "element.")
        from tensorplay._creation import ones_like
        v = (ones_like(inputs[0]),)
    if mode == "forward":
        is_outputs_tuple, outputs, jvps = _jvp_forward(func, inputs, v, create_graph)
    else:
        is_outputs_tuple, outputs, jvps = _jvp_reversed(func, inputs, v, create_graph)
    from tensorplay._creation import zeros_like
    result = []
    for i, (out, j) in enumerate(zip(outputs, jvps)):
        if out._data.dtype.kind != "f":
            raise RuntimeError(f"jvp(): output {i} of the user-provided function is a "
                               f"{out.dtype} tensor; only floating point outputs have a "
                               f"Jacobian-vector product")
        if j is not None and not j._data.flags.writeable:
            j = j.clone()       # an expanded tangent: give the caller its own storage
        if j is None:
            if strict:
                raise RuntimeError(f"jvp(): output {i} of the user-provided function is "
                                   f"independent of the inputs. This is not allowed in "
                                   f"strict mode.")
            j = zeros_like(out)
        result.append(j if create_graph else j.detach())
    outputs = tuple(o if create_graph else o.detach() for o in outputs)
    if is_outputs_tuple:
        return outputs, tuple(result)
    return outputs[0], result[0]


def _jvp_forward(func, inputs, v, create_graph):
    # Graph-free first (docs/DECISIONS.md, "functional.jvp(mode='forward')"): a
    # node per op and, through rules that read `out`, a reference cycle per call
    # (out -> grad_fn -> saved tangent -> its grad_fn -> out) would buy nothing
    # for a function that never asks for a gradient.
    if not create_graph:
        prev, _GRAPH_FREE.active = _GRAPH_FREE.active, True
        try:
            with no_grad():
                return _forward_pass(func, [i.detach() for i in inputs],
                                     [vi.detach() for vi in v])
        except NeedsReverseGraph:
            pass                      # func calls grad/backward: run it with a graph
        finally:
            _GRAPH_FREE.active = prev
    # The dual inputs require grad, as the inputs of mode="reversed" (and of
    # torch.autograd.functional) do, so that func may call autograd.grad on them.
    # With create_graph the inputs keep their history, so the results are
    # differentiable.
    with enable_grad():
        if create_graph:
            prepared = [i.view_as(i) if i._requires_grad else i.detach().requires_grad_()
                        for i in inputs]
        else:
            prepared = [i.detach().requires_grad_() for i in inputs]
            v = [vi.detach() for vi in v]
        return _forward_pass(func, prepared, v)


def _forward_pass(func, inputs, v):
    with fw.dual_level():
        duals = tuple(fw.make_dual(inp, vi) for inp, vi in zip(inputs, v))
        raw = func(*duals)
        is_outputs_tuple, outputs = _as_tuple(raw, "outputs", "jvp")
        unpacked = [fw.unpack_dual(o) for o in outputs]
    outputs = tuple(u.primal for u in unpacked)
    jvps = [u.tangent for u in unpacked]
    return is_outputs_tuple, outputs, jvps


def _leaf_keeping_tangent(t):
    """A leaf that requires grad, with ``t``'s values and its tangent at the active
    dual level: forward mode over a ``create_graph`` jvp (``t`` a dual input that
    does not require grad) must see through it, and ``detach()`` drops tangents."""
    if t._tangent is not None and t._tangent_level == STATE.fw_level:
        return t.view_as(t).requires_grad_()
    return t.detach().requires_grad_()


def _jvp_reversed(func, inputs, v, create_graph):
    from tensorplay._creation import zeros_like
    with enable_grad():
        if create_graph:
            inputs = tuple(i.view_as(i) if i._requires_grad else _leaf_keeping_tangent(i)
                           for i in inputs)
        else:
            inputs = tuple(i.detach().requires_grad_() for i in inputs)
            v = tuple(vi.detach() for vi in v)
        raw = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(raw, "outputs", "jvp")
        # u: a dummy cotangent per output; J^T u is linear in u.
        us = tuple(zeros_like(o).requires_grad_() if o._data.dtype.kind == "f" else None
                   for o in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, us, create_graph=True)
        # d/du <J^T u, v> = J v
        jvps = _autograd_grad(grad_inputs, us, v, create_graph=create_graph)
    return is_outputs_tuple, outputs, list(jvps)
