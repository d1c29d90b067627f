"""Custom differentiable operations: ``tensorplay.autograd.Function``.

Semantics of ``torch.autograd.Function`` ("Extending torch.autograd"): a subclass
defines ``forward`` and ``backward`` (alias ``vjp``) and, for forward mode,
``jvp``; it is used through ``MyFn.apply(*args)`` only.

The context ``ctx`` that ``forward``/``setup_context``, ``backward`` and ``jvp``
receive *is* the graph node, as in PyTorch: an instance of ``MyFnBackward``, a
class made for each Function subclass, and what ``y.grad_fn`` returns.  It is a
``graph.MultiNode``, so a Function with k outputs gets one ``backward`` call per
pass with k cotangents, after every consumer of every output has run.

``apply`` runs ``forward`` with grad mode off and tangent propagation off (the
Function's own rules replace what its ops would record), then:

* gives each differentiable output (a floating Tensor not marked
  non-differentiable) the node as ``grad_fn`` -- an input returned unchanged
  becomes a view of it with the node as ``grad_fn``; an input marked dirty keeps
  its identity and its history is rebased on the node (``_inplace._rebase``, as
  for a built-in in-place op, views included);
* packs the saved tensors with their versions (outputs without a reference to
  themselves: no node <-> output cycle);
* with a dual level active and a tangent on an input, calls ``jvp`` with one
  tangent per argument (zeros for a Tensor without one, None for a non-Tensor)
  and sets the outputs' tangents.
"""
import functools
import inspect
from weakref import ref as _weakref

from tensorplay.autograd import graph as _graph
from tensorplay.autograd.grad_mode import INFERENCE, STATE, no_grad
from tensorplay.autograd.graph import _INFERENCE_SAVED_MSG, MultiNode, edge_key

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable"]

_FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed): the saved tensors of {name} were "
    "freed by the first backward. Specify retain_graph=True on the first "
    "backward()/autograd.grad() call if you need to backward through the graph a "
    "second time or to access saved tensors after calling backward.")


def _tensor_type():
    global _Tensor
    from tensorplay._tensor import Tensor as _Tensor
    return _Tensor


_Tensor = None


