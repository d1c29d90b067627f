"""Declared argument checks for the public ops (STYLE.md A12): one description per
op, one shared checker, PyTorch's exception types.

Every public op states its arguments once, as a ``Signature`` of typed
parameters::

    _check_sum = declare(Signature(
        "sum", TensorArg("input"), DimsArg("dim", default=None),
        BoolArg("keepdim", default=False)))

    def sum(input, dim=None, keepdim=False, *, dtype=None):
        input, dims, keepdim = _check_sum(input, dim, keepdim)

``declare`` compiles the signature into a checker at import time and records it
in ``SIGNATURES`` (keyed by op name), which the fuzzer (``tests/test_fuzz.py``)
reads to draw valid and invalid arguments: the declaration is the contract, and
the tests hold the op to it.  A new op is checked -- and fuzzed -- by declaring
its signature and adding its op-table row; nothing else.

The checker takes the op's arguments positionally, in declared order, and
returns them validated and normalised (dims as sorted non-negative tuples,
integer inputs of float math cast to float, operands promoted).  It raises
before any kernel runs and before anything is modified:

==================================  ==============================================
problem                             exception (PyTorch's type)
==================================  ==============================================
non-Tensor where a Tensor is due    TypeError
non-integer dim / index, bool dim   TypeError
dim out of range                    IndexError
repeated dim, not a permutation     RuntimeError
shapes that do not broadcast/match  RuntimeError
dtype the op has no kernel for      NotImplementedError (a RuntimeError subclass)
dtype that makes no sense           RuntimeError (``exc=`` per parameter)
integer argument out of its range   RuntimeError (``exc=`` per parameter)
==================================  ==============================================

Two shapes of signature sit on every hot path and are compiled into the
closures of ``_common.tensor_checker`` (one Tensor argument) and
``_common.binary_checker`` (two promoted operands): ``_common`` is compiled with
Cython, so those checks cost what the hand-written ones did.  Every other
signature runs the generic checker below (plain Python; a few hundred ns).
"""
import operator

import numpy as np

from tensorplay import _dtype
from tensorplay._ops._common import (_broadcast_error, _coerce, _scalar_tensor,
                                     binary_checker, broadcast_shape,
                                     describe_kinds, dtype_error, kind_of, normalize_dim,
                                     normalize_dims, not_tensor_error, promote,
                                     tensor_checker)
from tensorplay._tensor import Tensor

__all__ = ["TensorArg", "TensorListArg", "DimArg", "DimsArg", "PermArg", "BoolArg",
           "IntArg", "SizesArg", "IndexArg", "DtypeArg", "Signature", "declare", "SIGNATURES",
           "CHECKERS",
           "check_inplace_target"]

_REQUIRED = object()


class Param:
    """One declared argument: its name and default (``required`` when it has none)."""
    __slots__ = ("name", "default")

    def __init__(self, name, default=_REQUIRED):
        self.name = name
        self.default = default

    @property
    def required(self):
        """True when the parameter has no default."""
        return self.default is _REQUIRED

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"


class TensorArg(Param):
    """A Tensor argument.

    Args:
        kinds (str): dtype kinds accepted: ``"f"`` float32/float64, ``"i"``
            int32/int64, ``"b"`` bool.
        numbers (bool): a Python number is accepted too (promoted with the other
            operands, PyTorch's rules).
        to_float (bool): integer and bool tensors are cast to the default float
            dtype (float-valued math such as ``exp``).
        min_ndim (int): fewer dims raise RuntimeError.
        exc (type): the exception for a dtype outside ``kinds``.
        message (str): extra text for that error.
    """
    __slots__ = ("kinds", "numbers", "to_float", "min_ndim", "exc", "message")

    def __init__(self, name, kinds="fib", *, numbers=False, to_float=False, min_ndim=0,
                 exc=NotImplementedError, message=None, default=_REQUIRED):
        super().__init__(name, default)
        self.kinds, self.numbers, self.to_float = kinds, numbers, to_float
        self.min_ndim, self.exc, self.message = min_ndim, exc, message


class TensorListArg(Param):
    """A non-empty list or tuple of Tensors of dtype kinds ``kinds`` (``stack``)."""
    __slots__ = ("kinds",)

    def __init__(self, name, kinds="fib", default=_REQUIRED):
        super().__init__(name, default)
        self.kinds = kinds


