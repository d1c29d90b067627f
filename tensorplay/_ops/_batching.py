"""Batched tensors and batching rules: the machinery under ``tensorplay.func.vmap``.

Design (docs/DECISIONS.md, "vmap and batched gradients"):

* A **batched tensor** is an ordinary ``Tensor`` whose storage ``_data`` is a
  ``BatchedArray``: an object with the tensor's *logical* shape, dtype, size,
  strides and flags and no values (not an ndarray, no buffer), which holds the
  *physical* value -- a Tensor with the batch dimension at 0 -- and the vmap
  level.  Every piece of code that reads metadata (``shape``, ``ndim``,
  ``_data.shape``, ``size()``, dtype, the engine's shape checks, ``sum_to_shape``,
  argument validation) therefore sees the logical tensor for free, and code that
  reads *values* from the storage (``.item()``, ``bool(x)``, ``.numpy()``,
  ``np.asarray``, ndarray methods, a Cython memoryview) raises VmapDataError
  rather than computing on one example.  Numpy ufunc calls on batched storages
  (the comparisons) are computed batched (``BatchedArray.__array_ufunc__``).
* ``registry.apply`` compares each input's storage type with ``BatchedArray``
  (pointer comparisons on data it reads anyway); for a batched input,
  ``batched_apply`` finds the highest level among the inputs, unwraps the inputs of that level to
  their physical values and calls the primitive's batching rule
  (``OpDef.batch``, declared with ``defop(..., batch=...)`` beside the primitive's
  other rules), then wraps the physical result.  Rules are written in tensorplay
  primitives on the physical values, which may themselves be batched at an outer
  level (nested vmap), and which record the ordinary reverse graph and tangents
  when *they* require grad (``grad`` of a function that calls vmap).
* The logical result is recorded in the graph like any other op result (a Node
  with the logical inputs), so ``grad`` *inside* vmap (``vmap(grad(f))``) runs the
  VJP rules on logical tensors, which dispatch to the batching rules again: each
  example gets its own gradient, also for unbatched parameters.
* A primitive without a rule falls back to a loop: slice every batched input,
  apply the primitive per example and stack (``fallback_rule``).  Public
  functions that compute in numpy outside the registry (sort, argmax, ...) are
  decorated with ``loop_under_vmap``, which does the same one level up.

Rule contract: ``rule(op, args, batched, size, params) -> Tensor`` where
``args[i]`` is the physical value (batch dim 0, ``size`` entries) when
``batched[i]`` and the unbatched input otherwise; the result is physical (batch
dim 0).  At least one input is batched.
"""
import functools
import itertools

import numpy as np

from tensorplay._tensor import Tensor
from tensorplay.autograd.grad_mode import STATE
from tensorplay._ops import registry as _reg

__all__ = ["BatchedArray", "make_batched", "batched_value", "batched_apply",
           "elementwise_rule", "dims_rule", "leading_rule", "reshape_rule", "expand_rule",
           "permute_rule", "getitem_rule", "getitem_backward_rule", "join_rule",
           "matmul_rule", "diagonal_rule", "diagonal_backward_rule", "gather_backward_rule",
           "fallback_rule", "loop_under_vmap", "VmapDataError"]

_wrap = Tensor._wrap


class VmapDataError(RuntimeError):
    """Raised when code reads the values of a batched tensor directly (data-dependent
    Python control flow, ``.item()``, ``.numpy()``, an op implemented in numpy)."""


def _data_error(what):
    return VmapDataError(
        f"vmap: {what} on a batched tensor is not supported: it needs the values of "
        f"one example (data-dependent Python control flow, .item(), bool(), .tolist(), "
        f".numpy(), or an op that tensorplay implements directly in numpy rather than as "
        f"a registered primitive). Write the computation with tensor ops (e.g. "
        f"tensorplay.where instead of an if on a tensor), or move it outside vmap.")


class _Flags:
    __slots__ = ()
    writeable = False          # in-place writes into a batched tensor are refused
    c_contiguous = True        # logically contiguous (no copy needed by contiguous())
    f_contiguous = False
    owndata = False


_FLAGS = _Flags()


