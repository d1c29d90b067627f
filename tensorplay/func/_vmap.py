"""``tensorplay.func.vmap``: vectorizing map over a batch dimension.

The machinery (batched tensors, ``registry.apply``'s dispatch to batching rules,
the rule makers) is in ``tensorplay/_ops/_batching.py``; this module is the public
transform: argument handling (pytrees of inputs, ``in_dims``/``out_dims``),
levels for nested vmap, ``chunk_size`` and ``randomness``.
"""
import functools

from tensorplay._ops._batching import batched_value, make_batched, new_level
from tensorplay._tensor import Tensor
from tensorplay.autograd.grad_mode import STATE

__all__ = ["vmap"]

_RANDOMNESS = []                    # the randomness mode of each active vmap
_MODES = ("error", "different", "same")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Vectorize ``func`` over a dimension of its inputs (``torch.func.vmap``).

    ``vmap(func)(*args)`` returns what ``stack([func(*args_i) for i ...], out_dims)``
    would, where ``args_i`` takes example ``i`` along each input's ``in_dims``, but
    calls ``func`` once, on batched tensors: every primitive runs its batching rule
    (registered beside its other rules), so the batch is computed in one pass.
    Inside ``func`` tensors look unbatched (``x.shape`` is an example's shape).
    vmap nests (``vmap(vmap(f))``) and composes with ``grad``/``vjp``/``jvp`` and
    ``autograd.grad`` in either order (``vmap(grad(f))`` gives per-example
    gradients).

    Args:
        func (callable): takes tensors (or pytrees of them: tuples, lists and dicts
            nest) and non-tensor arguments; returns a Tensor or a pytree of Tensors.
        in_dims (int, None, or tuple): the batch dim of each positional argument;
            an int or None applies to every tensor of the argument; a tuple has one
            entry per positional argument, each an int, None (not batched) or a
            nested structure matching that argument.  Negative dims count from the
            end.  Keyword arguments are never batched.
        out_dims (int, None or tuple): where the batch dim goes in each output
            (a tuple: one entry per output).  ``None`` for an output that does not
            depend on the batch.
        randomness (str): ``"error"`` (default): tensorplay's random functions raise
            inside vmap; ``"same"`` lets them run with one draw shared by every
            example; ``"different"`` (PyTorch's per-example draws) raises
            NotImplementedError at the first random op, since tensorplay cannot draw
            per example yet: sample outside vmap and pass the samples in.  A
            sampler given a batched tensor (``bernoulli(p)`` of a batched ``p``)
            raises RuntimeError.
        chunk_size (int, optional): evaluate at most this many examples at a time
            (lower peak memory); None or a size >= the batch evaluates all at once.

    Returns:
        callable: the vectorized function; its outputs have the batch dim at
        ``out_dims`` (an output that does not depend on the batch is expanded).

    Raises:
        ValueError (as PyTorch): ``in_dims`` not matching the arguments' structure,
            an in_dim on a non-tensor or out of range, no batched input, mapped
            dims of different sizes, an output that is not a Tensor, ``out_dims``
            not matching the outputs, a batched output with out_dim None, a bad
            ``chunk_size``.
        IndexError: an out_dim out of range.
        RuntimeError: a bad ``randomness`` (as PyTorch); data-dependent control
            flow on a batched tensor inside ``func`` (``.item()``, ``bool(x)``,
            ``.numpy()``, an op tensorplay runs in numpy directly); a random
            function under ``randomness="error"``; an in-place op on a batched
            tensor.

    Example:
        >>> x = tensorplay.randn(8, 3)
        >>> w = tensorplay.randn(3)
        >>> vmap(lambda xi: (xi * w).sum())(x).shape      # one dot product per row
        tensorplay.Size([8])
    """
    if randomness not in _MODES:
        raise RuntimeError(f"vmap(): only allowed values for randomness are 'error', "
                         f"'different', or 'same'. Got {randomness!r}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or
                                   not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap(): chunk_size should be None or greater than 0. "
                         f"(got {chunk_size!r})")
    if not callable(func):
        raise TypeError(f"vmap(): func must be callable, got {type(func).__name__}")

    @functools.wraps(func)
    def vectorized(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)
    return vectorized


# ---------------------------------------------------------------- pytrees
def _flatten(tree):
    """``(leaves, spec)`` for nested tuples, lists and dicts (anything else is a leaf)."""
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for x in tree:
            lv, sp = _flatten(x)
            leaves.extend(lv)
            specs.append(sp)
        kind = type(tree) if not hasattr(tree, "_fields") else type(tree)
        return leaves, (kind, None, specs)
    if isinstance(tree, dict):
        keys = list(tree)
        leaves, specs = [], []
        for k in keys:
            lv, sp = _flatten(tree[k])
            leaves.extend(lv)
            specs.append(sp)
        return leaves, (dict, keys, specs)
    return [tree], None


def _unflatten(leaves, spec):
    it = iter(leaves)

    def build(sp):
        if sp is None:
            return next(it)
        kind, keys, specs = sp
        parts = [build(s) for s in specs]
        if kind is dict:
            return dict(zip(keys, parts))
        if hasattr(kind, "_fields"):
            return kind(*parts)
        return kind(parts)
    return build(spec)


def _describe(spec):
    if spec is None:
        return "*"
    kind, keys, specs = spec
    inner = ", ".join(_describe(s) if keys is None else f"{k!r}: {_describe(s)}"
                      for k, s in zip(keys or [None] * len(specs), specs))
    return ("{" + inner + "}") if kind is dict else ("[" + inner + "]") if kind is list \
        else ("(" + inner + ("," if len(specs) == 1 else "") + ")")


def _broadcast_dims(dims, tree, what, fname, args_desc):
    """One dim (int or None) per leaf of ``tree``; ``dims`` is a prefix of ``tree``'s
    structure whose leaves are ints or None."""
    out = []

    def walk(d, t):
        if d is None or (isinstance(d, int) and not isinstance(d, bool)):
            out.extend([d] * len(_flatten(t)[0]))
            return
        if isinstance(d, (tuple, list)) and isinstance(t, (tuple, list)) and len(d) == len(t):
            for di, ti in zip(d, t):
                walk(di, ti)
            return
        if isinstance(d, dict) and isinstance(t, dict) and set(d) == set(t):
            for k in t:
                walk(d[k], t[k])
            return
        if not isinstance(d, (tuple, list, dict)):
            raise ValueError(f"vmap({fname}, {what}={dims!r}, ...)({args_desc}): expected "
                             f"`{what}` to be int or a (potentially nested) tuple matching "
                             f"the structure of inputs, got: {type(d)}.")
        raise ValueError(f"vmap({fname}, {what}={dims!r}, ...)({args_desc}): {what} is "
                         f"not compatible with the structure of `"
                         f"{'inputs' if what == 'in_dims' else 'outputs'}`. {what} has "
                         f"structure {_describe(_flatten(d)[1])} but "
                         f"{'inputs' if what == 'in_dims' else 'outputs'} has structure "
                         f"{_describe(_flatten(t)[1])}.")
    walk(dims, tree)
    return out


# ---------------------------------------------------------------- the call
def _fname(func):
    return getattr(func, "__name__", type(func).__name__)


def _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs):
    fname = _fname(func)
    desc = "<inputs>"
    if isinstance(in_dims, (tuple, list)) and not isinstance(in_dims, tuple):
        in_dims = tuple(in_dims)
    if not (in_dims is None or isinstance(in_dims, (int, tuple))) or isinstance(in_dims, bool):
        raise ValueError(f"vmap({fname}, in_dims={in_dims!r}, ...)({desc}): expected "
                         f"`in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if isinstance(in_dims, tuple) and len(in_dims) != len(args):
        raise ValueError(f"vmap({fname}, in_dims={in_dims!r}, ...)({desc}): in_dims is not "
                         f"compatible with the structure of `inputs`. in_dims has structure "
                         f"{_describe(_flatten(in_dims)[1])} but inputs has structure "
                         f"{_describe(_flatten(tuple(args))[1])}.")
    leaves, spec = _flatten(tuple(args))
    dims = _broadcast_dims(in_dims, tuple(args), "in_dims", fname, desc)
    size = None
    sizes = []
    norm = []
    for x, d in zip(leaves, dims):
        if d is None:
            norm.append(None)
            continue
        if not isinstance(x, Tensor):
            raise ValueError(f"vmap({fname}, in_dims={in_dims!r}, ...)({desc}): Got "
                             f"in_dim={d} for an input but the input is of type {type(x)}. "
                             f"We cannot vmap over non-Tensor arguments, please use None as "
                             f"the respective in_dim")
        n = x.ndim
        if not -n <= d < n:
            raise ValueError(f"vmap({fname}, in_dims={in_dims!r}, ...)({desc}): Got "
                             f"in_dim={d} for some input, but that input is a Tensor of "
                             f"dimensionality {n} so expected in_dim to satisfy "
                             f"-{n} <= in_dim < {n}.")
        d %= n
        norm.append(d)
        sizes.append(x.shape[d])
    if not sizes:
        got = ("only in_dims of None" if any(isinstance(x, Tensor) for x in leaves)
               else "no Tensor inputs")
        raise ValueError(f"vmap({fname}, in_dims={in_dims!r}, ...)({desc}): at least one "
                         f"input must be a Tensor with a non-None in_dim (got {got}).")
    size = sizes[0]
    if any(s != size for s in sizes):
        raise ValueError(f"vmap({fname}, in_dims={in_dims!r}, ...)({desc}): Expected all "
                         f"tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    if chunk_size is None or chunk_size >= size:
        return _vmap_once(func, leaves, spec, norm, size, out_dims, randomness, kwargs, fname)
    chunks = []
    for start in range(0, size, chunk_size):
        stop = min(start + chunk_size, size)
        part = [x if d is None else x.narrow(d, start, stop - start)
                for x, d in zip(leaves, norm)]
        chunks.append(_vmap_once(func, part, spec, norm, stop - start, out_dims, randomness,
                                 kwargs, fname))
    return _concat_chunks(chunks, out_dims, fname)


def _concat_chunks(chunks, out_dims, fname):
    from tensorplay._ops import cat
    flat = [_flatten(c) for c in chunks]
    spec = flat[0][1]
    odims = _broadcast_dims(out_dims, chunks[0], "out_dims", fname, "<inputs>") \
        if not isinstance(chunks[0], Tensor) else [out_dims if not isinstance(out_dims, tuple)
                                                   else out_dims[0]]
    leaves = []
    for j, d in enumerate(odims):
        parts = [f[0][j] for f in flat]
        leaves.append(parts[0] if d is None else cat(parts, d))
    return _unflatten(leaves, spec)


def _vmap_once(func, leaves, spec, dims, size, out_dims, randomness, kwargs, fname):
    level = new_level()
    batched = []
    for x, d in zip(leaves, dims):
        if d is None:
            batched.append(x)
            continue
        phys = x if d == 0 else x.movedim(d, 0)
        batched.append(make_batched(phys, level))
    STATE.vmap_depth += 1
    _RANDOMNESS.append(randomness)
    try:
        out = func(*_unflatten(batched, spec), **kwargs)
    finally:
        _RANDOMNESS.pop()
        STATE.vmap_depth -= 1
    return _unwrap(out, out_dims, level, size, fname)


def _unwrap(out, out_dims, level, size, fname):
    if isinstance(out, Tensor):
        leaves, spec = [out], None
        if isinstance(out_dims, (tuple, list)):
            if len(out_dims) != 1:
                raise ValueError(f"vmap({fname}, ..., out_dims={out_dims!r})(<inputs>): "
                                 f"out_dims is not compatible with the structure of "
                                 f"`outputs`. out_dims has structure "
                                 f"{_describe(_flatten(out_dims)[1])} but outputs has "
                                 f"structure *.")
            odims = [out_dims[0]]
        else:
            odims = [out_dims]
    else:
        leaves, spec = _flatten(out)
        if isinstance(out_dims, list):
            out_dims = tuple(out_dims)
        odims = _broadcast_dims(out_dims, out, "out_dims", fname, "<inputs>")
    result = []
    for y, d in zip(leaves, odims):
        if not isinstance(y, Tensor):
            raise ValueError(f"vmap({fname}, ...): `{fname}` must only return Tensors, got "
                             f"type {type(y)}. Did you mean to set out_dims= to None for "
                             f"output?" if d is not None else
                             f"vmap({fname}, ...): `{fname}` must only return Tensors, got "
                             f"type {type(y)} as a return.")
        phys, lv = batched_value(y)
        batched_here = phys is not None and lv == level
        if d is None:
            if batched_here:
                raise ValueError(f"vmap({fname}, ...): `{fname}` can not return a "
                                 f"BatchedTensor when out_dim is None (the output depends "
                                 f"on the mapped dimension)")
            result.append(y)
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(f"vmap({fname}, ..., out_dims={out_dims!r}): expected "
                             f"`out_dims` to be int or a (potentially nested) tuple matching "
                             f"the structure of the outputs, got: {type(d)}.")
        n = y.ndim + 1
        if not -n <= d < n:
            raise IndexError(f"vmap({fname}, ..., out_dims={out_dims!r}): Dimension out of "
                             f"range (expected to be in range of [{-n}, {n - 1}], but got "
                             f"{d})")
        d %= n
        if batched_here:
            result.append(phys if d == 0 else phys.movedim(0, d))
        else:
            shape = tuple(y.shape)
            result.append(y.unsqueeze(d).expand(shape[:d] + (size,) + shape[d:]))
    return result[0] if spec is None and isinstance(out, Tensor) else _unflatten(result, spec)


def _check_random(op):
    """Called by tensorplay's random functions when a vmap is active."""
    if _RANDOMNESS and _RANDOMNESS[-1] == "different":
        # tensorplay's samplers cannot yet draw per example: refuse rather than give
        # every example the same draw (docs/DECISIONS.md, "vmap")
        raise NotImplementedError(
            f"vmap: random operation {op} with randomness='different' is not supported "
            f"yet (tensorplay cannot draw per example); use randomness='same' for one "
            f"draw shared by the batch, or draw the samples outside vmap and pass them in")
    if _RANDOMNESS and _RANDOMNESS[-1] == "error":
        raise RuntimeError(f"vmap: called random operation {op} while in randomness error "
                           f"mode. Please either use the 'same' or 'different' randomness "
                           f"flags on vmap or perform the randomness operation out of vmap")
