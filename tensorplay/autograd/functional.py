"""Higher-level autodiff over functions (``torch.autograd.functional``).

``vjp``, ``jvp``, ``hvp`` and ``vhp`` live here; ``jacobian`` and ``hessian`` in
``_functional_jacobian.py`` (re-exported here).  Signatures, defaults, result
nesting, ``strict`` / ``create_graph`` semantics and error messages follow
``torch.autograd.functional``:

* ``inputs`` is a Tensor or a tuple of Tensors and so is the function's output;
  each result mirrors them: a Tensor for a Tensor, a tuple for a tuple, and for
  ``jacobian`` / ``hessian`` a tuple of tuples when both sides are tuples.  (A
  list is taken as a tuple; PyTorch refuses it.)
* without ``create_graph`` the inputs are detached copies and every result is
  detached: nothing the caller holds gets a graph or a ``.grad``; with it the
  results are differentiable with respect to the inputs (and ``v``).
* ``strict=True`` raises where an input and an output are independent (PyTorch's
  checks and messages); ``strict=False`` gives the mathematically right zeros.
"""
import threading

from tensorplay.autograd import _forward as fw
from tensorplay.autograd import grad as _grad
from tensorplay.autograd.function import MissingJvpError
from tensorplay.autograd.grad_mode import STATE, enable_grad, no_grad, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp", "NeedsReverseGraph"]


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


# ----------------------------------------------------------------------- helpers
# Named and shaped as torch/autograd/functional.py's, so that its semantics can be
# read off side by side.

def _as_tuple(inp, arg_name, fn_name):
    """``(is_tuple, tuple_of_tensors)``; TypeError (PyTorch's message) otherwise."""
    from tensorplay._tensor import Tensor
    is_tuple = isinstance(inp, (tuple, list))
    seq = tuple(inp) if is_tuple else (inp,)
    for i, el in enumerate(seq):
        if not isinstance(el, Tensor):
            if is_tuple:
                raise TypeError(f"{fn_name}(): The {arg_name} given to {fn_name} must be "
                                f"either a Tensor or a tuple of Tensors but the value at "
                                f"index {i} has type {type(el).__name__}.")
            raise TypeError(f"{fn_name}(): The {arg_name} given to {fn_name} must be either "
                            f"a Tensor or a tuple of Tensors but the given {arg_name} has "
                            f"type {type(el).__name__}.")
    return is_tuple, seq