class BatchedArray:
    """The storage of a batched tensor: the logical shape and dtype, and no values.

    Not an ndarray (nor a buffer), so nothing can read an example's values by
    accident: numpy conversions (``np.asarray``, ufuncs, array functions, a Cython
    memoryview) and ndarray methods raise ``VmapDataError``, while the metadata
    (``shape``, ``ndim``, ``size``, ``dtype``, ``flags``, ``strides``) is the
    logical tensor's.

    Attributes:
        _bt_phys (Tensor): the physical value, batch dimension at 0.
        _bt_level (int): the vmap level (larger = more deeply nested).
    """
    __slots__ = ("shape", "dtype", "ndim", "size", "_bt_phys", "_bt_level")
    flags = _FLAGS

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def strides(self):
        st, acc = [], self.dtype.itemsize
        for s in reversed(self.shape):
            st.append(acc)
            acc *= max(s, 1)
        return tuple(reversed(st))

    # The ndarray methods Tensor's value readers call, named after what the user
    # called (``Tensor.item`` and ``bool()`` reshape to 0-d, ``numpy()`` views).
    def reshape(self, *args, **kwargs):
        raise _data_error("reading a value (Tensor.item(), bool(), float(), int())")

    def tolist(self):
        raise _data_error("Tensor.tolist()")

    def view(self, *args, **kwargs):
        raise _data_error("Tensor.numpy()")

    def __getattr__(self, name):
        raise _data_error(f"ndarray.{name}")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # a plain elementwise call (comparisons on ``_data``): computed on the
        # physical values, the result is the storage of a batched tensor
        if method != "__call__" or kwargs:
            raise _data_error(f"numpy.{ufunc.__name__}.{method}")
        return _batched_ufunc(ufunc, inputs)

    def __array_function__(self, func, types, args, kwargs):
        raise _data_error(f"numpy.{func.__name__}")

    def _refuse(name):
        def method(self, *args, **kwargs):
            raise _data_error(name)
        method.__name__ = name
        return method

    for _name in ("__array__", "__getitem__", "__setitem__", "__bool__", "__float__",
                  "__int__", "__index__", "__len__", "__iter__", "__reduce__",
                  "__reduce_ex__", "__deepcopy__", "__copy__", "__buffer__", "__format__"):
        locals()[_name] = _refuse(_name)
    del _name, _refuse

    def __repr__(self):
        return f"<BatchedArray level {self._bt_level} shape {self.shape}>"


def make_batched(phys, level):
    """The logical tensor whose physical value is ``phys`` (batch dim 0) at ``level``."""
    d = phys._data
    arr = _new_storage(BatchedArray)
    shape = arr.shape = d.shape[1:]
    arr.dtype = d.dtype
    arr.ndim = len(shape)
    n = 1
    for s in shape:
        n *= s
    arr.size = n
    arr._bt_phys = phys
    arr._bt_level = level
    return _wrap(arr)


_new_storage = object.__new__


def _batched_ufunc(ufunc, inputs):
    """``ufunc(*inputs)`` where some inputs are batched storages: the physical values
    padded as in ``elementwise_rule``; the result's storage, batched."""
    level = 0
    for x in inputs:
        if type(x) is BatchedArray and x._bt_level > level:
            level = x._bt_level
    rank = 0
    for x in inputs:
        n = getattr(x, "ndim", 0)
        if n > rank:
            rank = n
    arrs = []
    for x in inputs:
        if type(x) is BatchedArray and x._bt_level == level:
            arrs.append(_pad(x._bt_phys, rank)._data)
        else:
            arrs.append(x)
    r = ufunc(*arrs)
    if isinstance(r, np.generic):
        r = np.asarray(r)
    return make_batched(_wrap(r), level)._data


_LEVELS = itertools.count(1)        # inner vmaps get larger levels than outer ones


def new_level():
    """A fresh vmap level, larger than every level in use."""
    return next(_LEVELS)


def batched_value(t):
    """``(physical, level)`` of a batched tensor, or ``(None, 0)``."""
    d = t._data
    if type(d) is BatchedArray:
        return d._bt_phys, d._bt_level
    return None, 0


def level_of(t):
    d = t._data
    return d._bt_level if type(d) is BatchedArray else 0


