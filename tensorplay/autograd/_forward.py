"""Forward-mode AD: dual levels and dual tensors (the engine behind ``forward_ad``).

A dual tensor is a Tensor whose ``_tangent`` is set at the active level.  Every
primitive propagates tangents through its registered JVP rule inside
``registry.apply`` (DESIGN.md, fixed point 8), so ``tensorplay.exp(x)`` and
``x.exp()`` behave alike.  One level is active at a time, as in PyTorch ("nested
forward mode AD is not supported"); leaving it drops every tangent made at it
(lazily: a tangent whose level is not the active one is ignored).

With a reverse graph recorded inside a level (create_graph, or a function that
calls ``grad``), a JVP rule that reads its op's output makes a reference cycle:
``out -> out._tangent -> the tangent's grad_fn -> saved out`` (and the output's
node keeps the tangent too, ``Node.out_tangent``).  Without the garbage
collector -- or between its passes, which count objects, not bytes -- each cycle
keeps its arrays alive (1.4 GB over 40 jvp calls on 1M float64).  So ``apply``
notes such outputs (weak references, ``STATE.fw_cycles``) and leaving the level
clears their tangents, which are dead by then: PyTorch's forward-AD levels clear
the forward gradients of their tensors on exit the same way.  Until the level
exits, such a tensor lives on after its last reference is dropped.

JVP rules run with tangent propagation switched off (no tangents of tangents) and
grad mode as the caller set it, so reverse-over-forward works.
"""
import collections
import itertools

from tensorplay.autograd.grad_mode import STATE

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "UnpackedDualTensor"]

_level_ids = itertools.count(1)

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = """``(primal, tangent)`` returned by ``unpack_dual``; the
tangent is None when the tensor has none at the level."""


def enter_dual_level():
    """Enter a new forward-AD level and return its id.

    Raises:
        RuntimeError: when a level is already active (nesting is not supported).
    """
    if STATE.fw_level is not None:
        raise RuntimeError("Nested forward mode AD is not supported: a dual level is "
                           "already active; exit it first.")
    STATE.fw_level = next(_level_ids)
    STATE.fw_cycles = []
    return STATE.fw_level


def exit_dual_level(*, level=None):
    """Exit the active level (``level`` must be it, when given); its tangents are dropped.

    Raises:
        RuntimeError: when no level is active or ``level`` is not the active one.
    """
    if STATE.fw_level is None:
        raise RuntimeError("exit_dual_level(): no dual level is active (enter one with "
                           "enter_dual_level() or `with forward_ad.dual_level():`)")
    if level is not None and level != STATE.fw_level:
        raise RuntimeError(f"exit_dual_level(): level {level} is not the active dual level "
                           f"({STATE.fw_level})")
    lvl, refs = STATE.fw_level, STATE.fw_cycles
    STATE.fw_level = None
    STATE.fw_cycles = None
    for ref in refs:
        t = ref()
        if t is None or t._tangent_level != lvl:
            continue
        t._tangent = None
        t._tangent_level = None
        node = t._grad_fn
        if node is not None and node.out_tangent is not None and node.out_tangent[1] == lvl:
            node.out_tangent = None


class dual_level:
    """Context manager for a forward-AD level; all dual tensors live inside one.

    Example:
        >>> with dual_level():
        ...     x = make_dual(primal, tangent)
        ...     y = f(x)
        ...     jvp = unpack_dual(y).tangent
    """

    def __enter__(self):
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc):
        exit_dual_level(level=self.level)
        return False


def _current_level(level, op):
    if STATE.fw_level is None:
        raise RuntimeError(f"{op}(): no dual level is active; use it inside "
                           f"`with forward_ad.dual_level():`")
    if level is not None and level != STATE.fw_level:
        raise RuntimeError(f"{op}(): level {level} is not the active dual level "
                           f"({STATE.fw_level})")
    return STATE.fw_level


def _alias(tensor):
    """A view of ``tensor`` that keeps its reverse-mode history but no tangent."""
    from tensorplay._ops.shape import view
    prev = STATE.fw_rule
    STATE.fw_rule = True          # the alias gets no tangent from its input
    try:
        return view(tensor, tensor._data.shape)
    finally:
        STATE.fw_rule = prev


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` carrying ``tangent`` as its forward gradient.

    Differentiable in reverse mode with respect to ``tensor`` (and the tangent's
    own history is kept, for reverse-over-forward).

    Args:
        tensor (Tensor): float32 or float64 primal.
        tangent (Tensor): same shape; cast to the primal's dtype.

    Raises:
        RuntimeError: outside a dual level, a tensor that is already dual at the
            level, or a tangent whose shape differs from the primal's.
        ValueError: a non-floating tensor or tangent (as PyTorch).
    """
    from tensorplay._tensor import Tensor
    lvl = _current_level(level, "make_dual")
    for name, t in (("tensor", tensor), ("tangent", tangent)):
        if not isinstance(t, Tensor):
            raise TypeError(f"make_dual(): argument '{name}' must be a Tensor, got "
                            f"{type(t).__name__}")
        if t._data.dtype.kind != "f":
            raise ValueError(f"make_dual(): expected a floating point {name}, got {t.dtype}")
    if tensor._tangent is not None and tensor._tangent_level == lvl:
        raise RuntimeError("make_dual(): the tensor is already a dual tensor at this level; "
                           "use unpack_dual(tensor).primal to get its primal first")
    if tangent._data.shape != tensor._data.shape:
        raise RuntimeError(f"make_dual(): trying to set a forward gradient that has a "
                           f"different size ({list(tangent.shape)}) than that of the "
                           f"original Tensor ({list(tensor.shape)})")
    if tangent._data.dtype != tensor._data.dtype:
        tangent = tangent.to(tensor.dtype)
    out = _alias(tensor)
    # The dual shares the primal's storage and version counter, but it is a root
    # of its own for in-place ops: a write through a view of it must rebase *its*
    # tangent (the primal has none), not the primal's.
    out._base = None
    out._view_chain = None
    out._tangent = tangent
    out._tangent_level = lvl
    return out


def unpack_dual(tensor, *, level=None):
    """Split a dual tensor into ``UnpackedDualTensor(primal, tangent)``.

    ``primal`` is a view of ``tensor`` without the tangent (reverse-mode history
    kept); ``tangent`` is the tangent as is, or None when there is none at the
    level (also outside any level).
    """
    from tensorplay._tensor import Tensor
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual(): expected a Tensor, got {type(tensor).__name__}")
    if STATE.fw_level is None or (level is not None and level != STATE.fw_level):
        return UnpackedDualTensor(tensor, None)
    if tensor._tangent is None or tensor._tangent_level != STATE.fw_level:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_alias(tensor), tensor._tangent)