class FunctionCtx:
    """The ``ctx`` methods of a custom Function (PyTorch's ``FunctionCtx``).

    Call them from ``forward`` (or ``setup_context``); the Function's
    ``backward`` and ``jvp`` read what they stored.  Any other attribute set on
    ``ctx`` (``ctx.k = 2``) is kept for ``backward`` too.
    """

    def save_for_backward(self, *tensors):
        """Keep ``tensors`` (Tensors or None) for ``backward`` as ``ctx.saved_tensors``.

        Call at most once.  They are version-checked: modifying one in place before
        ``backward`` makes it raise.  Inputs, outputs and intermediates may be saved.

        Raises:
            TypeError: an argument that is neither a Tensor nor None.
        """
        Tensor = _Tensor or _tensor_type()
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument "
                                f"{i} is of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        """Keep ``tensors`` (Tensors or None) for ``jvp`` as ``ctx.saved_tensors``.

        Raises:
            TypeError: an argument that is neither a Tensor nor None.
        """
        Tensor = _Tensor or _tensor_type()
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_forward expects all arguments to be tensors or "
                                f"None, but argument {i} is of type {type(t).__name__}")
        self._saved_fw = tensors

    def mark_dirty(self, *args):
        """Declare the input Tensors ``args`` modified in place by ``forward``.

        Each must also be returned as an output; its history is then rebased on
        this Function (PyTorch's semantics).  A leaf that requires grad (or a view
        of one) cannot be modified in place and makes ``apply`` raise.
        """
        self._dirty = args

    def mark_non_differentiable(self, *args):
        """Declare output Tensors ``args`` non-differentiable: they do not require
        grad, and their cotangent in ``backward`` is zeros (None with
        ``set_materialize_grads(False)``)."""
        self._non_diff = args

    def set_materialize_grads(self, value):
        """Whether ``backward`` gets zeros (True, the default) or None for the
        cotangents of outputs that received no gradient."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        """The tensors given to ``save_for_backward`` (in ``jvp``: to
        ``save_for_forward``), as a tuple.

        Raises:
            RuntimeError: after a backward freed them (no ``retain_graph``), or when
                one was modified in place since it was saved.
        """
        if self._in_jvp:
            return tuple(self._saved_fw or ())
        return self._unpack_saved()


class BackwardCFunction(MultiNode, FunctionCtx):
    """The graph node (and ``ctx``) of one call of a custom Function.

    ``MyFn.apply`` makes an instance of ``MyFnBackward``, a subclass made for
    ``MyFn``; ``name()`` is that class's name, PyTorch's ``grad_fn`` name.

    Attributes:
        needs_input_grad (tuple of bool): per argument of ``forward``, whether it is
            a Tensor that requires grad.
        next_functions: ``(node, output_nr)`` per Tensor argument.
    """
    _forward_cls = None
    out_tangent = None          # (read by _forward.exit_dual_level for any grad_fn)

    def __init__(self):
        self._to_save = None
        self._saved_fw = None
        self._dirty = ()
        self._non_diff = ()
        self._in_jvp = False
        self._saved = None
        self.freed = False
        self.needs_input_grad = ()
        self.next_edges = []
        self.in_meta = []
        self.out_meta = []

    def name(self):
        return type(self).__name__

    def apply(self, *grads):
        """Run the Function's ``backward`` on ``grads`` (one per output), as PyTorch's
        ``BackwardCFunction.apply``."""
        return self._call_backward(list(grads))

    # ---------------------------------------------------------- saved tensors
    def _pack_saved(self, outputs):
        """Freeze ``save_for_backward``'s tensors with their versions; an output of
        this call is kept as data (re-made on unpacking, with this node as its
        ``grad_fn``) so that the node does not hold its own output."""
        to_save = self._to_save
        self._to_save = None
        if not to_save:
            self._saved = ()
            return
        saved = []
        hooks = _graph._current_saved_hooks() if _graph._RECORD_EXTRA else None
        for t in to_save:
            if t is None:
                saved.append(None)
                continue
            if t._version is None:              # an inference tensor
                raise RuntimeError(_INFERENCE_SAVED_MSG.format(name=self.name()))
            j = _index_of(outputs, t)
            if hooks is not None:       # saved-tensor hooks (graph.saved_tensors_hooks)
                own = j is not None and t._grad_fn is self
                saved.append(_graph.pack_own_output(self, t, j, hooks) if own
                             else _graph.pack_saved(t, hooks))
            elif j is not None and t._grad_fn is self:
                tan = (t._tangent, t._tangent_level) if t._tangent is not None else None
                saved.append((None, j, t._data, t._version, t._version[0], tan,
                              t._requires_grad))
            else:
                saved.append((t, None, None, t._version, t._version[0], None, None))
        self._saved = tuple(saved)

    def _unpack_saved(self):
        if self.freed:
            raise RuntimeError(_FREED_MSG.format(name=self.name()))
        saved = self._saved
        if saved is None:       # inside forward/setup_context: what was given so far
            return tuple(self._to_save or ())
        Tensor = _Tensor or _tensor_type()
        out = []
        for i, rec in enumerate(saved):
            if rec is None:
                out.append(None)
                continue
            if type(rec) is _graph._Packed:
                out.append(_graph.unpack_saved(rec, self.name(), f"saved tensor {i}", self))
                continue
            t, j, data, counter, v, tan, req = rec
            if counter[0] != v:
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been "
                    f"modified by an inplace operation: saved tensor {i} of {self.name()} "
                    f"is at version {counter[0]}; expected version {v} instead."
                    + _last_inplace(counter))
            if t is None:           # an output of this call
                t = Tensor._wrap(data)
                t._version = counter
                if req:
                    self.set_output(t, j)
                if tan is not None:
                    t._tangent, t._tangent_level = tan
            out.append(t)
        return tuple(out)

    def _release(self):
        self._saved = None
        self._saved_fw = None
        self.freed = True

    # ---------------------------------------------------------------- backward
    def _backward(self, grads):
        """The engine's call (graph.MultiNode): the Function's backward, its result
        checked and mapped onto ``next_edges``."""
        return self._call_backward(grads)

    def _call_backward(self, grads):
        cls = self._forward_cls
        fn = _user_backward(cls)
        result = fn(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n_args = len(self.needs_input_grad)
        if len(result) != n_args:
            if len(result) > n_args and all(r is None for r in result[n_args:]):
                result = result[:n_args]        # trailing Nones are allowed (PyTorch)
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                                   f"gradients (expected {n_args}, got {len(result)})")
        Tensor = _Tensor or _tensor_type()
        per_edge = []
        pos = self._tensor_pos
        k = 0
        for i, r in enumerate(result):
            if k < len(pos) and pos[k] == i:
                if r is not None and not isinstance(r, Tensor):
                    raise RuntimeError(
                        f"function {self.name()} returned a {type(r).__name__} as the "
                        f"gradient of input {i} (position {i + 1}); expected a Tensor "
                        f"or None")
                per_edge.append(r)
                k += 1
            elif r is not None:
                raise RuntimeError(
                    f"function {self.name()} returned a gradient different than None at "
                    f"position {i + 1}, but the corresponding forward input was not a "
                    f"Variable")
        return per_edge


def _last_inplace(counter):
    return f" The last in-place op on it was {counter[1]}()." if len(counter) > 1 else ""


def _index_of(seq, t):
    for j, o in enumerate(seq):
        if o is t:
            return j
    return None


def _user_backward(cls):
    """``cls.backward``, or ``cls.vjp`` when only that is defined."""
    if cls.backward is not Function.backward:
        return cls.backward
    if cls.vjp is not Function.vjp:
        return cls.vjp
    raise NotImplementedError(
        f"{cls.__name__}: You must implement either the backward or vjp method for your "
        f"custom autograd.Function to use it with backward mode AD.")


class Function:
    """Base class of custom differentiable operations (``torch.autograd.Function``).

    Subclass it with static methods:

    * ``forward(ctx, *args, **kwargs)`` -- or ``forward(*args, **kwargs)`` together
      with ``setup_context(ctx, inputs, output)`` -- computing the output(s) with
      any tensorplay (or numpy) code; it runs under ``no_grad``;
    * ``backward(ctx, *grad_outputs)`` (or ``vjp``) -- one cotangent per output in,
      one gradient (or None) per argument of ``forward`` out (None for non-Tensor
      arguments);
    * ``jvp(ctx, *tangents)`` for forward mode -- one tangent per argument in
      (zeros for a Tensor argument without one, None for non-Tensors), one per
      output out.

    and call it as ``MyFn.apply(*args)``.  Outputs: a Tensor, or a tuple whose
    Tensor entries are outputs (non-Tensor entries are passed through and get a
    None cotangent).  Integer/bool outputs and those passed to
    ``ctx.mark_non_differentiable`` do not require grad.

    Raises (from ``apply`` or the backward pass, naming the Function):
        RuntimeError: instantiating and calling (legacy style); ``backward``
            returning the wrong number of gradients, a non-None gradient for a
            non-Tensor argument, a non-Tensor gradient, or a gradient whose shape
            does not broadcast to its input's (broadcastable ones are summed back;
            another dtype is cast, as PyTorch); a saved tensor modified in place
            or freed; a dirty input that is not returned, or is a leaf requiring grad.
        NotImplementedError: no ``forward``; no ``backward``/``vjp`` when a backward
            pass reaches the Function; no ``jvp`` when forward mode is used.

    Example:
        >>> class Exp(Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         y = x.exp()
        ...         ctx.save_for_backward(y)
        ...         return y
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         y, = ctx.saved_tensors
        ...         return g * y
        ...     @staticmethod
        ...     def jvp(ctx, t):
        ...         return t * ctx.saved_tensors[0]     # needs save_for_forward(y)
        >>> y = Exp.apply(x)
    """
    _backward_cls = BackwardCFunction

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # PyTorch's FunctionMeta: a node class per Function, named <Name>Backward
        cls._backward_cls = type(cls.__name__ + "Backward", (BackwardCFunction,),
                                 {"_forward_cls": cls, "__module__": cls.__module__,
                                  "__qualname__": cls.__qualname__ + "Backward"})

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. "
            "Please use new-style autograd function with static forward method. "
            f"(Example: class {type(self).__name__}(Function) with @staticmethod forward "
            f"and backward, called as {type(self).__name__}.apply(...))")

    @staticmethod
    def forward(*args, **kwargs):
        """The computation; see the class docstring."""
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Optional: fill ``ctx`` from the ``inputs`` tuple and ``output`` when
        ``forward`` does not take ``ctx``."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """The vector-Jacobian product; see the class docstring."""
        raise NotImplementedError("You must implement either the backward or vjp method "
                                  "for your custom autograd.Function to use it with "
                                  "backward mode AD.")

    @staticmethod
    def vjp(ctx, *grad_outputs):
        """Alias of ``backward`` (define one of them)."""
        raise NotImplementedError("You must implement either the backward or vjp method "
                                  "for your custom autograd.Function to use it with "
                                  "backward mode AD.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """The Jacobian-vector product for forward mode; see the class docstring."""
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run the Function on ``args`` and record it in the graph; see the class
        docstring for what is returned and raised."""
        return _apply(cls, args, kwargs)


def _apply(cls, args, kwargs):
    Tensor = _Tensor or _tensor_type()
    if cls is Function:
        raise RuntimeError("Function.apply(): call apply on a subclass of Function that "
                           "defines forward and backward")
    setup = cls.setup_context is not Function.setup_context
    if setup:       # setup_context sees every argument, defaults applied (PyTorch)
        sig = cls.__dict__.get("_forward_signature")
        if sig is None:
            sig = inspect.signature(cls.forward)
            cls._forward_signature = sig
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        args, kwargs = bound.args, bound.kwargs
    state = STATE
    ctx = cls._backward_cls()
    pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    ctx._tensor_pos = pos
    needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
    ctx.needs_input_grad = needs      # under no_grad too (torch 2.13)
    record = state.grad_enabled and any(needs) and state.fw_level is not INFERENCE
    level = state.fw_level
    tangents = None     # the inputs' tangents, read before forward can change them
    if level is not None and not state.fw_rule:
        for i in pos:
            a = args[i]
            if a._tangent is not None and a._tangent_level == level:
                tangents = [a._tangent if isinstance(a, Tensor) and a._tangent_level == level
                            else None for a in args]
                break
    fw = tangents is not None
    if record:
        # the edges before forward: a dirty input's old history
        ctx.next_edges = [edge_key(args[i]) if args[i]._requires_grad else None for i in pos]
        ctx.in_meta = [(args[i]._data.shape, args[i]._data.dtype) for i in pos]
    prev_grad, prev_rule = state.grad_enabled, state.fw_rule
    state.grad_enabled = False
    state.fw_rule = True
    try:
        if setup:
            output = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, output)
        else:
            output = cls.forward(ctx, *args, **kwargs)
    finally:
        state.grad_enabled, state.fw_rule = prev_grad, prev_rule
    is_tuple = isinstance(output, tuple)
    outputs = list(output) if is_tuple else [output]
    _check_dirty(ctx, args, outputs, pos)
    if record or fw:
        _wrap_outputs(ctx, args, outputs, pos, record)
        out_tangents = _forward_tangents(cls, ctx, args, tangents, outputs) if fw else None
        for j, o in enumerate(outputs):
            tan = out_tangents[j] if fw else None
            if _index_of(ctx._dirty, o) is not None:
                _rebase_dirty(ctx, o, j, record and ctx.out_meta[j] is not None
                              and _differentiable(o) and _index_of(ctx._non_diff, o) is None,
                              tan, level if fw else None)
            elif tan is not None:
                o._tangent = tan
                o._tangent_level = level
                if tan._grad_fn is not None and state.fw_cycles is not None:
                    state.fw_cycles.append(_weakref(o))  # see _forward.py: broken on exit
    ctx._saved_fw = None        # jvp has run: nothing else reads them (no cycle via outputs)
    if record:
        ctx._pack_saved(outputs)
    else:
        ctx._to_save = None
    return tuple(outputs) if is_tuple else outputs[0]


