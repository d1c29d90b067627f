"""tensorplay.linalg: PyTorch's ``torch.linalg`` namespace.

Everything the op families put in ``tensorplay._ops.LINALG`` (the
factorisations of ``_ops/linalg_decomp.py`` and ``_ops/linalg_spectral.py``,
the norms of the reduction family, ...) is exported here, plus ``matmul`` and
the error type ``LinAlgError``.
"""
from tensorplay._ops import LINALG as _LINALG
from tensorplay._ops.linalg import matmul  # noqa: F401
from tensorplay._ops.linalg_decomp import LinAlgError  # noqa: F401

globals().update(_LINALG)

__all__ = sorted(set(_LINALG) | {"matmul", "LinAlgError"})


def __getattr__(name):
    raise AttributeError(f"module 'tensorplay.linalg' has no attribute {name!r}"
                         + (" (torch.linalg has it; tensorplay does not implement it yet)"
                            if name in _TORCH_LINALG else ""))


_TORCH_LINALG = {"cond", "cross", "diagonal", "eig", "eigvals", "householder_product",
                 "inv_ex", "cholesky_ex", "ldl_factor", "ldl_solve", "lu", "lu_factor",
                 "lu_solve", "matrix_exp", "matrix_rank", "solve_ex", "solve_triangular",
                 "tensorinv", "tensorsolve", "vander", "vecdot", "norm", "matrix_norm",
                 "vector_norm"}