class DimArg(Param):
    """One dim of the tensor argument ``of``: an int in ``[-n, n)`` with
    ``n = max(of.ndim + extra, 1)`` (``extra=1`` where a dim is inserted:
    ``unsqueeze``, ``stack``).  Normalised to ``[0, n)``."""
    __slots__ = ("of", "extra")

    def __init__(self, name, of="input", extra=0, default=_REQUIRED):
        super().__init__(name, default)
        self.of, self.extra = of, extra


class DimsArg(Param):
    """``None``, an int or a sequence of distinct ints, dims of ``of``; normalised to
    a sorted tuple (``None`` and ``()`` mean every dim)."""
    __slots__ = ("of",)

    def __init__(self, name, of="input", default=_REQUIRED):
        super().__init__(name, default)
        self.of = of


class PermArg(Param):
    """A permutation of ``range(of.ndim)`` (negative dims allowed); normalised."""
    __slots__ = ("of",)

    def __init__(self, name, of="input", default=_REQUIRED):
        super().__init__(name, default)
        self.of = of


class BoolArg(Param):
    """A bool (Python or numpy); anything else raises TypeError."""
    __slots__ = ()


class IntArg(Param):
    """An integer (not bool) in ``[lo, hi]`` (either bound may be None); outside it
    raises ``exc`` (RuntimeError by default)."""
    __slots__ = ("lo", "hi", "exc")

    def __init__(self, name, lo=None, hi=None, exc=RuntimeError, default=_REQUIRED):
        super().__init__(name, default)
        self.lo, self.hi, self.exc = lo, hi, exc


class SizesArg(Param):
    """A shape: a sequence of integers (the op checks the values against the input)."""
    __slots__ = ()


class IndexArg(Param):
    """A basic index (ints, slices, None, Ellipsis) into the tensor or shape ``of``,
    checked by ``check(key, shape)`` (``shape.check_index``: IndexError out of
    range, TypeError for unsupported index types, ValueError for a step <= 0)."""
    __slots__ = ("of", "check")

    def __init__(self, name, of="input", check=None, default=_REQUIRED):
        super().__init__(name, default)
        self.of, self.check = of, check


class DtypeArg(Param):
    """A tensorplay dtype (``None`` allowed when it is the default)."""
    __slots__ = ()


class Signature:
    """The declared arguments of one public op.

    Args:
        op (str): the op's name, as errors print it.
        *params (Param): the arguments in positional order.
        promote (tuple of str): Tensor arguments promoted to one dtype
            (PyTorch's rules; Python numbers allowed where declared).
        float_result (bool): the promoted dtype is at least the default float.
        result_kinds (str): dtype kinds the promoted dtype may have.
        result_exc (type): the exception when it has another.
        broadcast (tuple of str): Tensor arguments whose shapes must broadcast.
        same_shape (tuple of str): Tensor arguments of one shape.
        same_dtype (tuple of str): Tensor arguments of one dtype (no promotion).
        public (str): the public function's name in ``tensorplay._ops`` when it
            differs from ``op`` (``to`` is ``to_dtype``).
        inplace (str): the Tensor argument the op writes in place (``add_``):
            it must be writable, outside the graph, and able to hold the result
            (``check_inplace_target``).
        forward_checks_broadcast (bool): the primitive's forward raises the
            broadcast RuntimeError itself, before its kernel runs (the binary
            elementwise primitives), so the checker need not fetch the shapes.
    """

    def __init__(self, op, *params, promote=(), float_result=False, result_kinds="fib",
                 result_exc=NotImplementedError, broadcast=(), same_shape=(), same_dtype=(),
                 public=None, inplace=None, forward_checks_broadcast=False):
        self.op = op
        self.params = params
        self.names = tuple(p.name for p in params)
        for group in (promote, broadcast, same_shape, same_dtype):
            unknown = set(group) - set(self.names)
            if unknown:
                raise ValueError(f"Signature({op!r}): unknown arguments {sorted(unknown)}")
        self.promote, self.float_result = tuple(promote), float_result
        self.result_kinds, self.result_exc = result_kinds, result_exc
        self.broadcast, self.same_shape = tuple(broadcast), tuple(same_shape)
        self.same_dtype = tuple(same_dtype)
        self.public = public or op
        self.forward_checks_broadcast = forward_checks_broadcast
        if inplace is not None and inplace not in self.names:
            raise ValueError(f"Signature({op!r}): unknown in-place argument {inplace!r}")
        self.inplace = inplace

    def param(self, name):
        """The declared parameter called ``name``."""
        return self.params[self.names.index(name)]

    def tensors(self):
        """The TensorArg parameters."""
        return [p for p in self.params if isinstance(p, TensorArg)]

    def __repr__(self):
        return f"<Signature {self.op}({', '.join(self.names)})>"