# ---------------------------------------------------------------- dispatch
def batched_apply(op, inputs, params):
    """``registry.apply`` under vmap: ``None`` when no input is batched (the plain
    path runs), else the logical result of the primitive's batching rule."""
    level = 0
    for t in inputs:
        d = t._data
        if type(d) is BatchedArray and d._bt_level > level:
            level = d._bt_level
    if not level:
        return None
    args = []
    flags = []
    size = 0
    for t in inputs:
        d = t._data
        if type(d) is BatchedArray and d._bt_level == level:
            p = d._bt_phys
            args.append(p)
            flags.append(True)
            size = p._data.shape[0]
        else:
            args.append(t)
            flags.append(False)
    rule = op.batch if op.batch is not None else fallback_rule
    phys = rule(op, args, flags, size, params)
    out = make_batched(phys, level)
    if op.view:
        out._version = inputs[0]._version
    if out._data.dtype.kind != "f":
        return out
    state = STATE
    needs_node = False
    for t in inputs:
        if t._requires_grad:
            needs_node = True
            break
    node = None
    if needs_node and state.grad_enabled:
        node = _reg.Node(op, inputs, out, params)
    if state.fw_level is not None and not state.fw_rule:
        _reg._propagate_tangent(op, inputs, out, params, state)
        if node is not None and op.save_out and out._tangent is not None:
            node.out_tangent = (out._tangent, out._tangent_level)
    return out


# ---------------------------------------------------------------- helpers on physical values
def _prim(name):
    return _reg.REGISTRY[name]


def _apply(name, args, params):
    return _reg.apply(_reg.REGISTRY[name], tuple(args), params)


def _lshape(a, batched):
    """The logical shape of argument ``a`` (its physical shape minus the batch dim)."""
    s = a._data.shape
    return s[1:] if batched else s


def _pad(a, rank):
    """Physical ``a`` (batch dim 0) with size-1 dims after the batch dim up to
    logical rank ``rank`` (so that it broadcasts against unbatched operands)."""
    s = a._data.shape
    if len(s) - 1 >= rank:
        return a
    return _apply("view", (a,), {"shape": s[:1] + (1,) * (rank - len(s) + 1) + s[1:]})


def _materialize(a, batched, size):
    """A physical value with the batch dim for every argument: an unbatched one is
    expanded (a view) to ``size`` copies."""
    if batched:
        return a
    s = a._data.shape
    a = _apply("view", (a,), {"shape": (1,) + s})
    return _apply("expand", (a,), {"shape": (size,) + s})


def _shift(d):
    """A logical dim (or tuple of dims) to the physical one; negative dims count from
    the end and need no shift."""
    if d is None:
        return None
    if isinstance(d, (tuple, list)):
        return type(d)(_shift(x) for x in d)
    return d + 1 if d >= 0 else d


# ---------------------------------------------------------------- rule makers
def elementwise_rule(op, args, batched, size, params):
    """n-ary elementwise with broadcasting: batched operands are padded to the logical
    result rank after the batch dim; unbatched operands broadcast as they are."""
    rank = 0
    for a, b in zip(args, batched):
        n = a._data.ndim - (1 if b else 0)
        if n > rank:
            rank = n
    new = [_pad(a, rank) if b else a for a, b in zip(args, batched)]
    return _reg.apply(op, tuple(new), params)


def leading_rule(op, args, batched, size, params):
    """Ops that act on trailing dims and map over any leading ones (linear algebra
    on (..., m, n), tril/triu, clone, casts): the batch dim is one more leading dim.
    Every tensor argument is given the batch dim."""
    new = [_materialize(a, b, size) for a, b in zip(args, batched)]
    return _reg.apply(op, tuple(new), params)


