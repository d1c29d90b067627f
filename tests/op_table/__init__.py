"""The op table: one or more rows (``OpSpec``) per registered primitive (STYLE.md A9).

Each row names the registry key it covers, a tensorplay function over Tensors,
an independent reference (numpy, scipy.special or a closed form), and sample
inputs: 0-d, 1-D, 2-D, broadcasting pairs and a non-contiguous view.
``tests/test_ops.py`` drives forward, VJP, JVP, second-order and mode-agreement
checks from the table, ``tests/test_fuzz.py`` fuzzes every row from its ``Fuzz``
entry, and both fail when a registered primitive has no row.

Rows live in one module per op family (``core.py``, ``unary.py``, ...), each
defining ``SPECS``; every module here whose name does not start with ``_`` is
collected, so adding a family is adding a file.

Sample arrays are float64; the tests cast them to the dtype under test.
Integer side inputs (class targets) and non-tensor parameters are fixed per
sample and passed as keyword arguments.
"""
import importlib
import pkgutil

from ._base import *  # noqa: F401,F403
from ._base import AWAY, Fuzz, OpSpec, noncontig  # noqa: F401

SPECS = []
for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if not _mod.startswith("_"):
        SPECS.extend(importlib.import_module(f"{__name__}.{_mod}").SPECS)