def _check_dirty(ctx, args, outputs, pos):
    for t in ctx._dirty:
        if _index_of(outputs, t) is None:
            raise RuntimeError(
                f"{ctx._forward_cls.__name__}.apply(): Some elements marked as dirty during "
                f"the forward method were not returned as output. The inputs that are "
                f"modified inplace must all be outputs of the Function.")


def _differentiable(t):
    return t._data.dtype.kind == "f"


def _wrap_outputs(ctx, args, outputs, pos, record):
    """Give the outputs their history (``record``) or at least their own identity
    (forward mode only: an input returned as is becomes an alias)."""
    Tensor = _Tensor or _tensor_type()
    inputs = [args[i] for i in pos]
    non_diff = ctx._non_diff
    dirty = ctx._dirty
    meta = []
    for j, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            meta.append(None)
            continue
        meta.append((o._data.shape, o._data.dtype))
        is_dirty = _index_of(dirty, o) is not None
        is_input = _index_of(inputs, o) is not None
        diff = _differentiable(o) and _index_of(non_diff, o) is None
        if is_dirty:
            continue            # rebased after jvp (_rebase_dirty)
        if is_input or (record and diff and (o._grad_fn is not None or o._requires_grad)):
            # an input returned unchanged (or a tensor with a history of its own):
            # a view of it, so the Function's node can be its grad_fn
            o = _alias_of(o, ctx)
            outputs[j] = o
        if record and diff:
            ctx.set_output(o, j)
    ctx.out_meta = meta


