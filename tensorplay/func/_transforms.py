"""``tensorplay.func`` transforms (the ``torch.func`` / JAX API) over the one engine.

Each transform is a few lines on ``autograd.grad`` (reverse mode) or on dual
tensors (forward mode); none has machinery of its own.  How they compose:

* **Fresh inputs.**  A transform differentiates with respect to tensors it makes
  itself from the arguments in ``argnums``: a view of the argument when it
  requires grad (an outer transform, or ordinary autograd, sees through it), a new
  leaf otherwise (keeping the argument's tangent when a dual level is active).
  Arguments need not require grad, and none gets a graph or a ``.grad``.
* **Graph kept only when someone outside needs it.**  The inner reverse pass runs
  with ``create_graph=True`` exactly when its result may be differentiated again:
  a dual level is active (forward mode over this transform), or grad mode is on
  and the function's graph reaches a leaf requiring grad that the transform did
  not make (an argument that requires grad, an input of an enclosing transform
  still running, a model parameter captured by closure).  Leaves made by
  transform calls that have returned are ignored (``_OWNED``): nobody can ask for
  a gradient with respect to them.  Otherwise the results are plain detached
  tensors, as ``torch.func`` gives them at top level.  So ``grad(grad(f))``,
  ``jacfwd(jacrev(f))``, ``vjp`` of ``grad``, and a gradient penalty
  ``func.grad(D)(x)`` backpropagated into ``D``'s parameters all work, and
  ``hessian(f)(x)`` returns a plain tensor.
* **Forward mode has one level.**  The engine supports one active dual level
  (PyTorch's forward AD does not nest either); a forward-mode transform that
  starts while one is active (``jacfwd(jacfwd(f))``, ``jvp`` of ``jvp``)
  computes its JVP by the double-backward trick instead: the VJP ``u -> J^T u``
  is linear in ``u`` and its VJP at ``t`` is ``J t`` -- the same numbers, with the
  outer level's tangents flowing through both reverse passes.

Pytrees: arguments in ``argnums``, outputs, cotangents and tangents may be
tuples, lists, namedtuples and dicts of Tensors (``_pytree.py``).
"""
import contextlib
import functools
import threading
import weakref


from tensorplay.autograd import _forward as fw
from tensorplay.autograd import functional as _F
from tensorplay.autograd.grad_mode import STATE, enable_grad
from tensorplay.func._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jvp"]     # the Jacobians: _jacobians.py


# ----------------------------------------------------------------------- helpers
def _tensor_cls():
    from tensorplay._tensor import Tensor
    return Tensor


def _norm_argnums(argnums, nargs):
    """``(tuple of non-negative argnums, is_int)``; PyTorch's errors."""
    def one(a):
        if not isinstance(a, int) or isinstance(a, bool):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: "
                               f"{type(argnums)}")
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
        return a % nargs

    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return (one(argnums),), True
    if not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if not argnums:
        raise RuntimeError("argnums must be non-empty")
    norm = tuple(one(a) for a in argnums)
    if len(set(norm)) != len(norm):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return norm, False


# The leaves the transforms make (fresh inputs, dummy cotangents), by id, as
# ``[weak reference, retired]``.  A leaf is retired when the transform call that
# made it returns: a result whose graph reaches only retired leaves (and the
# current call's own) needs no graph for anybody, since nobody can ask for a
# gradient with respect to them.  The leaves of a call still running (an
# enclosing transform's inputs) are live: reaching one means keeping the graph.
# An id-keyed dict, not a WeakSet: a set would compare Tensors with ``==``.
_OWNED = {}


class _Scopes(threading.local):
    def __init__(self):
        self.stack = []          # per running transform call: the entries it made


_SCOPES = _Scopes()


def _owned(t):
    """Register ``t``, a leaf the running transform call made."""
    i = id(t)
    entry = [weakref.ref(t, lambda _, i=i: _OWNED.pop(i, None)), False]
    _OWNED[i] = entry
    if _SCOPES.stack:
        _SCOPES.stack[-1].append(entry)
    return t


def _is_retired(t):
    entry = _OWNED.get(id(t))
    return entry is not None and entry[1] and entry[0]() is t


@contextlib.contextmanager
def _scope():
    """One transform call: the leaves made inside retire when it ends."""
    made = []
    _SCOPES.stack.append(made)
    try:
        yield
    finally:
        _SCOPES.stack.pop()
        for entry in made:
            entry[1] = True


def _scoped(fn):
    """Run each call of ``fn`` in a ``_scope``."""
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        with _scope():
            return fn(*args, **kwargs)
    return inner