def _tuple_postprocess(res, to_unpack):
    """Undo ``_as_tuple``: ``to_unpack`` is one is_tuple flag, or a pair
    ``(outer, inner)`` for tuples of tuples (jacobian, hessian)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _check_float(tensors, arg_name, fn_name):
    for i, t in enumerate(tensors):
        if t._data.dtype.kind != "f":
            raise RuntimeError(f"{fn_name}(): {arg_name}[{i}] must be a floating point "
                               f"tensor (float32 or float64), got {t.dtype}")


def _leaf_keeping_tangent(t, need_graph=True):
    """A leaf (requiring grad when ``need_graph``) with ``t``'s values and its tangent
    at the active dual level: forward mode over a ``create_graph`` call (``t`` a dual
    input that does not require grad) must see through it, and ``detach()`` drops
    tangents."""
    if t._tangent is not None and t._tangent_level == STATE.fw_level:
        with enable_grad():
            leaf = t.view_as(t)
        return leaf.requires_grad_(need_graph)
    return t.detach().requires_grad_(need_graph)


def _grad_preprocess(inputs, create_graph, need_graph):
    """Fresh tensors for the user function: with ``create_graph`` an input that
    requires grad keeps its history (a view), every other one is a new leaf
    (requiring grad when ``need_graph``)."""
    res = []
    for inp in inputs:
        if create_graph and inp._requires_grad:
            with enable_grad():
                res.append(inp.view_as(inp))
        elif create_graph:
            res.append(_leaf_keeping_tangent(inp, need_graph))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    """Detach every Tensor (nested tuples too) unless ``create_graph``."""
    if create_graph:
        return inputs
    from tensorplay._tensor import Tensor
    if inputs and isinstance(inputs[0], Tensor):
        return tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple, fn_name):
    """``v`` must match ``other`` (the inputs or outputs) in length and shapes."""
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"{fn_name}(): v is a tuple of invalid length: should be "
                               f"{len(other)} but got {len(v)}.")
        raise RuntimeError(f"{fn_name}(): The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v._data.shape != el_other._data.shape:
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{fn_name}(): {prepend}v has invalid size: should be "
                               f"{list(el_other.shape)} but got {list(el_v.shape)}.")


def _prepare_v(v, other, is_other_tuple, create_graph, fn_name, what):
    """``v`` as a checked tuple (detached unless ``create_graph``), or ones for
    ``v=None`` when ``other`` is a single one-element Tensor (else PyTorch's error;
    ``what`` is "input ... function" or "user-provided function returns")."""
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = tuple(vi if create_graph and vi._requires_grad else vi.detach() for vi in v)
        _validate_v(v, other, is_other_tuple, fn_name)
        # another dtype is cast to its partner's, in both modes (mode="reversed"
        # casts grad_outputs anyway; forward mode's make_dual refuses a mismatch)
        return tuple(vi.to(o.dtype) if vi._data.dtype != o._data.dtype
                     and o._data.dtype.kind == "f" else vi for vi, o in zip(v, other))
    if len(other) != 1 or other[0]._data.size != 1:
        raise RuntimeError(f"{fn_name}(): The vector v can only be None if the {what} "
                           f"a single Tensor with a single element.")
    from tensorplay._creation import ones_like
    return (ones_like(other[0]),)


_V_INPUT = "input to the user-provided function is"
_V_OUTPUT = "user-provided function returns"


def _check_requires_grad(inputs, input_type, strict, fn_name):
    """PyTorch's strict-mode checks on outputs, gradients and Jacobians."""
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"{fn_name}(): The output of the user-provided function is "
                               f"independent of input {i}. This is not allowed in strict "
                               f"mode.")
        if not inp._requires_grad:
            if input_type == "hessian":
                raise RuntimeError(
                    f"{fn_name}(): The hessian of the user-provided function with respect "
                    f"to input {i} is independent of the input. This is not allowed in "
                    f"strict mode. You should ensure that your function is thrice "
                    f"differentiable and that the hessian depends on the inputs.")
            if input_type == "jacobian":
                raise RuntimeError(
                    f"{fn_name}(): While computing the hessian, found that the jacobian "
                    f"of the user-provided function with respect to input {i} is "
                    f"independent of the input. This is not allowed in strict mode. You "
                    f"should ensure that your function is twice differentiable and that "
                    f"the jacobian depends on the inputs (this would be violated by a "
                    f"linear function for example).")
            if input_type == "grad_inputs":
                raise RuntimeError(
                    f"{fn_name}(): The gradient with respect to input {i} is independent "
                    f"of the inputs of the user-provided function. This is not allowed in "
                    f"strict mode.")
            raise RuntimeError(
                f"{fn_name}(): Output {i} of the user-provided function does not require "
                f"gradients. The outputs must be computed in a differentiable manner "
                f"from the input when running in strict mode.")