SIGNATURES: dict = {}
CHECKERS: dict = {}     # op name -> its compiled checker (for ops declared here, e.g. nn's)


def declare(sig):
    """Compile ``sig`` into its checker, record both (``SIGNATURES``, ``CHECKERS``)
    and return the checker (``checker.signature`` is ``sig`` where it takes
    attributes).

    Raises:
        ValueError: an op declared twice.
    """
    if sig.op in SIGNATURES:
        raise ValueError(f"declare(): op {sig.op!r} is already declared")
    check = _compile(sig)
    SIGNATURES[sig.op] = sig
    CHECKERS[sig.op] = check
    try:
        check.signature = sig
    except AttributeError:          # a compiled closure may not take attributes
        pass
    return check


def _compile(sig):
    params = sig.params
    tensors = sig.tensors()
    # one Tensor argument and nothing else: the compiled single-tensor checker
    if len(params) == 1 and tensors and not tensors[0].numbers and not tensors[0].min_ndim:
        p = tensors[0]
        return tensor_checker(sig.op, p.name, p.kinds, p.to_float, p.exc, p.message)
    # two promoted, broadcast operands and nothing else: the compiled binary checker
    if (len(params) == 2 and len(tensors) == 2 and set(sig.promote) == set(sig.names)
            and set(sig.broadcast) == set(sig.names) and not sig.same_shape
            and not sig.same_dtype and tensors[0].kinds == tensors[1].kinds
            and tensors[0].exc is tensors[1].exc and not any(p.min_ndim for p in tensors)):
        a = tensors[0]
        return binary_checker(sig.op, sig.names, a.kinds, sig.result_kinds,
                              sig.float_result, a.exc, a.message,
                              not sig.forward_checks_broadcast)
    return _generic_checker(sig)


def _generic_checker(sig):
    """Generate one Python function for ``sig``: each parameter's common case is
    checked inline (``type(x) is Tensor``, an in-range int dim, ``dim=None``, a
    bool flag), and anything else goes to that parameter's full check in
    ``_step``, which normalises it or raises.  One call per op, not one per
    parameter: the generated source is what a careful hand-written check would be.
    """
    op = sig.op
    index = {n: i for i, n in enumerate(sig.names)}
    names = [f"a{i}" for i in range(len(sig.params))]
    env = {"_Tensor": Tensor, "_ALLDIMS": _ALLDIMS, "_ndim_of": _ndim_of, "_sig": sig,
           "_promote_group": _promote_group, "_check_broadcast": _check_broadcast,
           "_check_same": _check_same}
    body = []
    late = []
    for i, p in enumerate(sig.params):
        env[f"_s{i}"] = _step(op, p, index)
        (late if isinstance(p, _DEPENDENT) else body).extend(_emit(i, p, sig, index))
    vals = ", ".join(names)
    if sig.promote or sig.broadcast or sig.same_shape or sig.same_dtype:
        body.append(f"v = [{vals}]")
        if sig.promote:
            body.append(f"_promote_group(_sig, v, {[index[n] for n in sig.promote]})")
        if sig.broadcast:
            idx = [index[n] for n in sig.broadcast]
            body.append(f"_check_broadcast({op!r}, _sig.names, v, {idx})")
        for group, what in ((sig.same_shape, "shape"), (sig.same_dtype, "dtype")):
            if group:
                body.append(f"_check_same({op!r}, _sig.names, v, "
                            f"{[index[n] for n in group]}, {what!r})")
        body.append(f"{vals}, = v")
    body.extend(late)
    body.append(f"return ({vals},)")
    src = f"def check({vals}):\n" + "".join(f"    {line}\n" for line in body)
    exec(compile(src, f"<checker {op}>", "exec"), env)
    check = env["check"]
    check.__doc__ = f"Validate the arguments of {op}() (generated from its Signature)."
    check.source = src
    return check


