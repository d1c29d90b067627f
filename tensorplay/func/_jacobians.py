"""``tensorplay.func``'s Jacobian transforms: ``jacfwd``, ``jacrev``, ``hessian``
and ``linearize``.

They are built on the reverse- and forward-mode transforms of ``_transforms.py``
and share its scoping of fresh inputs (see that module's docstring for how
transforms compose); the columns of a Jacobian go through ``tensorplay.func.vmap``
when it can batch the function, else through a loop.
"""
import functools

import numpy as np

from tensorplay.autograd import functional as _F
from tensorplay.autograd.grad_mode import STATE, enable_grad
from tensorplay.func._pytree import tree_flatten, tree_unflatten
from tensorplay.func._transforms import (_check_outputs, _detach_tree, _diff_args, _fresh,
                                         _jvp_flat, _keep_forward, _norm_argnums, _owned,
                                         _regroup, _scoped, _split_aux, _tensor_cls,
                                         _tracked, _zeros_for_none)


def _basis(tensors):
    """One tangent (or cotangent) per element of ``tensors``: per tensor a batch
    ``(total, *shape)`` -- block ``k`` of the identity of size ``total``."""
    from tensorplay._creation import from_numpy
    numels = [t.numel() for t in tensors]
    total, off, out = sum(numels), 0, []
    for t, n in zip(tensors, numels):
        eye = np.eye(total, n, k=-off, dtype=t._data.dtype)
        out.append(from_numpy(eye.reshape((total,) + tuple(t.shape))))
        off += n
    return out, numels


def _vmap_or_none():
    try:
        from tensorplay.func._vmap import vmap
    except ImportError:
        return None
    return vmap


_RANDOMNESS = ("error", "different", "same")


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """``func`` -> its Jacobian function, column by column in forward mode.

    One JVP per element of the differentiated arguments: cheap for few inputs and
    many outputs (``jacrev`` is the other way round).  The columns run through
    ``tensorplay.func.vmap`` when that module is present and can batch the
    function, else as a loop of forward passes (a vmap attempt that raises is
    retried by the loop, so ``func`` may see one extra call).

    Args:
        func (callable): returns a Tensor or a pytree of Tensors (``(output, aux)``
            with ``has_aux``).
        argnums (int or tuple of int): the positional arguments to differentiate.
        has_aux (bool): ``func`` returns ``(output, aux)``.
        randomness (str): ``"error"``, ``"different"`` or ``"same"``, passed to
            vmap (torch.func's argument).

    Returns:
        A function returning the Jacobian: the structure of the output, each leaf
        replaced by the structure of ``args[argnums]`` (a tuple of those for a
        tuple ``argnums``) whose leaves are blocks of shape ``out.shape +
        in.shape``; ``(jacobian, aux)`` with ``has_aux``.

    Raises (when called): as ``jvp``, and a bad ``argnums`` (PyTorch's messages).
    """
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', "
                           f"or 'same'. Got {randomness}")
    where = "jvp(f, primals, tangents)"

    @functools.wraps(func)
    @_scoped
    def wrapper(*args, **kwargs):
        nums, is_int = _norm_argnums(argnums, len(args))
        outer = STATE.fw_level is not None
        specs, flat_p = [], []
        for a in nums:
            leaves, spec = tree_flatten(args[a])
            specs.append((spec, len(leaves)))
            flat_p.extend(leaves)
        for t in flat_p:
            if not isinstance(t, _tensor_cls()):
                raise ValueError(f"jacfwd: Thing passed to transform API must be Tensor, "
                                 f"got {type(t)}")
        _F._check_float(flat_p, "args[argnums]", "jacfwd")
        basis, numels = _basis(flat_p)
        info = {}

        def call(*leaves):
            new = list(args)
            i = 0
            for a, (spec, n) in zip(nums, specs):
                new[a] = tree_unflatten(leaves[i:i + n], spec)
                i += n
            return func(*new, **kwargs)

        def column(*tangents):
            out, jv, aux = _jvp_flat(call, flat_p, _flat_spec(len(flat_p)), list(tangents),
                                     has_aux, where)
            info["out"], info["aux"] = out, aux
            return tuple(_zeros_for_none(jv, out[0]))

        cols = _columns(column, basis, randomness)
        if cols is None:                           # no input elements
            from tensorplay._creation import zeros_like
            column(*(zeros_like(t) for t in flat_p))
            flat_out = info["out"][0]
            cols = [zeros_like(o).unsqueeze(0)[:0] for o in flat_out]
        flat_out, out_spec = info["out"]
        per_out = []
        for o, col in zip(flat_out, cols):             # col: (N, *o.shape)
            blocks, off = [], 0
            for p, n in zip(flat_p, numels):
                b = col[off:off + n]
                off += n
                b = b.permute(*range(1, b.ndim), 0).reshape(tuple(o.shape) + tuple(p.shape))
                blocks.append(_F._own(b))
            per_out.append(_regroup(blocks, specs, is_int))
        jac, aux = tree_unflatten(per_out, out_spec), info["aux"]
        if not _keep_forward(outer, list(cols)):
            jac, aux = _detach_tree(jac), _detach_tree(aux)
        return (jac, aux) if has_aux else jac
    return wrapper


