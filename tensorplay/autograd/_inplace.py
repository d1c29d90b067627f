"""In-place ops inside the autograd graph (PyTorch's semantics).

An in-place method ``x.<op>_(...)`` computes the out-of-place result with the
public op, checks that it fits ``x`` (same shape -- ``x`` is never broadcast up --
and a dtype that casts to ``x``'s, as PyTorch), writes it into ``x``'s storage,
bumps the version counter shared with ``x``'s views, and then rebases history:

* ``x`` not a view: ``x.grad_fn`` becomes the result's node (``mul_`` records a
  ``MulBackward0`` whose input edge is ``x``'s old history).  A result that does
  not depend on anything that requires grad (``fill_``, ``zero_``, ``copy_`` of a
  constant) gets a ``CopySlices`` node that gives the old value a zero gradient.
* ``x`` a view of a root ``b`` (``x = b[1:3]``, ``b.t()[0]``, views of views):
  ``b``'s history is rebased as PyTorch's ``CopySlices`` does -- ``b_new`` is
  ``b_old`` with the view's region replaced by the new value -- and ``x.grad_fn``
  becomes the view chain replayed on ``b_new``.  The region is written through
  the chain backwards: ``copy_slices`` (an out-of-place basic-index put) for a
  ``getitem`` step, the inverse reshape for ``view``, the inverse permutation for
  ``permute``.
* every other live view of the root has its ``grad_fn`` (and tangent) replayed on
  the new root, so using it afterwards sees the new values' history.

Forward mode works the same way out of place: the tangent of ``x`` (and of its
root, through ``copy_slices`` on the tangents) becomes that of the result.

The out-of-place op runs on an *alias* of ``x``: a Tensor on the same memory with
``x``'s history but a version counter of its own.  When the op's graph saved the
alias (``mul`` saves its inputs, for the other operand's gradient), the old values
are moved to a copy before the write (detected by the alias's reference count),
so ``x.mul_(y)`` differentiates for ``y`` where PyTorch's codegen clones ``self``.
Views of ``x`` (and ``x`` itself) that were saved by *earlier* ops share the
version counter and make that backward raise, as in PyTorch.
"""
import sys

import numpy as np

from tensorplay._dtype import from_numpy_dtype
from tensorplay._ops._validate import renamed_error
from tensorplay._ops.inplace import _copy_slices, _zeros, copy_slices
from tensorplay._ops.registry import REGISTRY, apply
from tensorplay._tensor import Tensor, _check_narrowing
from tensorplay.autograd import graph as _graph
from tensorplay.autograd.grad_mode import INFERENCE, STATE
from tensorplay.autograd.graph import Node

__all__ = ["inplace", "commit", "check_target", "bump"]

_INFERENCE_INPLACE = (
    "{name}(): Inplace update to inference tensor outside InferenceMode is not allowed. "
    "You can make a clone to get a normal tensor before doing inplace update. See "
    "https://github.com/pytorch/rfcs/pull/17 for more details.")

_wrap = Tensor._wrap
_GETITEM, _VIEW, _PERMUTE = REGISTRY["getitem"], REGISTRY["view"], REGISTRY["permute"]
_REBASABLE = (_GETITEM, _VIEW, _PERMUTE)


# ---------------------------------------------------------------- the mechanism
def inplace(self, name, fn, args, kwargs):
    """``self.<name>(*args, **kwargs)``: ``fn(self, *args, **kwargs)`` (a public
    out-of-place op) written into ``self``; returns ``self``.

    Errors of ``fn`` are renamed for ``name``; see ``commit`` for the rest.
    """
    check_target(self, name)
    state = STATE
    if not state.grad_enabled and (state.fw_level is None or state.fw_level is INFERENCE):
        # nothing will be recorded: no alias needed (optimiser steps land here)
        return commit(self, name, _call(fn, name, self, args, kwargs), None, False)
    alias = _alias(self)
    if _graph._RECORD_EXTRA and _graph._current_saved_hooks() is not None:
        # a saved-tensor pack hook may keep the alias's memory without the alias
        # (``t.detach()``), which the reference count below cannot see: the op
        # reads a copy of the old values instead (PyTorch clones ``self`` there)
        alias._data = np.array(alias._data, order="K", copy=True)
    args = tuple([alias if a is self else a for a in args])
    before = sys.getrefcount(alias)
    result = _call(fn, name, alias, args, kwargs)
    # references to the alias beyond ours: the op's graph saved it (or a view of it)
    saved = result is not alias and sys.getrefcount(alias) > before
    return commit(self, name, result, alias, saved)