def _fill_in_zeros(grads, refs, strict, create_graph, stage, fn_name):
    """Zeros shaped like ``refs[i]`` for each ``None`` in ``grads``; in strict mode
    PyTorch's errors instead (``stage`` says which pass produced the None)."""
    from tensorplay._creation import zeros_like
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                msg = {
                    "back": f"The output of the user-provided function is independent of "
                            f"input {i}. This is not allowed in strict mode.",
                    "back_trick": f"The gradient with respect to the input is independent "
                                  f"of entry {i} in the grad_outputs when using the double "
                                  f"backward trick to compute forward mode gradients. This "
                                  f"is not allowed in strict mode.",
                    "double_back": f"The jacobian of the user-provided function is "
                                   f"independent of input {i}. This is not allowed in "
                                   f"strict mode.",
                    "double_back_trick": f"The hessian of the user-provided function is "
                                         f"independent of entry {i} in the grad_jacobian. "
                                         f"This is not allowed in strict mode as it "
                                         f"prevents from using the double backward trick "
                                         f"to replace forward mode AD.",
                }[stage]
                raise RuntimeError(f"{fn_name}(): {msg}")
            g = zeros_like(refs[i])
        elif strict and create_graph and not g._requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"{fn_name}(): The {what} of the user-provided function is "
                               f"independent of input {i}. This is not allowed in strict "
                               f"mode when create_graph=True.")
        res.append(g)
    return tuple(res)


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False,
                   retain_graph=None, is_grads_batched=False):
    """``autograd.grad`` that skips outputs (and inputs) not requiring grad and gives
    None for inputs the outputs do not reach, instead of raising."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs)
             if o is not None and o._requires_grad]
    wanted = [i for i, t in enumerate(inputs) if t is not None and t._requires_grad]
    res = [None] * len(inputs)
    if not pairs or not wanted:
        return tuple(res)
    got = _grad([o for o, _ in pairs], [inputs[i] for i in wanted], [g for _, g in pairs],
                create_graph=create_graph,
                retain_graph=True if retain_graph is None else retain_graph,
                allow_unused=True, is_grads_batched=is_grads_batched)
    for i, g in zip(wanted, got):
        res[i] = g
    return tuple(res)


def _own(t):
    """A result with storage of its own (an expanded zero or tangent is read-only)."""
    return t if t._data.flags.writeable else t.clone()


def _edge_key(t):
    """The engine's graph key of Tensor ``t``: ``graph.edge_key`` where the engine
    has one (outputs of multi-output nodes are keyed by a port), else its Node, or
    ``t`` itself for a leaf."""
    from tensorplay.autograd import graph
    key = getattr(graph, "edge_key", None)
    if key is not None:
        return key(t)
    return t if t._grad_fn is None else t._grad_fn


def _graph_keys(roots):
    """The graph keys (nodes, ports, and leaf Tensors that require grad) the
    reverse graphs of ``roots`` reach, as ``{id(key): key}``.  A port (a tuple
    ``(node, output_nr)``) leads to its node; any other key without
    ``next_edges`` is kept, unexplored (callers treat it as opaque)."""
    from tensorplay._tensor import Tensor
    seen = {}
    stack = [_edge_key(r) for r in roots if r is not None and r._requires_grad]
    while stack:
        key = stack.pop()
        if id(key) in seen:
            continue
        seen[id(key)] = key
        if isinstance(key, Tensor):
            continue
        if isinstance(key, tuple):
            stack.append(key[0])
            continue
        stack.extend(e for e in getattr(key, "next_edges", ()) if e is not None)
    return seen


def _grad_with_tangents(out, inputs, create_graph):
    """The gradient of the scalar ``out`` with respect to ``inputs`` (None where
    unused), keeping the tangents the reverse pass computes at the active dual
    level.

    ``autograd.grad`` without ``create_graph`` detaches its results, which drops
    their tangents; with it, every op of the reverse pass records a node (a
    graph that only ``create_graph`` needs).  So without ``create_graph`` this
    calls the engine directly: grad mode off for the VJP rules (no nodes), the
    JVP rules still run on their outputs (forward mode does not depend on grad
    mode) -- forward-over-reverse at the cost of the two passes alone.
    """
    if create_graph:
        return _autograd_grad((out,), inputs, create_graph=True)
    if not out._requires_grad:
        return (None,) * len(inputs)
    from tensorplay._creation import ones_like
    from tensorplay.autograd._accumulate import run_pass
    keys = [_edge_key(t) for t in inputs]
    root = _edge_key(out)
    found = run_pass(False, [root], [ones_like(out)], keys, retain_graph=False,
                     create_graph=False)
    return tuple(found[id(k)][1] if id(k) in found else None for k in keys)


# --------------------------------------------------------------------------- vjp
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """The vector-Jacobian product ``v^T J`` of ``func`` at ``inputs``.

    Args:
        func (callable): takes Tensors, returns a Tensor or a tuple of Tensors.
        inputs (Tensor or tuple of Tensor): float32/float64 point of evaluation.
        v (Tensor or tuple of Tensor, optional): the cotangent, one per output,
            shaped like it.  May be None only when ``func`` returns a single
            one-element Tensor (then v = 1, and the VJP is the gradient).
        create_graph (bool): record the computation, so the outputs and the VJP are
            differentiable with respect to ``inputs`` (and ``v``).
        strict (bool): raise when an output does not depend on the inputs or an
            input does not reach any output; when False the VJP there is zeros.

    Returns:
        ``(func_output, vjp)``: ``func_output`` as ``func`` returned it (a Tensor or
        a tuple), ``vjp`` shaped like ``inputs`` (a Tensor for a Tensor input, a
        tuple for a tuple).

    Raises:
        TypeError: non-Tensor inputs, ``v`` or outputs.
        RuntimeError: ``v=None`` with a non-scalar or several outputs; ``v`` of the
            wrong length or shape; non-floating inputs; ``strict`` violations.

    Example:
        >>> def exp_reducer(x):
        ...     return x.exp().sum(dim=1)
        >>> inputs = tensorplay.rand(4, 4)
        >>> v = tensorplay.ones(4)
        >>> out, vj = vjp(exp_reducer, inputs, v)      # vj == inputs.exp()
    """
    _check_callable(func, "vjp")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
    _check_float(inputs, "inputs", "vjp")
    with enable_grad():
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided "
                                              "function", "vjp")
        _check_float(outputs, "outputs", "vjp")
        _check_requires_grad(outputs, "outputs", strict, "vjp")
        v = _prepare_v(v, outputs, is_outputs_tuple, create_graph, "vjp", _V_OUTPUT)
    with set_grad_enabled(True if create_graph else STATE.grad_enabled):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph,
                                  retain_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back", "vjp")
    outputs = _grad_postprocess(outputs, create_graph)
    res = tuple(_own(r) for r in _grad_postprocess(res, create_graph))
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(res, is_inputs_tuple))


def _check_callable(func, fn_name):
    if not callable(func):
        raise TypeError(f"{fn_name}(): func must be callable, got {type(func).__name__}")


# --------------------------------------------------------------------------- jvp
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
        strict (bool): raise when some output does not depend on the inputs, or
            some input reaches no output (PyTorch's checks, in both modes); when
            False, the JVP for such an output is zeros.  With ``create_graph``,
            also raise for a JVP that does not depend on ``inputs`` or ``v``.
        mode (str): ``"reversed"`` -- the double-backward trick of
            ``torch.autograd.functional.jvp`` (two reverse passes: the VJP
            ``u -> J^T u`` is linear in ``u``, and its VJP at ``v`` is ``J v``);
            ``"forward"`` -- forward mode: the JVP rules of every primitive
            propagate ``v`` alongside the forward pass, one pass per op.  Both give
            the same numbers.

    Forward mode records no reverse graph unless the function needs one.
    Without ``create_graph`` or ``strict`` it runs ``func`` under ``no_grad`` with
    inputs that do not require grad: only the forward kernels and the tangent
    kernels run.  A function that calls ``autograd.grad`` or ``backward`` itself
    (forward-over-reverse, e.g. a Hessian-vector product) stops at that call with
    ``NeedsReverseGraph`` and is run a second time, with grad mode on and inputs
    that require grad, as ``mode="reversed"`` and ``torch.autograd.functional``
    give them.  Such a function therefore runs twice up to its first grad call
    (side effects there happen twice).  With ``create_graph`` or ``strict`` (which
    finds unused inputs on the reverse graph) the graph is recorded from the start.
    Inside an active dual level (forward mode over ``jvp``; the engine has one
    level) ``mode="forward"`` computes as ``mode="reversed"``.

    Returns:
        ``(func_output, jvp)``: each a Tensor when ``func`` returns a Tensor, a tuple
        when it returns a tuple (PyTorch's convention); ``jvp`` is shaped like the
        output.

    Raises:
        ValueError: an unknown ``mode``.
        TypeError: a ``func`` that is not callable; non-Tensor inputs, ``v`` or
            outputs.
        RuntimeError: a ``v`` of the wrong length or shape, ``v=None`` with more than
            one input element, non-floating inputs or outputs, or ``strict``
            violations.

    Example:
        >>> def exp_reducer(x):
        ...     return x.exp().sum(dim=1)
        >>> inputs = tensorplay.rand(4, 4)
        >>> v = tensorplay.ones(4, 4)
        >>> out, jv = jvp(exp_reducer, inputs, v, mode="forward")   # jv equals out
    """
    if mode not in ("reversed", "forward"):
        raise ValueError(f"jvp(): mode must be 'reversed' or 'forward', got {mode!r}")
    _check_callable(func, "jvp")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
    _check_float(inputs, "inputs", "jvp")
    v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "jvp", _V_INPUT)
    if mode == "forward":
        is_outputs_tuple, outputs, jvps = _jvp_forward(func, inputs, v, create_graph, strict)
    else:
        is_outputs_tuple, outputs, jvps = _jvp_reversed(func, inputs, v, create_graph, strict)
    for i, out in enumerate(outputs):
        if out._data.dtype.kind != "f":
            raise RuntimeError(f"jvp(): output {i} of the user-provided function is a "
                               f"{out.dtype} tensor; only floating point outputs have a "
                               f"Jacobian-vector product")
    jvps = _fill_in_zeros(jvps, outputs, strict, create_graph, "back_trick", "jvp")
    outputs = _grad_postprocess(outputs, create_graph)
    # an expanded tangent or zero: give the caller its own storage
    jvps = tuple(_own(j) for j in _grad_postprocess(jvps, create_graph))
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(jvps, is_outputs_tuple))


