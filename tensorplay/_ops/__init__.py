"""Public op functions over the primitive registry (``REGISTRY``).

Each submodule is one op family (elementwise, reduce, shape, linalg, nn, ...):
it registers its primitives (forward, VJP, JVP side by side) and defines the
public functions that validate arguments and call ``apply``.  Every module here
whose name does not start with ``_`` (and is not ``registry``) is a family and is
collected below, so adding a family is adding a file.  A family module declares:

``__all__``
    its public functions, exported as ``tensorplay.<name>``;
``METHODS`` (optional)
    names in ``__all__`` that are also Tensor methods (``x.abs()``);
``OPERATORS`` (optional)
    ``{dunder: function}`` for Tensor operators (``{"__mod__": remainder}``).
``LINALG`` (optional)
    ``{name: function}`` exported as ``tensorplay.linalg.<name>`` (and not at the
    top level unless also in ``__all__``): ``{"vector_norm": vector_norm}``.
``INTERNAL`` (optional)
    names bound in ``tensorplay._ops`` (where Signatures and tests find them)
    but not exported as ``tensorplay.<name>``: derivative kernels, and ops that
    PyTorch has only under ``torch.nn.functional`` (``gelu``).  They may also
    be listed in ``__all__``.
``INPLACE`` (optional)
    names in ``__all__`` whose in-place method ``x.<name>_(...)`` is made by the
    in-place mechanism (``x.abs_()`` from ``abs``).

A name exported, bound or given an operator by two families is an error at import.

Public functions with a ``dim`` or ``keepdim`` parameter also take NumPy's names
``axis`` and ``keepdims``, as PyTorch's argument parser does (``x.sum(axis=0)``):
``_with_numpy_aliases`` wraps them here, so the families write PyTorch's names only.
"""
import functools
import importlib
import inspect
import pkgutil

from tensorplay._ops._common import normalize_dim, normalize_dims  # noqa: F401
from tensorplay._ops.registry import REGISTRY, apply, sum_to_shape  # noqa: F401

__all__ = []
METHODS = []
OPERATORS = {}
LINALG = {}
INPLACE = []


_NUMPY_ALIASES = (("axis", "dim"), ("keepdims", "keepdim"))


def _with_numpy_aliases(fn):
    """``fn`` taking ``axis=``/``keepdims=`` for ``dim=``/``keepdim=``."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if kwargs:
            for alias, name in _NUMPY_ALIASES:
                if alias in kwargs:
                    if name in kwargs:
                        raise TypeError(f"{fn.__name__}(): got both {name!r} and its "
                                        f"NumPy alias {alias!r}")
                    kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)
    return call


def _takes_dim(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "dim" in params or "keepdim" in params


def _collect():
    owner = {}
    families = sorted(m.name for m in pkgutil.iter_modules(__path__)
                      if not m.name.startswith("_") and m.name != "registry")
    for fam in families:
        mod = importlib.import_module(f"{__name__}.{fam}")
        for name in mod.__all__:
            if name in owner:
                raise ImportError(f"tensorplay._ops.{fam} exports {name!r}, which "
                                  f"tensorplay._ops.{owner[name]} already exports")
            owner[name] = fam
            fn = getattr(mod, name)
            if callable(fn) and _takes_dim(fn):
                fn = _with_numpy_aliases(fn)
            globals()[name] = fn
            if name not in getattr(mod, "INTERNAL", ()):
                __all__.append(name)
        for name in getattr(mod, "INTERNAL", ()):
            if name in mod.__all__:
                continue                        # bound above, kept off the top level
            if name in owner:
                raise ImportError(f"tensorplay._ops.{fam} binds {name!r}, which "
                                  f"tensorplay._ops.{owner[name]} already exports")
            owner[name] = fam
            globals()[name] = getattr(mod, name)
        for name in getattr(mod, "METHODS", ()):
            if name in METHODS:
                raise ImportError(f"tensorplay._ops.{fam}: method {name!r} bound twice")
            METHODS.append(name)
        for dunder, fn in getattr(mod, "OPERATORS", {}).items():
            if dunder in OPERATORS:
                raise ImportError(f"tensorplay._ops.{fam}: operator {dunder} defined twice")
            OPERATORS[dunder] = fn
        for name, fn in getattr(mod, "LINALG", {}).items():
            if name in LINALG:
                raise ImportError(f"tensorplay._ops.{fam}: linalg.{name} defined twice")
            LINALG[name] = fn
        for name in getattr(mod, "INPLACE", ()):
            if name in INPLACE:
                raise ImportError(f"tensorplay._ops.{fam}: in-place {name}_ declared twice")
            INPLACE.append(name)


_collect()