def check_target(self, name):
    """The checks on the target that come before anything is computed.

    Raises:
        RuntimeError: a leaf that requires grad, or a view of one, with grad mode
            on; a view made under no_grad of a tensor that requires grad, written
            with grad mode on; a read-only tensor; an inference tensor outside
            inference mode.
    """
    if self._version is None and STATE.fw_level is not INFERENCE:
        raise RuntimeError(_INFERENCE_INPLACE.format(name=name))
    if STATE.grad_enabled:
        if self._nograd_view:
            raise RuntimeError(
                f"{name}(): A view was created in no_grad mode and is being modified "
                f"inplace with grad mode enabled: its base requires grad, and the graph "
                f"cannot see the change. Make the change under no_grad too, or clone() "
                f"the view.")
        if self._requires_grad and self._grad_fn is None:
            raise RuntimeError(
                f"{name}(): a leaf Variable that requires grad is being used in an "
                f"in-place operation. Wrap it in tensorplay.no_grad() to update it.")
        base = self._base
        if base is not None and base._requires_grad and base._grad_fn is None:
            raise RuntimeError(
                f"{name}(): a view of a leaf Variable that requires grad is being used "
                f"in an in-place operation. Wrap it in tensorplay.no_grad(), or clone() "
                f"the leaf first.")
    if not self._data.flags.writeable:
        if STATE.vmap_depth and not isinstance(self._data, np.ndarray):
            raise RuntimeError(f"{name}(): vmap: in-place operations on a batched tensor "
                               f"are not supported; use the out-of-place form inside vmap.")
        raise RuntimeError(
            f"{name}(): the tensor's storage is read-only (a broadcast view made by "
            f"expand(), a read-only ndarray, or an ndarray whose elements overlap in "
            f"memory); clone() it before writing to it.")


def commit(self, name, result, alias=None, saved=False):
    """Write the out-of-place ``result`` into ``self`` and rebase the history.

    ``alias`` is the tensor ``result`` was computed from in ``self``'s place
    (``inplace``), ``saved`` whether the result's graph kept it.  A result that is
    a leaf or has no history gives ``self`` a constant value (zero gradient for
    the old one, PyTorch's ``FillBackward0``).

    Raises:
        RuntimeError: a result of another shape than ``self``'s (no broadcasting of
            ``self`` up), or of a dtype that cannot be cast into ``self``'s (float
            into an integer tensor), or an integer value the target cannot hold;
            an in-place op through a view that cannot be rebased.  Nothing is
            written when it raises.
    """
    check_target(self, name)
    sd = self._data
    rd = result._data
    if rd.shape != sd.shape:
        raise RuntimeError(f"{name}(): output with shape {list(sd.shape)} doesn't match "
                           f"the broadcast shape {list(rd.shape)}")
    if rd.dtype != sd.dtype:
        if not np.can_cast(rd.dtype, sd.dtype, casting="same_kind"):
            raise RuntimeError(f"{name}(): result type {from_numpy_dtype(rd.dtype)} can't be "
                               f"cast to the desired output type {from_numpy_dtype(sd.dtype)}")
        if sd.dtype.kind == "f":
            with np.errstate(over="ignore"):        # beyond float32: inf, as PyTorch
                result = result.to(from_numpy_dtype(sd.dtype))
        else:
            _check_narrowing(rd, sd.dtype, name)    # int64 into int32: no wrapping
            result = _wrap(rd.astype(sd.dtype))
        rd = result._data
    state = STATE
    base = self._base
    if result is self or result is alias:           # the op returned its input
        bump(self, name)
        return self
    record = state.grad_enabled and state.fw_level is not INFERENCE and (
        result._requires_grad or self._requires_grad
        or (base is not None and base._requires_grad))
    level = state.fw_level
    if level is not None and not (_tangent_at(result, level) is not None
                                  or _tangent_at(self, level) is not None
                                  or (base is not None and _tangent_at(base, level) is not None)):
        level = None
    if base is not None and (record or level is not None):
        for op, _ in self._view_chain:
            if op not in _REBASABLE:
                raise NotImplementedError(
                    f"{name}(): an in-place op through a view made by {op.name}() cannot "
                    f"be recorded in the autograd graph yet (views made by indexing, "
                    f"view/reshape and permute/transpose can); clone() the view, or "
                    f"use the out-of-place form")
    if record and base is None and result._requires_grad and result._grad_fn is None:
        result = apply(REGISTRY["clone"], (result,), {})    # a leaf source: a node of its own
    if saved:
        _keep_old_values(alias)
    np.copyto(sd, rd)
    bump(self, name)
    if record or level is not None:
        _rebase(self, base, result, record, level)
    return self