def _jvp_forward(func, inputs, v, create_graph, strict=False):
    """Forward-mode JVP: ``(is_outputs_tuple, outputs, tangents)`` (None where an
    output has no tangent)."""
    if STATE.fw_level is not None:
        # forward mode over this jvp: the engine has one dual level, so the
        # double-backward trick, with the outer tangents flowing through it
        return _jvp_reversed(func, inputs, v, create_graph, strict)
    # Graph-free first (docs/DECISIONS.md, "functional.jvp(mode='forward')"): a
    # node per op and, through rules that read `out`, a reference cycle per call
    # (out -> grad_fn -> saved tangent -> its grad_fn -> out) would buy nothing
    # for a function that never asks for a gradient.
    if not create_graph and not strict:
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
        res = _forward_pass(func, prepared, v)
    if strict:
        is_outputs_tuple, outputs, tangents = res
        for i, (o, t) in enumerate(zip(outputs, tangents)):
            if t is None:
                raise RuntimeError(f"jvp(): Output {i} of the user-provided function does "
                                   f"not require gradients. The outputs must be computed "
                                   f"in a differentiable manner from the input when "
                                   f"running in strict mode.")
        reached = _graph_keys(outputs)
        for i, p in enumerate(prepared):
            if id(_edge_key(p)) not in reached:
                raise RuntimeError(f"jvp(): The output of the user-provided function is "
                                   f"independent of input {i}. This is not allowed in "
                                   f"strict mode.")
    return res