def _fresh(t, where):
    """The tensor a transform differentiates with respect to, made from ``t``."""
    Tensor = _tensor_cls()
    if not isinstance(t, Tensor):
        raise ValueError(f"{where}: Thing passed to transform API must be Tensor, got "
                         f"{type(t)}")
    if t._data.dtype.kind != "f":
        raise RuntimeError(f"{where}: only Tensors of floating point dtype can be "
                           f"differentiated, got {t.dtype}")
    if t._requires_grad:
        with enable_grad():
            return t.view_as(t)
    return _owned(_F._leaf_keeping_tangent(t))


def _diff_args(args, argnums, where):
    """``(new_args, flat_fresh, specs)``: the arguments with every Tensor of the
    ``argnums`` pytrees replaced by a fresh one."""
    args = list(args)
    flat, specs = [], []
    for a in argnums:
        leaves, spec = tree_flatten(args[a])
        new = [_fresh(t, where) for t in leaves]
        args[a] = tree_unflatten(new, spec)
        flat.extend(new)
        specs.append((spec, len(new)))
    return args, flat, specs


def _regroup(flat, specs, is_int):
    """Per-input results back into the argnums' pytrees (one, or a tuple)."""
    out, i = [], 0
    for spec, n in specs:
        out.append(tree_unflatten(flat[i:i + n], spec))
        i += n
    return out[0] if is_int else tuple(out)


def _tracked(fresh, outputs):
    """Whether the results must stay differentiable (module docstring): a dual
    level is active, or grad mode is on and an argument requires grad (its fresh
    tensor is a view) or ``outputs`` reach a leaf requiring grad that is neither
    ``fresh`` nor retired."""
    if STATE.fw_level is not None:
        return True
    if not STATE.grad_enabled:
        return False
    if any(t._grad_fn is not None for t in fresh):
        return True                     # an argument that requires grad: a view of it
    return _reaches_foreign_leaf(outputs, {id(t) for t in fresh})


def _reaches_foreign_leaf(outputs, mine=frozenset()):
    """True when the reverse graph of ``outputs`` reaches a leaf requiring grad
    that is not in ``mine`` (ids) and not retired, or a node the walk cannot see
    through."""
    Tensor = _tensor_cls()
    for key in _F._graph_keys(outputs).values():
        if isinstance(key, Tensor):
            if id(key) not in mine and not _is_retired(key):
                return True
        elif not isinstance(key, tuple) and not hasattr(key, "next_edges"):
            return True
    return False


def _keep_forward(outer_level, flat_results):
    """The forward-mode transforms' version of ``_tracked``: their primals are the
    caller's tensors, so only the results' graph tells."""
    if outer_level:
        return True
    return STATE.grad_enabled and _reaches_foreign_leaf(flat_results)


def _detach_tree(tree):
    Tensor = _tensor_cls()
    return tree_map(lambda t: t.detach() if isinstance(t, Tensor) else t, tree)


def _check_outputs(flat, where):
    Tensor = _tensor_cls()
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{where}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(o)}")


def _split_aux(out, has_aux, where):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{where}: output of function f should be a tuple: (output, "
                           f"aux) if has_aux is True")
    return out


def _zeros_for_none(grads, refs):
    from tensorplay._creation import zeros_like
    return [zeros_like(r) if g is None else g for g, r in zip(grads, refs)]