def _flat_spec(n):
    return tree_flatten((None,) * n)[1]


def _columns(column, basis, randomness):
    """``column`` applied to every row of the batched ``basis``, stacked along dim 0
    (vmap when available, else a loop); None when the basis has no rows."""
    from tensorplay._ops.shape import stack
    n = basis[0].shape[0] if basis else 0
    if n == 0:
        return None
    vmap = _vmap_or_none()
    if vmap is not None:
        try:
            return list(vmap(column, randomness=randomness)(*basis))
        except Exception:       # noqa: BLE001 -- a rule vmap cannot batch: loop instead
            pass
    per = [column(*(b[i] for b in basis)) for i in range(n)]
    return [stack([p[k] for p in per], 0) for k in range(len(per[0]))]


# ---------------------------------------------------------------------- jacrev
def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """``func`` -> its Jacobian function, row by row in reverse mode.

    One VJP per output element, all of them in one call of ``autograd.grad(...,
    is_grads_batched=True)`` (or ``chunk_size`` rows per call): cheap for few
    outputs and many inputs.

    Args:
        func (callable): returns a Tensor or a pytree of Tensors (``(output, aux)``
            with ``has_aux``).
        argnums (int or tuple of int): the positional arguments to differentiate
            (Tensors or pytrees of Tensors).
        has_aux (bool): ``func`` returns ``(output, aux)``.
        chunk_size (int, optional): rows per batched reverse call (memory bound);
            None for all at once, 1 for a plain loop.

    Returns:
        A function returning the Jacobian: the structure of the output, each leaf
        replaced by the structure of ``args[argnums]`` (a tuple of those for a
        tuple ``argnums``) whose leaves are blocks of shape ``out.shape +
        in.shape``; ``(jacobian, aux)`` with ``has_aux``.

    Raises:
        ValueError: ``chunk_size`` not a positive int (at once).
        RuntimeError (when called): as ``vjp``, and a bad ``argnums``.

    Example:
        >>> A = tensorplay.randn(3, 4)
        >>> tensorplay.func.jacrev(lambda x: A @ x)(tensorplay.randn(4))   # == A
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    where = "vjp(f, *primals)"

    @functools.wraps(func)
    @_scoped
    def wrapper(*args, **kwargs):
        from tensorplay._creation import zeros
        from tensorplay._ops.shape_join import cat
        nums, is_int = _norm_argnums(argnums, len(args))
        with enable_grad():
            new_args, flat, specs = _diff_args(args, nums, where)
            out, aux = _split_aux(func(*new_args, **kwargs), has_aux, where)
            flat_out, out_spec = tree_flatten(out)
            _check_outputs(flat_out, where)
            _F._check_float(flat_out, "outputs", "jacrev")
        keep = _tracked(flat, flat_out)
        basis, numels = _basis(flat_out)
        total = sum(numels)
        step = chunk_size or max(total, 1)
        pieces = [[] for _ in flat]
        with enable_grad():
            for s in range(0, total, step):
                cts = [b[s:s + step] for b in basis]
                g = _F._autograd_grad(flat_out, flat, cts, create_graph=keep,
                                      retain_graph=True, is_grads_batched=True)
                for k, (gk, inp) in enumerate(zip(g, flat)):
                    pieces[k].append(gk if gk is not None else
                                     zeros((cts[0].shape[0],) + tuple(inp.shape),
                                           dtype=inp.dtype))
        rows = [cat(p, 0) if len(p) > 1 else p[0] if p else
                zeros((0,) + tuple(inp.shape), dtype=inp.dtype)
                for p, inp in zip(pieces, flat)]
        per_out, off = [], 0
        for o, n in zip(flat_out, numels):
            blocks = [_F._own(r[off:off + n].reshape(tuple(o.shape) + tuple(inp.shape)))
                      for r, inp in zip(rows, flat)]
            off += n
            per_out.append(_regroup(blocks, specs, is_int))
        jac = tree_unflatten(per_out, out_spec)
        if not keep:
            jac, aux = _detach_tree(jac), _detach_tree(aux)
        return (jac, aux) if has_aux else jac
    return wrapper


def hessian(func, argnums=0):
    """``func`` -> its Hessian function: ``jacfwd(jacrev(func, argnums), argnums)``.

    Forward-over-reverse (torch.func's and JAX's choice): the gradient by one
    reverse pass, its Jacobian by one forward-mode pass per input element.  For a
    scalar ``func`` of one Tensor ``x`` the result has shape ``x.shape + x.shape``;
    with pytrees / tuple ``argnums`` it nests as ``jacfwd`` of ``jacrev``.

    Example:
        >>> A = tensorplay.randn(3, 3)
        >>> tensorplay.func.hessian(lambda x: x @ A @ x)(tensorplay.randn(3))  # A + A.T
    """
    return jacfwd(jacrev(func, argnums), argnums)


# -------------------------------------------------------------------- linearize
@_scoped
def linearize(func, *primals):
    """``(output, jvp_fn)``: ``func(*primals)`` and its linearization at ``primals``.

    ``func`` runs once; ``jvp_fn(*tangents)`` then gives the JVP at ``primals``
    for any tangents without running ``func`` again: the first call records the
    VJP ``u -> J^T u`` (linear in ``u``) with a graph, and every ``jvp_fn`` call is
    one reverse pass through that graph (the VJP of ``u -> J^T u`` at the tangent
    is ``J t``).  Costs one recorded backward up front and one backward per call.

    Args:
        func (callable): returns a Tensor or a pytree of Tensors.
        *primals: Tensors or pytrees of float Tensors.

    Returns:
        ``(output, jvp_fn)``; ``jvp_fn(*tangents)`` takes tangents with the
        structure and shapes of ``primals`` and returns the JVP with the structure
        of ``output``.

    Raises:
        RuntimeError: non-Tensor outputs; ``jvp_fn`` given tangents of another
            structure or shape.
        ValueError: a non-Tensor primal.
    """
    from tensorplay._creation import zeros_like
    where = "linearize(func, primals)"
    with enable_grad():
        flat_p, spec_p = tree_flatten(primals)
        fresh = [_fresh(t, where) for t in flat_p]
        out = func(*tree_unflatten(fresh, spec_p))
        flat_out, out_spec = tree_flatten(out)
        _check_outputs(flat_out, where)
        _F._check_float(flat_out, "outputs", "linearize")
        us = [_owned(zeros_like(o).requires_grad_()) for o in flat_out]
        gs = _F._autograd_grad(flat_out, fresh, us, create_graph=True)
    keep = _tracked(fresh, flat_out)

    def jvp_fn(*tangents):
        flat_t, spec_t = tree_flatten(tangents)
        if spec_t != spec_p:
            raise RuntimeError(f"Expected the tangents {spec_t!r} to have the same argspec "
                               f"as the primals {spec_p!r}")
        Tensor = _tensor_cls()
        for i, (t, p) in enumerate(zip(flat_t, flat_p)):
            if not isinstance(t, Tensor):
                raise RuntimeError(f"linearize jvp_fn: tangent:{i} must be a Tensor, got "
                                   f"{type(t)}")
            if tuple(t.shape) != tuple(p.shape):
                raise RuntimeError(f"tangent:{i} with shape {list(t.shape)} in flattened "
                                   f"pytree doesn't match the shape {list(p.shape)} of the "
                                   f"corresponding primal.")
        create = STATE.fw_level is not None or (
            STATE.grad_enabled and (keep or any(t._requires_grad for t in flat_t)))
        with enable_grad():
            jv = _F._autograd_grad(gs, us, flat_t, create_graph=create, retain_graph=True)
        return tree_unflatten(_zeros_for_none(jv, flat_out), out_spec)

    if not keep:
        out = _detach_tree(out)
    return out, jvp_fn