def _alias_of(t, ctx):
    """A view of ``t`` (same memory and version counter) without its history."""
    from tensorplay._ops.shape import view
    state = STATE
    prev_grad, prev_rule = state.grad_enabled, state.fw_rule
    state.grad_enabled, state.fw_rule = False, True
    try:
        a = view(t, t._data.shape)
    finally:
        state.grad_enabled, state.fw_rule = prev_grad, prev_rule
    # writing through it in place would bypass the Function's backward (PyTorch
    # forbids it for views a custom Function returns)
    a._nograd_view = True
    return a


def _rebase_dirty(ctx, t, j, record, tangent, level):
    """Input ``t``, modified in place by forward, gets this node as its history
    (``record``; through its root's history for a view) and ``tangent`` as its
    tangent at ``level`` (not None: forward mode), as a built-in in-place op would."""
    from tensorplay.autograd import _inplace
    Tensor = _Tensor or _tensor_type()
    name = f"{ctx._forward_cls.__name__}.apply()"
    base = t._base
    if record and t._requires_grad and t._grad_fn is None:
        raise RuntimeError(f"{name}: a leaf Variable that requires grad has been used in an "
                           f"in-place operation (an input marked dirty).")
    if record and base is not None and base._requires_grad and base._grad_fn is None:
        raise RuntimeError(f"{name}: a view of a leaf Variable that requires grad has been "
                           f"used in an in-place operation (an input marked dirty).")
    result = Tensor._wrap(t._data)
    result._version = t._version
    if record:
        ctx.set_output(result, j)
    if tangent is not None:
        result._tangent, result._tangent_level = tangent, level
    if not record and level is None:
        return
    if base is not None:
        for op, _ in t._view_chain:
            if op not in _inplace._REBASABLE:
                raise NotImplementedError(
                    f"{name}: an input marked dirty that is a view made by {op.name}() "
                    f"cannot be rebased in the autograd graph yet (views made by indexing, "
                    f"view/reshape and permute/transpose can); clone() it first")
    _inplace._rebase(t, base, result, record, level)