def _forward_pass(func, inputs, v):
    with fw.dual_level():
        duals = tuple(fw.make_dual(inp, vi) for inp, vi in zip(inputs, v))
        raw = func(*duals)
        is_outputs_tuple, outputs = _as_tuple(raw, "outputs of the user-provided function",
                                              "jvp")
        unpacked = [fw.unpack_dual(o) for o in outputs]
    outputs = tuple(u.primal for u in unpacked)
    jvps = [u.tangent for u in unpacked]
    return is_outputs_tuple, outputs, jvps


def _jvp_reversed(func, inputs, v, create_graph, strict=False):
    from tensorplay._creation import zeros_like
    with enable_grad():
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        raw = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(raw, "outputs of the user-provided function",
                                              "jvp")
        _check_requires_grad(outputs, "outputs", strict, "jvp")
        # u: a dummy cotangent per output; J^T u is linear in u, so its value does
        # not matter (zeros: no inf or nan can enter the double-backward graph).
        us = tuple(zeros_like(o).requires_grad_() if o._data.dtype.kind == "f" else None
                   for o in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, us, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict, "jvp")
        # d/du <J^T u, v> = J v
    with set_grad_enabled(True if create_graph else STATE.grad_enabled):
        jvps = _autograd_grad(grad_inputs, us, v, create_graph=create_graph)
    return is_outputs_tuple, outputs, list(jvps)