_ALLDIMS = tuple(tuple(range(n)) for n in range(65))


def _emit(i, p, sig, index):
    """Source lines checking parameter ``i`` (variable ``a{i}``) of ``sig``."""
    v = f"a{i}"
    slow = f"{v} = _s{i}({v}, None)"
    if isinstance(p, TensorArg):
        # (a number, where ``numbers`` allows one, is not a Tensor: the full check)
        fast = [f"type({v}) is _Tensor"]
        if set(p.kinds) != {"f", "i", "b"} or p.to_float:
            ok = "f" if p.to_float else p.kinds + ("u" if "i" in p.kinds else "")
            fast.append(f"{v}._data.dtype.kind in {ok!r}")
        if p.min_ndim:
            fast.append(f"{v}._data.ndim >= {p.min_ndim}")
        return [f"if not ({' and '.join(fast)}):", f"    {slow}"]
    if isinstance(p, BoolArg):
        return [f"if {v} is not True and {v} is not False:", f"    {slow}"]
    if isinstance(p, IndexArg):
        return [f"{v} = _s{i}({v}, a{index[p.of]})"]
    if isinstance(p, (DimArg, DimsArg, PermArg)):
        j = index[p.of]
        ref = f"a{j}"
        of_list = isinstance(sig.params[j], TensorListArg)
        nd = f"_ndim_of({ref})" if of_list else f"{ref}._data.ndim"
        slow = f"{v} = _s{i}({v}, {ref})"
        if isinstance(p, DimArg):
            extra = f" + {p.extra}" if p.extra else ""
            return [f"n = {nd}{extra}", "if n == 0:", "    n = 1",
                    f"if type({v}) is int and -n <= {v} < n:",
                    f"    {v} = {v} + n if {v} < 0 else {v}",
                    "else:", f"    {slow}"]
        if isinstance(p, DimsArg):
            return [f"if {v} is None:", f"    {v} = _ALLDIMS[{nd}]", "else:", f"    {slow}"]
        return [slow]
    return [slow]


def _ndim_of(value):
    if isinstance(value, (list, tuple)):
        value = value[0]
    return value._data.ndim