# ---------------------------------------------------------------- grad and vjp
def grad_and_value(func, argnums=0, has_aux=False):
    """``func`` -> a function returning ``(gradient, value)`` (torch.func's name).

    Args:
        func (callable): returns a 0-dim float Tensor (and, with ``has_aux``, a
            tuple ``(output, aux)``).
        argnums (int or tuple of int): which positional arguments to
            differentiate; each may be a Tensor or a pytree of Tensors.  Negative
            values count from the end.
        has_aux (bool): ``func`` returns ``(output, aux)``; aux is passed through.

    Returns:
        A function of ``func``'s arguments returning ``(grad, value)``, or
        ``(grad, (value, aux))`` with ``has_aux``.  ``grad`` has the structure of
        ``args[argnums]`` (a tuple of those for a tuple ``argnums``); an argument
        the output does not depend on gets zeros.

    Raises (when called):
        RuntimeError: a bad ``argnums`` (PyTorch's messages); an output that is not
            a 0-dim Tensor; ``has_aux`` without a pair; a non-floating argument.
        ValueError: a non-Tensor leaf in a differentiated argument.
    """
    where = "grad_and_value(f)(*args)"

    @functools.wraps(func)
    @_scoped
    def wrapper(*args, **kwargs):
        nums, is_int = _norm_argnums(argnums, len(args))
        Tensor = _tensor_cls()
        with enable_grad():
            new_args, flat, specs = _diff_args(args, nums, where)
            out, aux = _split_aux(func(*new_args, **kwargs), has_aux, where)
            if not isinstance(out, Tensor):
                raise RuntimeError(f"{where}: Expected f(*args) to return a Tensor, got "
                                   f"{type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"{where}: Expected f(*args) to return a scalar Tensor, "
                                   f"got tensor with {out.dim()} dims. Maybe you wanted to "
                                   f"use the vjp or jacrev APIs instead?")
            if out._data.dtype.kind != "f":
                raise RuntimeError(f"{where}: Expected f(*args) to return a floating point "
                                   f"Tensor, got {out.dtype}")
        keep = _tracked(flat, [out])
        with enable_grad():
            grads = _F._autograd_grad((out,), flat, create_graph=keep, retain_graph=keep)
        grads = _regroup(_zeros_for_none(grads, flat), specs, is_int)
        if not keep:
            out, aux = out.detach(), _detach_tree(aux)
        return (grads, (out, aux)) if has_aux else (grads, out)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """``func`` -> its gradient function (``torch.func.grad``; JAX's ``grad``).

    ``grad(f)(*args)`` is ``d f / d args[argnums]``, shaped like those arguments;
    ``f`` must return a 0-dim float Tensor.  Composes: ``grad(grad(f))`` is the
    second derivative, ``jacfwd(grad(f))`` the Hessian.

    Args:
        func (callable): returns a 0-dim float Tensor (``(output, aux)`` with
            ``has_aux``).
        argnums (int or tuple of int): positional arguments to differentiate
            (Tensors or pytrees of Tensors); a tuple gives a tuple of gradients.
        has_aux (bool): ``func`` returns ``(output, aux)``; the result is then
            ``(grad, aux)``.

    Returns:
        A function with ``func``'s arguments returning the gradient (and aux).

    Raises (when called): as ``grad_and_value``.

    Example:
        >>> x = tensorplay.randn(3)
        >>> tensorplay.func.grad(lambda x: x.sin().sum())(x)        # == x.cos()
        >>> tensorplay.func.grad(tensorplay.func.grad(lambda x: x.sin()))(x[0])  # -sin
    """
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


@_scoped
def vjp(func, *primals, has_aux=False):
    """``(output, vjp_fn)``: ``func(*primals)`` and its vector-Jacobian product.

    Args:
        func (callable): takes ``*primals``, returns a Tensor or a pytree of
            Tensors (``(output, aux)`` with ``has_aux``).
        *primals: Tensors or pytrees of Tensors (float32/float64); need not
            require grad.
        has_aux (bool): ``func`` returns ``(output, aux)``.

    Returns:
        ``(output, vjp_fn)`` or ``(output, vjp_fn, aux)``.  ``vjp_fn(cotangents)``
        takes cotangents with the structure and shapes of ``output`` and returns a
        tuple with one entry per primal (each shaped like it; zeros where the
        output does not depend on it).  It may be called many times; it is itself
        differentiable (with respect to the primals and the cotangents) when an
        outer transform or ordinary autograd needs it.

    Raises:
        RuntimeError: a non-Tensor output; ``vjp_fn`` given cotangents of another
            structure or shape; non-floating primals.
        ValueError: a non-Tensor primal.

    Example:
        >>> x = tensorplay.randn(3)
        >>> out, vjp_fn = tensorplay.func.vjp(tensorplay.sin, x)
        >>> (g,) = vjp_fn(tensorplay.ones(3))                 # == x.cos()
    """
    where = "vjp(f, *primals)"
    with enable_grad():
        flat_p, primals_spec = tree_flatten(primals)
        fresh = [_fresh(t, where) for t in flat_p]
        out, aux = _split_aux(func(*tree_unflatten(fresh, primals_spec)), has_aux, where)
        flat_out, out_spec = tree_flatten(out)
        _check_outputs(flat_out, where)
    keep_fwd = _tracked(fresh, flat_out)

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{ct_spec!r}, primal output: {out_spec!r}")
        Tensor = _tensor_cls()
        for i, (c, o) in enumerate(zip(flat_ct, flat_out)):
            if not isinstance(c, Tensor):
                raise RuntimeError(f"vjp_fn: cotangent {i} must be a Tensor, got {type(c)}")
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"vjp_fn: Mismatch in shape: cotangent {i} has a shape of "
                                   f"{list(c.shape)} and output {i} has a shape of "
                                   f"{list(o.shape)}")
        if create_graph is None:
            create_graph = STATE.fw_level is not None or (
                STATE.grad_enabled and (keep_fwd or any(c._requires_grad for c in flat_ct)))
        with enable_grad():
            grads = _F._autograd_grad(flat_out, fresh, flat_ct, create_graph=create_graph,
                                      retain_graph=retain_graph or create_graph)
        return tree_unflatten(_zeros_for_none(grads, fresh), primals_spec)

    if not keep_fwd:
        out, aux = _detach_tree(out), _detach_tree(aux)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