# ------------------------------------------------------------------- hvp and vhp
def _scalar_output(func, inputs, strict, fn_name):
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict, fn_name)
    if is_outputs_tuple:
        raise RuntimeError(f"{fn_name}(): The function given to {fn_name} should return a "
                           f"single Tensor")
    if outputs[0]._data.size != 1:
        raise RuntimeError(f"{fn_name}(): The Tensor returned by the function given to "
                           f"{fn_name} should contain a single element (got shape "
                           f"{list(outputs[0].shape)})")
    _check_float(outputs, "outputs", fn_name)
    return is_outputs_tuple, outputs


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """The vector-Hessian product ``v^T H`` of a scalar function, reverse-over-reverse.

    The gradient ``g(x)`` is computed with a recorded graph, then the VJP of ``g``
    at ``v`` gives ``v^T H`` (two reverse passes, the second through the first's
    graph).  For a twice continuously differentiable function ``H`` is symmetric
    and ``vhp`` equals ``hvp``; ``hvp`` is the cheaper of the two here.

    Args:
        func (callable): takes Tensors, returns a single one-element Tensor.
        inputs (Tensor or tuple of Tensor): float32/float64 point of evaluation.
        v (Tensor or tuple of Tensor, optional): shaped like ``inputs``; may be None
            only for a single one-element input.
        create_graph (bool): make the output and the result differentiable.
        strict (bool): raise (PyTorch's messages) when the output does not depend
            on an input, or the gradient is independent of the inputs (a linear
            function); when False the result there is zeros.

    Returns:
        ``(func_output, vhp)``: ``func_output`` the Tensor ``func`` returned,
        ``vhp`` shaped like ``inputs`` (a Tensor or a tuple).

    Raises:
        RuntimeError: ``func`` returns a tuple or more than one element; ``v`` of
            the wrong length or shape or None where not allowed; strict violations.
        TypeError: non-Tensor inputs, ``v`` or outputs.

    Example:
        >>> def pow_reducer(x):
        ...     return x.pow(3).sum()
        >>> out, vh = vhp(pow_reducer, tensorplay.rand(2, 2), tensorplay.ones(2, 2))
    """
    _check_callable(func, "vhp")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
    _check_float(inputs, "inputs", "vhp")
    with enable_grad():
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "vhp", _V_INPUT)
        is_outputs_tuple, outputs = _scalar_output(func, inputs, strict, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict, "vhp")
    with set_grad_enabled(True if create_graph else STATE.grad_enabled):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back", "vhp")
    outputs = _grad_postprocess(outputs, create_graph)
    res = tuple(_own(r) for r in _grad_postprocess(res, create_graph))
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(res, is_inputs_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """The Hessian-vector product ``H v`` of a scalar function, forward-over-reverse.

    Forward-over-reverse: ``func`` runs once on dual inputs carrying ``v`` as
    tangents, then one reverse pass computes the gradient ``g(x)``; every VJP rule
    of that pass is itself made of primitives with JVP rules, so the gradient comes
    out carrying its tangent ``d/de g(x + e v) = H v``.  One forward and one reverse
    pass, each with its tangents -- about the cost of three to four forward passes
    -- and no double backward: ``torch.autograd.functional.hvp`` runs a reverse
    pass with a recorded graph, a second reverse pass through it to get ``u ->
    H u`` and a third to transpose it (the "double-backward trick", which its own
    docs call slower than ``vhp``).  Each product here is also computed directly
    as ``H v`` in the forward direction rather than as a transpose of a transpose,
    so the rounding is that of one directional derivative.

    Inside an active forward-AD level (forward mode over ``hvp``) the engine has
    no second level, so ``hvp`` then computes ``(v^T H)^T`` reverse-over-reverse
    (``vhp``), equal for twice continuously differentiable functions.
    The same fallback is taken when ``func`` calls a custom ``Function`` that
    defines no ``jvp`` (forward mode cannot go through it); ``func`` then runs a
    second time, from the start.

    Args:
        func (callable): takes Tensors, returns a single one-element Tensor.
        inputs (Tensor or tuple of Tensor): float32/float64 point of evaluation.
        v (Tensor or tuple of Tensor, optional): shaped like ``inputs``; may be None
            only for a single one-element input.
        create_graph (bool): make the output and the result differentiable with
            respect to ``inputs`` and ``v``.
        strict (bool): raise (PyTorch's messages) when the output does not depend
            on an input, or the gradient is independent of the inputs (a linear
            function); when False the result there is zeros.

    Returns:
        ``(func_output, hvp)``: ``func_output`` the Tensor ``func`` returned,
        ``hvp`` shaped like ``inputs`` (a Tensor or a tuple).

    Raises:
        RuntimeError: ``func`` returns a tuple or more than one element; ``v`` of
            the wrong length or shape or None where not allowed; strict violations.
        TypeError: non-Tensor inputs, ``v`` or outputs.

    Example:
        >>> def pow_reducer(x):
        ...     return x.pow(3).sum()
        >>> x = tensorplay.rand(2, 2)
        >>> out, hv = hvp(pow_reducer, x, tensorplay.ones(2, 2))   # hv == 6 * x
    """
    _check_callable(func, "hvp")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
    _check_float(inputs, "inputs", "hvp")
    if STATE.fw_level is not None:
        out, res = vhp(func, inputs, v, create_graph=create_graph, strict=strict)
        return out, _tuple_postprocess(res, is_inputs_tuple)
    try:
        return _hvp_forward_over_reverse(func, inputs, is_inputs_tuple, v, create_graph,
                                         strict)
    except MissingJvpError:
        # a custom Function without a jvp: forward mode cannot go through it, but
        # reverse-over-reverse can (PyTorch's hvp needs only backward)
        out, res = vhp(func, inputs, v, create_graph=create_graph, strict=strict)
        return out, _tuple_postprocess(res, is_inputs_tuple)


def _hvp_forward_over_reverse(func, inputs, is_inputs_tuple, v, create_graph, strict):
    with enable_grad():
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "hvp", _V_INPUT)
        with fw.dual_level():
            duals = tuple(fw.make_dual(inp, vi) for inp, vi in zip(inputs, v))
            is_outputs_tuple, outputs = _scalar_output(func, duals, strict, "hvp")
            jac = _grad_with_tangents(outputs[0], inputs, create_graph)
            # strict: PyTorch's checks, with "the gradient requires grad" read as
            # "the gradient carries a tangent" (it depends on the inputs)
            tangents = []
            for i, j in enumerate(jac):
                t = None if j is None else fw.unpack_dual(j).tangent
                if strict and j is None:
                    raise RuntimeError(f"hvp(): The output of the user-provided function "
                                       f"is independent of input {i}. This is not allowed "
                                       f"in strict mode.")
                if strict and t is None:
                    raise RuntimeError(
                        f"hvp(): While computing the hessian, found that the jacobian of "
                        f"the user-provided function with respect to input {i} is "
                        f"independent of the input. This is not allowed in strict mode.")
                tangents.append(t)
            outputs = tuple(fw.unpack_dual(o).primal for o in outputs)
    res = _fill_in_zeros(tangents, inputs, strict, create_graph, "double_back_trick", "hvp")
    outputs = _grad_postprocess(outputs, create_graph)
    res = tuple(_own(r) for r in _grad_postprocess(res, create_graph))
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(res, is_inputs_tuple))


from tensorplay.autograd._functional_jacobian import hessian, jacobian  # noqa: E402