def dims_rule(*names):
    """A rule for ops whose params ``names`` are dims (ints, tuples, None for all):
    every tensor argument gets the batch dim and the dims shift by one.  ``dims=None``
    (all dims) becomes every dim but the batch dim; ``dim=None`` (a flattening op)
    falls back to the loop."""
    def rule(op, args, batched, size, params):
        p = dict(params)
        for n in names:
            if n in p and p[n] is None and n != "dims":
                return fallback_rule(op, args, batched, size, params)
        new = [_materialize(a, b, size) for a, b in zip(args, batched)]
        ndim = new[0]._data.ndim - 1
        if ndim == 0 and any(n != "dims" for n in names):
            # a 0-d example takes dim 0 or -1 as its only dim (reductions normalize
            # the dims of a 0-d input to (), which shifts to () as it should)
            return fallback_rule(op, args, batched, size, params)
        for n in names:
            if n in p:
                v = p[n]
                p[n] = tuple(range(1, ndim + 1)) if v is None else _shift(v)
        return _reg.apply(op, tuple(new), p)
    rule.__name__ = f"dims_rule{names}"
    return rule


def reshape_rule(op, args, batched, size, params):
    """reshape/view: the batch size in front of the target shape."""
    (a,) = args
    p = dict(params)
    p["shape"] = (size,) + tuple(params["shape"])
    return _reg.apply(op, (a,), p)


def expand_rule(op, args, batched, size, params):
    """expand: pad the input to the target rank, then expand behind the batch dim."""
    shape = tuple(params["shape"])
    a = _pad(args[0], len(shape))
    p = dict(params)
    p["shape"] = (size,) + shape
    return _reg.apply(op, (a,), p)


def permute_rule(op, args, batched, size, params):
    p = dict(params)
    p["dims"] = (0,) + tuple(d + 1 for d in params["dims"])
    return _reg.apply(op, tuple(args), p)


def getitem_rule(op, args, batched, size, params):
    """Basic indexing: a full slice over the batch dim in front of the key."""
    p = dict(params)
    p["key"] = (slice(None),) + tuple(params["key"])
    return _reg.apply(op, tuple(args), p)


def getitem_backward_rule(op, args, batched, size, params):
    p = dict(params)
    p["key"] = (slice(None),) + tuple(params["key"])
    p["shape"] = (size,) + tuple(params["shape"])
    return _reg.apply(op, tuple(args), p)


def join_rule(op, args, batched, size, params):
    """stack/cat: every input gets the batch dim; ``dim`` shifts."""
    new = [_materialize(a, b, size) for a, b in zip(args, batched)]
    p = dict(params)
    p["dim"] = _shift(params["dim"])
    return _reg.apply(op, tuple(new), p)


def matmul_rule(op, args, batched, size, params):
    """matmul: vectors become matrices (and the extra dim is dropped again); the
    batched operands are padded to the logical broadcast rank, so numpy's matmul
    broadcasting over leading dims does the rest."""
    (a, b), (ba, bb) = args, batched
    la, lb = _lshape(a, ba), _lshape(b, bb)
    drop = []
    if len(la) == 1:
        a = _unsq(a, -2)
        la = (1,) + la
        drop.append(-2)
    if len(lb) == 1:
        b = _unsq(b, -1)
        lb = lb + (1,)
        drop.append(-1)
    rank = max(len(la), len(lb))
    if ba:
        a = _pad(a, rank)
    if bb:
        b = _pad(b, rank)
    out = _reg.apply(op, (a, b), params)
    if drop:
        s = out._data.shape
        if drop == [-2, -1]:
            s = s[:-2]
        elif drop == [-2]:
            s = s[:-2] + s[-1:]
        else:
            s = s[:-1]
        out = _apply("view", (out,), {"shape": s})
    return out


def _unsq(a, dim):
    s = a._data.shape
    d = dim % (len(s) + 1)
    return _apply("view", (a,), {"shape": s[:d] + (1,) + s[d:]})


def diagonal_rule(op, args, batched, size, params):
    p = dict(params)
    p["dim1"], p["dim2"] = _shift(params["dim1"]), _shift(params["dim2"])
    return _reg.apply(op, tuple(args), p)


def diagonal_backward_rule(op, args, batched, size, params):
    p = dict(params)
    p["dim1"], p["dim2"] = _shift(params["dim1"]), _shift(params["dim2"])
    p["shape"] = (size,) + tuple(params["shape"])
    return _reg.apply(op, tuple(args), p)