class MissingJvpError(NotImplementedError):
    """Forward mode reached a custom Function that defines no ``jvp``.  A
    ``NotImplementedError`` (PyTorch's type); its own class so that
    ``functional.hvp``, whose forward-over-reverse is an implementation choice
    rather than the user's, can fall back to reverse-over-reverse."""


def _forward_tangents(cls, ctx, args, tangents, outputs):
    """Call the Function's ``jvp`` on the inputs' ``tangents``; return one tangent
    (or None) per output, checked and cast to the output's dtype."""
    from tensorplay._creation import zeros_like
    Tensor = _Tensor or _tensor_type()
    if cls.jvp is Function.jvp:
        raise MissingJvpError(
            f"{cls.__name__}: You must implement the jvp function for custom "
            f"autograd.Function to use it with forward mode AD.")
    tangents = [zeros_like(a) if t is None and isinstance(a, Tensor) else t
                for a, t in zip(args, tangents)]
    state = STATE
    ctx._in_jvp = True
    prev_rule = state.fw_rule
    state.fw_rule = True
    try:
        res = cls.jvp(ctx, *tangents)
    finally:
        state.fw_rule = prev_rule
        ctx._in_jvp = False
    if not isinstance(res, tuple):
        res = (res,)
    if len(res) != len(outputs):
        raise RuntimeError(f"{cls.__name__}: Function's jvp returned an invalid number of "
                           f"forward gradients (expected {len(outputs)} but got {len(res)})")
    non_diff = ctx._non_diff
    out = []
    for j, (o, tan) in enumerate(zip(outputs, res)):
        out.append(None)
        if tan is None or not isinstance(o, Tensor) or not _differentiable(o) \
                or _index_of(non_diff, o) is not None:
            continue
        if not isinstance(tan, Tensor):
            raise RuntimeError(f"{cls.__name__}: jvp returned a {type(tan).__name__} as the "
                               f"tangent of output {j}; expected a Tensor or None")
        if tan._data.shape != o._data.shape:
            raise RuntimeError(
                f"{cls.__name__}: jvp returned a tangent of size {list(tan.shape)} for "
                f"output {j}, of size {list(o.shape)}: trying to set a forward gradient "
                f"that has a different size than that of the original Tensor, this is not "
                f"supported.")
        if tan._data.dtype != o._data.dtype:
            tan = tan.to(o.dtype)
        out[j] = tan
    return out


