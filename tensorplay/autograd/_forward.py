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

from tensorplay.autograd.grad_mode import INFERENCE, STATE

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "UnpackedDualTensor"]

# Levels have two names.  The public one is PyTorch's level *index* -- the depth,
# so 0 for the one level that can be active (nesting is not supported) -- which
# ``dual_level`` yields and ``level=`` takes.  The private one, kept in
# ``STATE.fw_level`` and in each dual tensor's ``_tangent_level``, is a fresh id per
# level, so that a tangent left on a tensor by an exited level never counts at a
# later level (tangents are dropped lazily).
_level_ids = itertools.count(1)

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = """``(primal, tangent)`` returned by ``unpack_dual``; the
tangent is None when the tensor has none at the level."""


def _active_id():
    """The private id of the active dual level, or None (inference mode hides the
    level from the ops, not from this module)."""
    lvl = STATE.fw_level
    return STATE.fw_outer if lvl is INFERENCE else lvl


def _set_active_id(lvl):
    if STATE.fw_level is INFERENCE:
        STATE.fw_outer = lvl
    else:
        STATE.fw_level = lvl


def enter_dual_level():
    """Enter a new forward-AD level and return its index: 0, as PyTorch (the
    index is the nesting depth, and levels do not nest).

    Raises:
        RuntimeError: when a level is already active (PyTorch: "Nested forward mode
            AD is not supported at the moment").
    """
    if _active_id() is not None:
        raise RuntimeError("enter_dual_level(): Nested forward mode AD is not supported "
                           "at the moment: a dual level is already active; exit it first.")
    _set_active_id(next(_level_ids))
    STATE.fw_cycles = []
    return 0


def _check_index(level, op):
    """The private id of the active level, checking the public index ``level``
    (None or 0)."""
    lvl = _active_id()
    if level is None or lvl is None:
        return lvl
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(f"{op}(): level must be an int (the index enter_dual_level() "
                        f"returned), got {type(level).__name__}")
    if level != 0:
        raise RuntimeError(f"{op}(): Invalid level {level}: the active dual level has "
                           f"index 0 (forward AD levels do not nest)")
    return lvl


def exit_dual_level(*, level=None):
    """Exit the active level (``level``, when given, must be its index 0); its
    tangents are dropped.

    Raises:
        RuntimeError: when no level is active, or ``level`` is not the active one
            (PyTorch: "Trying to exit a forward AD level that was not the last one
            that was created").
    """
    if _active_id() is None:
        raise RuntimeError("exit_dual_level(): no dual level is active (enter one with "
                           "enter_dual_level() or `with forward_ad.dual_level():`)")
    if level is not None and level != 0:
        raise RuntimeError(f"exit_dual_level(): Trying to exit a forward AD level that was "
                           f"not the last one that was created (level {level}; the active "
                           f"level is 0). This is not supported.")
    lvl, refs = _active_id(), STATE.fw_cycles
    _set_active_id(None)
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

    ``with dual_level() as level:`` binds the level's index, 0 (PyTorch's value).

    Example:
        >>> with dual_level():
        ...     x = make_dual(primal, tangent)
        ...     y = f(x)
        ...     jvp = unpack_dual(y).tangent
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


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
    own history is kept, for reverse-over-forward).  The tangent is stored as is
    (``unpack_dual(make_dual(x, t)).tangent is t``), as PyTorch does.

    Args:
        tensor (Tensor): float32 or float64 primal, of any shape.
        tangent (Tensor): the primal's shape and dtype.
        level (int, optional): the index of the active level (0); default it.

    Returns:
        Tensor: the dual tensor (shape and dtype of ``tensor``).

    Raises:
        RuntimeError (PyTorch's messages): outside a dual level; an invalid
            ``level``; a ``tensor`` that is already dual at the level; a
            ``tangent`` that has a tangent of its own at the level; a tangent of
            another shape, or (unlike torch 2.13, which keeps it) another dtype.
        ValueError: a non-floating tensor or tangent.
        TypeError: a tensor or tangent that is not a Tensor.
    """
    from tensorplay._tensor import Tensor
    for name, t in (("primal", tensor), ("tangent", tangent)):
        if not isinstance(t, Tensor):
            raise TypeError(f"make_dual(): expected the {name} to be a Tensor, got "
                            f"{type(t).__name__}")
    lvl = _check_index(level, "make_dual")
    if lvl is None:
        raise RuntimeError("make_dual(): Trying to create a dual Tensor for forward AD but "
                           "no level exists, make sure to enter_dual_level() first.")
    for name, t in (("primal", tensor), ("tangent", tangent)):
        if t._data.dtype.kind != "f":
            raise ValueError(f"make_dual(): Expected {name} to be floating point or "
                             f"complex, but got: {t.dtype}")
    if tensor._tangent is not None and tensor._tangent_level == lvl:
        raise RuntimeError("make_dual(): Making a dual Tensor based on a Tensor that "
                           "already has a forward gradient at the same level 0 is not "
                           "supported (use unpack_dual(tensor).primal to get its primal).")
    if tangent._tangent is not None and tangent._tangent_level == lvl:
        raise RuntimeError("make_dual(): Setting a forward grad that itself has a forward "
                           "gradient at the same level 0 is not supported.")
    if tangent._data.shape != tensor._data.shape:
        raise RuntimeError(f"make_dual(): Trying to set a forward gradient that has a "
                           f"different size than that of the original Tensor, this is not "
                           f"supported. Tensor is of size {list(tensor.shape)} while the "
                           f"given forward gradient is of size {list(tangent.shape)}.")
    if tangent._data.dtype != tensor._data.dtype:
        raise RuntimeError(f"make_dual(): Trying to set a forward gradient that has a "
                           f"different dtype than that of the original Tensor, this is not "
                           f"supported. Tensor is of dtype {tensor.dtype} while the given "
                           f"forward gradient is of dtype {tangent.dtype}; convert it with "
                           f"tangent.to(tensor.dtype).")
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
    level -- a tensor that is not dual, or no level active (then ``primal`` is
    ``tensor`` itself).

    Raises:
        TypeError: ``tensor`` is not a Tensor.  RuntimeError: an invalid ``level``.
    """
    from tensorplay._tensor import Tensor
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual(): expected a Tensor, got {type(tensor).__name__}")
    lvl = _check_index(level, "unpack_dual")
    if lvl is None or tensor._tangent is None or tensor._tangent_level != lvl:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_alias(tensor), tensor._tangent)