def gather_backward_rule(op, args, batched, size, params):
    if not params["shape"]:     # a 0-d example
        return fallback_rule(op, args, batched, size, params)
    new = [_materialize(a, b, size) for a, b in zip(args, batched)]
    p = dict(params)
    p["dim"] = _shift(params["dim"])
    p["shape"] = (size,) + tuple(params["shape"])
    return _reg.apply(op, tuple(new), p)


def fallback_rule(op, args, batched, size, params):
    """No batching rule: apply the primitive to each example and stack the results
    (correct for any primitive, one primitive call per example)."""
    if size == 0:
        raise RuntimeError(f"vmap: primitive {op.name!r} has no batching rule, and its "
                           f"per-example fallback needs at least one example (batch size 0)")
    getitem = _prim("getitem")
    outs = []
    for i in range(size):
        sl = tuple(_reg.apply(getitem, (a,), {"key": (i, Ellipsis)}) if b else a
                   for a, b in zip(args, batched))
        outs.append(_reg.apply(op, sl, params))
    return _reg.apply(_prim("stack"), tuple(outs), {"dim": 0})


FALLBACK = fallback_rule


# ---------------------------------------------------------------- public functions outside apply
def _arg_level(args, kwargs):
    level = 0
    for group in (args, kwargs.values()):
        for x in group:
            if isinstance(x, (list, tuple)):
                for y in x:
                    if isinstance(y, Tensor) and level_of(y) > level:
                        level = level_of(y)
            elif isinstance(x, Tensor) and level_of(x) > level:
                level = level_of(x)
    return level


def loop_under_vmap(fn):
    """Decorate a public function that computes in numpy outside the registry
    (sorting, arg-extrema, ...): under vmap, with a batched argument, it runs
    once per example on the example's slices and the results are stacked into
    batched tensors.  Costs one flag check when vmap is not active.

    The loop records the reverse graph on the physical values (``grad`` of a
    function that calls vmap works); ``grad`` *inside* vmap cannot see through it,
    so a batched argument that requires grad there raises VmapDataError."""
    def call(*args, **kwargs):
        if STATE.vmap_depth:
            level = _arg_level(args, kwargs)
            if level:
                return _loop_call(fn, level, args, kwargs)
        return fn(*args, **kwargs)
    functools.update_wrapper(call, fn)
    return call


def _loop_call(fn, level, args, kwargs):
    size = None
    name = getattr(fn, "__name__", "op")

    def at(x, i):
        nonlocal size
        if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
            return type(x)(at(y, i) for y in x)
        if isinstance(x, Tensor):
            d = x._data
            if type(d) is BatchedArray and d._bt_level == level:
                if x._requires_grad and STATE.grad_enabled:
                    raise VmapDataError(
                        f"vmap: {name}() runs once per example under vmap (it computes "
                        f"outside the registered primitives), and gradients inside vmap "
                        f"cannot flow through that loop; compute it outside vmap")
                p = d._bt_phys
                size = p._data.shape[0]
                return _reg.apply(_prim("getitem"), (p,), {"key": (i, Ellipsis)})
        return x
    at_args = [at(a, 0) for a in args]      # finds the batch size (and checks)
    results = [fn(*at_args, **{k: at(v, 0) for k, v in kwargs.items()})]
    for i in range(1, size):
        results.append(fn(*[at(a, i) for a in args], **{k: at(v, i) for k, v in kwargs.items()}))
    return _combine(results, level, name)


def _combine(results, level, name):
    r0 = results[0]
    if isinstance(r0, Tensor):
        return make_batched(_reg.apply(_prim("stack"), tuple(results), {"dim": 0}), level)
    if isinstance(r0, tuple):
        parts = [_combine([r[j] for r in results], level, name) for j in range(len(r0))]
        return type(r0)(*parts) if hasattr(r0, "_fields") else tuple(parts)
    raise VmapDataError(f"vmap: {name}() returns a {type(r0).__name__} per example, which "
                        f"cannot be batched (it depends on the values of each example)")


def _bind():
    import sys
    from tensorplay import _tensor
    _tensor._BatchedArray = BatchedArray
    _tensor._batching = sys.modules[__name__]
    _reg._BATCHED = BatchedArray


_bind()