# ------------------------------------------------------------------ forward mode
@_scoped
def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(output, jvp_out)``: ``func(*primals)`` and its Jacobian times ``tangents``.

    Forward mode (one pass, the JVP rules of every primitive) when no dual level
    is active; inside one, the double-backward trick (module docstring).

    Args:
        func (callable): returns a Tensor or a pytree of Tensors (``(output, aux)``
            with ``has_aux``).
        primals (tuple): the arguments, Tensors or pytrees of float Tensors.
        tangents (tuple): the same structure and shapes as ``primals``.
        strict (bool): raise when an output does not depend on the primals
            (otherwise its JVP is zeros).
        has_aux (bool): ``func`` returns ``(output, aux)``.

    Returns:
        ``(output, jvp_out)`` or ``(output, jvp_out, aux)``; ``jvp_out`` has the
        structure and shapes of ``output``.

    Raises:
        RuntimeError: ``primals`` not a tuple; structures that differ; non-Tensor
            or non-floating primals, tangents or outputs; shape mismatches.

    Example:
        >>> x, t = tensorplay.randn(3), tensorplay.ones(3)
        >>> out, jv = tensorplay.func.jvp(tensorplay.sin, (x,), (t,))   # jv == x.cos()
    """
    where = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{where}: Expected primals to be a tuple. E.g. it should be "
                           f"valid to call f(*primals).")
    flat_p, spec_p = tree_flatten(primals)
    flat_t, spec_t = tree_flatten(tangents)
    if spec_p != spec_t:
        raise RuntimeError(f"{where}: Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, "
                           f"tangents also must be. Got primals with structure {spec_p!r} "
                           f"and tangents with structure {spec_t!r}")
    Tensor = _tensor_cls()
    for what, flat in (("primals", flat_p), ("tangents", flat_t)):
        for t in flat:
            if not isinstance(t, Tensor):
                raise RuntimeError(f"{where}: Expected {what} to only contain Tensors, got "
                                   f"{type(t)}")
            if t._data.dtype.kind != "f":
                raise RuntimeError(f"{where}: Expected {what} to be floating point, but "
                                   f"got: {t.dtype}")
    for i, (p, t) in enumerate(zip(flat_p, flat_t)):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"{where}: tangent {i} has shape {list(t.shape)}, which "
                               f"does not match the shape {list(p.shape)} of its primal")
    outer = STATE.fw_level is not None
    out, jv, aux = _jvp_flat(func, flat_p, spec_p, flat_t, has_aux, where)
    flat_out, out_spec = out
    if strict and any(j is None for j in jv):
        raise RuntimeError(f"{where[:-1]}, strict=True): The output of f is independent of "
                           f"the inputs. This is not allowed with strict=True.")
    jv = _zeros_for_none(jv, flat_out)
    if not _keep_forward(outer, flat_out + jv):
        flat_out, jv, aux = ([o.detach() for o in flat_out], [j.detach() for j in jv],
                             _detach_tree(aux))
    res = (tree_unflatten(flat_out, out_spec), tree_unflatten(jv, out_spec))
    return res + (aux,) if has_aux else res


def _jvp_flat(func, flat_p, spec_p, flat_t, has_aux, where):
    """``((flat_out, out_spec), tangents or None per output, aux)``."""
    if STATE.fw_level is None:
        with fw.dual_level():
            duals = [fw.make_dual(p, t) for p, t in zip(flat_p, flat_t)]
            out, aux = _split_aux(func(*tree_unflatten(duals, spec_p)), has_aux, where)
            flat_out, out_spec = tree_flatten(out)
            _check_outputs(flat_out, where)
            unpacked = [fw.unpack_dual(o) for o in flat_out]
            aux = _unpack_tree(aux)
        return (([u.primal for u in unpacked], out_spec), [u.tangent for u in unpacked], aux)
    return _jvp_double_vjp(func, flat_p, spec_p, flat_t, has_aux, where)


def _unpack_tree(tree):
    Tensor = _tensor_cls()
    return tree_map(lambda t: fw.unpack_dual(t).primal if isinstance(t, Tensor) else t, tree)


def _jvp_double_vjp(func, flat_p, spec_p, flat_t, has_aux, where):
    """``J t`` as the VJP, at ``t``, of ``u -> J^T u`` (a dual level is active)."""
    from tensorplay._creation import zeros_like
    with enable_grad():
        fresh = [_fresh(p, where) for p in flat_p]
        out, aux = _split_aux(func(*tree_unflatten(fresh, spec_p)), has_aux, where)
        flat_out, out_spec = tree_flatten(out)
        _check_outputs(flat_out, where)
        us = [_owned(zeros_like(o).requires_grad_()) if o._data.dtype.kind == "f" else None
              for o in flat_out]
        gs = _F._autograd_grad(flat_out, fresh, us, create_graph=True)
        jv = _F._autograd_grad(gs, us, flat_t, create_graph=True)
    return (flat_out, out_spec), list(jv), aux