def bump(self, name):
    """Count an in-place write in the version counter shared with the views; the
    counter remembers the op's name for the saved-tensor error (graph.py)."""
    v = self._version
    if v is None:               # an inference tensor (in inference mode): untracked
        return
    v[0] += 1
    if len(v) == 1:
        v.append(name)
    else:
        v[1] = name


def _call(fn, name, first, args, kwargs):
    try:
        return fn(first, *args, **kwargs)
    except (TypeError, RuntimeError, IndexError, ValueError) as e:
        named = renamed_error(e, fn.__name__, name)     # name the op the user called
        if named is None:
            raise
        raise named from None


def _alias(self):
    """A Tensor on ``self``'s memory with ``self``'s history and tangent, and a
    version counter of its own (not a view: no base)."""
    a = _wrap(self._data)
    a._requires_grad = self._requires_grad
    a._grad_fn = self._grad_fn
    _copy_output_nr(a, self)
    a._tangent = self._tangent
    a._tangent_level = self._tangent_level
    return a


def _copy_output_nr(dst, src):
    """``dst`` took ``src``'s grad_fn: when that is a MultiNode, also which output."""
    fn = src._grad_fn
    if fn is not None and type(fn) is not Node:
        dst._output_nr = src._output_nr


def _keep_old_values(alias):
    """Move the alias (saved by the result's graph) and its views to a copy of the
    old values, so the write does not reach what the backward will read."""
    old = np.array(alias._data, order="K", copy=True)
    alias._data = old
    views = alias._views
    if views is not None:
        for r in views[1:]:
            w = r()
            if w is not None:
                data = old
                for op, p in w._view_chain:
                    data = op.forward(data, **p)
                w._data = data


def _tangent_at(t, level):
    tan = t._tangent
    return tan if tan is not None and t._tangent_level == level else None


def _rebase(self, base, result, record, level):
    """Give ``self`` (and, for a view, its root ``base``) the history and tangent
    of the value just written, then replay the root's other views."""
    if base is None:
        root = self
        if record:
            if result._requires_grad:
                self._grad_fn = result._grad_fn
                _copy_output_nr(self, result)
                self._requires_grad = True
            else:       # a constant replaces a value in the graph: zero gradient for it
                Node(_copy_slices, (self, result), self, {"key": (Ellipsis,)})
        if level is not None:
            _set_tangent(self, _tangent_at(result, level), level)
    else:
        root = base
        chain = self._view_chain
        if record:
            _rebase_graph(base, chain, result)
            self._grad_fn = _replay_graph(base, chain)
            self._requires_grad = True
        if level is not None:
            new = _scatter_tangent(base, chain, _tangent_at(result, level), level)
            _set_tangent(base, new, level)
            _set_tangent(self, _replay_tangent(new, chain), level)
    views = root._views
    if views is None:
        return
    rt = _tangent_at(root, level) if level is not None else None
    for r in views[1:]:
        w = r()
        if w is None or w is self or w._nograd_view or w._base is not root:
            continue                # (a dual made from root is a root of its own)
        if record and root._requires_grad:
            w._grad_fn = _replay_graph(root, w._view_chain)
            w._requires_grad = True
        if level is not None:
            _set_tangent(w, None if rt is None else _replay_tangent(rt, w._view_chain), level)