def _step(op, p, index):
    """The full check of one parameter: ``f(value, ref) -> normalised value``, with
    ``ref`` the value of the tensor parameter a dim refers to (else None)."""
    name = p.name
    if isinstance(p, TensorArg):
        accept = set(p.kinds) | ({"u"} if "i" in p.kinds else set())

        def tensor(x, ref):
            if not isinstance(x, Tensor):
                if p.numbers and isinstance(x, (bool, int, float, np.bool_, np.integer,
                                                np.floating)):
                    if kind_of(x) not in p.kinds:
                        raise dtype_error(op, name, type(x).__name__, p.kinds, p.exc,
                                          p.message)
                    return x
                raise not_tensor_error(op, name, x, p.numbers)
            if x._data.dtype.kind not in accept:
                raise dtype_error(op, name, x.dtype, p.kinds, p.exc, p.message)
            if x._data.ndim < p.min_ndim:
                raise RuntimeError(f"{op}(): argument '{name}' must have at least "
                                   f"{p.min_ndim} dims, got a {x._data.ndim}-D tensor")
            if p.to_float and x._data.dtype.kind != "f":
                return x.to(_dtype.get_default_dtype())
            return x
        return tensor
    if isinstance(p, TensorListArg):
        def tensor_list(xs, ref):
            if isinstance(xs, Tensor) or not isinstance(xs, (list, tuple)):
                raise TypeError(f"{op}(): argument '{name}' must be a list or tuple of "
                                f"Tensors, not {type(xs).__name__}")
            if not xs:
                raise RuntimeError(f"{op}(): argument '{name}' must be a non-empty "
                                   f"sequence of tensors")
            for j, t in enumerate(xs):
                if not isinstance(t, Tensor):
                    raise TypeError(f"{op}(): expected Tensor as element {j} of argument "
                                    f"'{name}', but got {type(t).__name__}")
                if t._data.dtype.kind not in p.kinds:
                    raise dtype_error(op, f"{name}[{j}]", t.dtype, p.kinds)
            return list(xs)
        return tensor_list
    if isinstance(p, DimArg):

        def dim(d, ref):
            return normalize_dim(d, _ndim_of(ref) + p.extra, op, name)
        return dim
    if isinstance(p, DimsArg):

        def dims(d, ref):
            if d is not None and not isinstance(d, (list, tuple)) and \
                    not _is_int(d):
                raise TypeError(f"{op}(): argument '{name}' must be an int, a tuple of "
                                f"ints or None, not {type(d).__name__}")
            return normalize_dims(d, _ndim_of(ref), op, name)
        return dims
    if isinstance(p, PermArg):

        def perm(d, ref):
            if not isinstance(d, (list, tuple)):
                raise TypeError(f"{op}(): argument '{name}' must be a tuple of ints, not "
                                f"{type(d).__name__}")
            n = _ndim_of(ref)
            if len(d) != n:
                raise RuntimeError(f"{op}(): number of dims don't match: the input has {n} "
                                   f"dims, got {len(d)} ({list(d)})")
            out = tuple(normalize_dim(x, n, op, name) for x in d)
            if len(set(out)) != len(out):
                raise RuntimeError(f"{op}(): argument '{name}': repeated dim in {list(d)}")
            return out
        return perm
    if isinstance(p, BoolArg):
        def flag(b, ref):
            if not isinstance(b, (bool, np.bool_)):
                raise TypeError(f"{op}(): argument '{name}' must be bool, not "
                                f"{type(b).__name__}")
            return bool(b)
        return flag
    if isinstance(p, IntArg):
        def integer(v, ref):
            if not _is_int(v):
                raise TypeError(f"{op}(): argument '{name}' must be int, not "
                                f"{type(v).__name__}")
            v = operator.index(v)
            if (p.lo is not None and v < p.lo) or (p.hi is not None and v > p.hi):
                lo = "-inf" if p.lo is None else p.lo
                hi = "inf" if p.hi is None else p.hi
                raise p.exc(f"{op}(): argument '{name}' must be in [{lo}, {hi}], got {v}")
            return v
        return integer
    if isinstance(p, SizesArg):
        def sizes(s, ref):
            items = s if isinstance(s, (list, tuple)) else (s,)
            if not all(_is_int(x) for x in items):
                raise TypeError(f"{op}(): argument '{name}' must be a sequence of ints, "
                                f"got {s!r}")
            return tuple(operator.index(x) for x in items)
        return sizes
    if isinstance(p, IndexArg):
        def key(k, ref):
            shape = ref._data.shape if isinstance(ref, Tensor) else tuple(ref)
            return p.check(k, shape, op)
        return key
    if isinstance(p, DtypeArg):
        def dtype(d, ref):
            if d is None and not p.required and p.default is None:
                return d
            if not isinstance(d, _dtype.dtype):
                raise TypeError(f"{op}(): argument '{name}' must be a tensorplay dtype, "
                                f"not {type(d).__name__}")
            return d
        return dtype
    raise TypeError(f"declare({op!r}): unknown parameter type {type(p).__name__}")


_DEPENDENT = (DimArg, DimsArg, PermArg, IndexArg)


def _is_int(v):
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (int, np.integer)):
        return True
    try:
        operator.index(v)
    except TypeError:
        return False
    return not isinstance(v, Tensor) or v._data.dtype.kind in "iu"


def _promote_group(sig, vals, idx):
    """Promote the operands at ``idx`` to one dtype, in place in ``vals``."""
    op = sig.op
    names = [sig.names[i] for i in idx]
    fr = sig.float_result
    if len(idx) == 2:
        vals[idx[0]], vals[idx[1]] = promote(vals[idx[0]], vals[idx[1]], op, fr,
                                             (names[0], names[1]))
    else:
        # one result dtype over all operands at once: pairwise promotion is not
        # associative under PyTorch's rule that a 0-d tensor does not upcast a
        # dimensioned one (f32 (n,), f64 (), f64 (n,) is float64 for all three)
        ops = [_coerce(vals[i], op, n) for i, n in zip(idx, names)]
        d = _dtype.result_type(*ops)
        if fr and not d.is_floating_point:
            d = _dtype.get_default_dtype()
        for i, x in zip(idx, ops):
            if isinstance(x, Tensor):
                vals[i] = x if x._data.dtype == d.numpy else x.to(d)
            else:
                vals[i] = _scalar_tensor(x, d, op)
    if kind_of(vals[idx[0]]) not in sig.result_kinds:
        raise sig.result_exc(
            f"{op}(): not implemented for {vals[idx[0]].dtype} operands "
            f"({', '.join(repr(n) for n in names)} promote to {vals[idx[0]].dtype}); "
            f"expected {describe_kinds(sig.result_kinds)} tensors")