def once_differentiable(fn):
    """Decorator for a Function's ``backward`` that is not itself differentiable.

    ``backward`` runs under ``no_grad``.  When the pass records a graph
    (``create_graph=True``) and a cotangent or a saved tensor requires grad, the
    gradients returned require grad through a node that raises on a second
    differentiation (PyTorch's ``DelayedError``) -- so a Hessian through it fails
    loudly instead of being silently zero.
    """
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not STATE.grad_enabled:
            return outputs
        Tensor = _Tensor or _tensor_type()
        sources = [a for a in args if isinstance(a, Tensor) and a._requires_grad]
        saved = ctx._saved
        if saved:
            sources += [rec[0] for rec in saved
                        if rec is not None and rec[0] is not None and rec[0]._requires_grad]
        if not sources:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        name = ctx.name()
        wrapped = tuple(
            _DelayedError.apply(o, name, *sources)
            if isinstance(o, Tensor) and _differentiable(o) else o
            for o in outs)
        return wrapped[0] if single else wrapped
    return wrapper


class _DelayedError(Function):
    """Identity whose backward raises: marks the result of a once_differentiable
    backward (its extra inputs only connect it to what the gradient depends on)."""

    @staticmethod
    def forward(ctx, x, name, *sources):
        ctx.fn_name = name
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError(f"trying to differentiate twice a function that was marked with "
                           f"@once_differentiable ({ctx.fn_name})")