def _set_tangent(t, tangent, level):
    if tangent is not None:
        t._tangent, t._tangent_level = tangent, level
    elif t._tangent_level == level:
        t._tangent, t._tangent_level = None, None


def _step(t, op, params):
    """One view op on ``t``, recorded by hand (a view of the same memory; not
    registered with the root, unlike ``apply``)."""
    out = _wrap(op.forward(t._data, **params))
    if t._requires_grad:
        Node(op, (t,), out, params)
    return out


def _replay_graph(root, chain):
    t = root
    for op, p in chain:
        t = _step(t, op, p)
    return t._grad_fn


def _inverse_dims(dims):
    return tuple(np.argsort(dims).tolist())


def _rebase_graph(base, chain, value):
    """``base``'s new grad_fn: the view chain written backwards from ``value`` (the
    new value of ``base``'s view), each level's node made by hand on the memory
    that already holds the new values (no copies: these nodes save nothing)."""
    olds = [base]
    t = base
    for op, p in chain[:-1]:
        t = _step(t, op, p)
        olds.append(t)
    x = value
    for i in range(len(chain) - 1, -1, -1):
        op, p = chain[i]
        old = olds[i]
        out = base if i == 0 else _wrap(old._data)
        if op is _GETITEM:
            inputs, op2, p2 = (old, x), _copy_slices, {"key": p["key"]}
        elif op is _VIEW:
            inputs, op2, p2 = (x,), _VIEW, {"shape": old._data.shape}
        else:
            inputs, op2, p2 = (x,), _PERMUTE, {"dims": _inverse_dims(p["dims"])}
        if any(u._requires_grad for u in inputs):
            Node(op2, inputs, out, p2)
        x = out


def _replay_tangent(t, chain):
    for op, p in chain:
        t = t.reshape(p["shape"]) if op is _VIEW else apply(op, (t,), p)
    return t


def _scatter_tangent(base, chain, value_t, level):
    """The root's new tangent: its old one (zeros if none) with the view's region
    replaced by ``value_t`` (zeros if none), out of place."""
    dt = base._data.dtype
    bt = _tangent_at(base, level)
    if bt is None:
        bt = _zeros(base._data.shape, dt)
    olds = [bt]
    for op, p in chain[:-1]:
        olds.append(_replay_tangent(olds[-1], ((op, p),)))
    if value_t is None:
        shape = _replay_tangent(olds[-1], chain[-1:])._data.shape
        value_t = _zeros(shape, dt)
    x = value_t
    for i in range(len(chain) - 1, -1, -1):
        op, p = chain[i]
        old = olds[i]
        if op is _GETITEM:
            x = copy_slices(old, x, p["key"])
        elif op is _VIEW:
            x = x.reshape(old._data.shape)
        else:
            x = apply(_PERMUTE, (x,), {"dims": _inverse_dims(p["dims"])})
    return x


def zero_grads(params, set_to_none=True):
    """Reset the ``.grad`` of every tensor in ``params`` (``Module.zero_grad`` and
    ``Optimizer.zero_grad``): to None, or with ``set_to_none=False`` to zeros in
    place, detached from any graph first and with the version counter bumped as
    by ``zero_()`` (PyTorch's ``zero_grad`` does the same)."""
    for p in params:
        g = p.grad
        if g is None:
            continue
        if set_to_none:
            p.grad = None
            continue
        if g.grad_fn is not None:
            g.detach_()
        else:
            g.requires_grad_(False)
        g._data[...] = 0
        bump(g, "zero_")