def _check_broadcast(op, names, vals, idx):
    shapes = [vals[i]._data.shape if isinstance(vals[i], Tensor) else () for i in idx]
    shape = shapes[0]
    for j, s in enumerate(shapes[1:], 1):
        try:
            shape = broadcast_shape(shape, s, op)
        except RuntimeError:
            got = ", ".join(f"{names[i]} {list(sh)}" for i, sh in zip(idx, shapes))
            if len(idx) == 2:
                raise _broadcast_error(shapes[0], s, op,
                                       (f"'{names[idx[0]]}'", f"'{names[idx[1]]}'")) from None
            raise RuntimeError(f"{op}(): the shapes of the arguments do not broadcast: "
                               f"{got}") from None


def _check_same(op, names, vals, idx, what):
    """RuntimeError unless the tensors at ``idx`` share their ``what`` (shape or dtype)."""
    def key(t):
        return list(t._data.shape) if what == "shape" else t.dtype
    first = key(vals[idx[0]])
    for i in idx[1:]:
        if key(vals[i]) != first:
            raise RuntimeError(f"{op}(): expected '{names[idx[0]]}' and '{names[i]}' to have "
                               f"the same {what}, got {first} and {key(vals[i])}")



# ---------------------------------------------------------------- in-place targets
def check_inplace_target(op, target, result_shape, result_dtype):
    """The in-place rule: ``target`` can take a result of ``result_shape`` and
    ``result_dtype`` (a numpy dtype) without anything being written first.

    Raises:
        RuntimeError: a leaf that requires grad (with grad mode on), a tensor in
            the graph, a read-only view (``expand``), a result whose broadcast
            shape is not the target's, or a result dtype that cannot be cast
            into the target's kind (float into an integer tensor), as PyTorch.
    """
    from tensorplay.autograd.grad_mode import STATE
    if STATE.grad_enabled and target._requires_grad:
        raise RuntimeError(f"{op}(): a leaf Variable that requires grad is being used in "
                           f"an in-place operation" if target.grad_fn is None else
                           f"{op}(): in-place operations on tensors that are part of the "
                           f"autograd graph are not supported")
    if not target._data.flags.writeable:
        raise RuntimeError(f"{op}(): the tensor is a read-only view (e.g. made by "
                           f"expand()); clone() it before writing to it")
    if tuple(result_shape) != target._data.shape:
        raise RuntimeError(f"{op}(): output with shape {list(target._data.shape)} doesn't "
                           f"match the broadcast shape {list(result_shape)}")
    if not np.can_cast(result_dtype, target._data.dtype, casting="same_kind"):
        raise RuntimeError(f"{op}(): result type {np.dtype(result_dtype)} can't be cast to "
                           f"the desired output type {target.dtype}")


# Tensor's in-place methods (tensorplay/_tensor.py, which runs the same rule in
# _write): declared so that the fuzzer holds them to it.
for _op, _kinds in (("add_", "fib"), ("sub_", "fi"), ("mul_", "fib"), ("div_", "fib")):
    declare(Signature(_op, TensorArg("input", _kinds), TensorArg("other", _kinds, numbers=True),
                      broadcast=("input", "other"), inplace="input", public=f"Tensor.{_op}"))
del _op, _kinds


def renamed_error(exc, called, shown):
    """``exc`` raised by the op ``called`` on behalf of the public op ``shown``
    (``add`` for ``add_``, ``log_softmax`` for ``softmax``), as the same exception
    type with the message naming ``shown``; None when the message does not start
    with ``called()`` (then the caller re-raises ``exc`` as it is)."""
    text, base = str(exc), called + "()"
    if not text.startswith(base):
        return None
    return type(exc)(shown + "()" + text[len(base):])
