"""Benchmark inputs of the linear-algebra family (see bench_ops.OPS): matrices of
about n/10 elements (as matmul's), made well conditioned (``+ m I``; symmetric
positive-definite for cholesky and eigh).  The products and einsum are
compositions over matmul (no primitive of their own) and so are timed by
matmul's entry; the factorisations have one each."""
import numpy as np

import tensorplay as tp

from ..common import array, square

LA = tp.linalg


def _side(n):
    return square(n // 10 or 1)[0]


def _wc(n, d):
    m = _side(n)
    return (array((m, m), d) + tp.from_numpy(np.eye(m, dtype=d) * 2 * m),)


def _spd(n, d):
    (a,) = _wc(n, d)
    return (a @ a.mT,)


def _tall(n, d):
    m = _side(n)
    return (array((m + m // 2, m), d) + tp.from_numpy(np.eye(m + m // 2, m, dtype=d) * 2 * m),)


def _system(n, d):
    (a,) = _wc(n, d)
    return (a, array((a.shape[0], 4), d))


def _lstsq(n, d):
    (a,) = _tall(n, d)
    return (a, array((a.shape[0], 4), d))


OPS = {
    "linalg_inv": (_wc, LA.inv),
    "linalg_solve": (_system, LA.solve),
    "linalg_det": (_wc, lambda a: LA.det(a * (1.0 / a.shape[0]))),
    "linalg_slogdet": (_wc, lambda a: LA.slogdet(a).logabsdet),
    "linalg_cholesky": (_spd, LA.cholesky),
    "linalg_qr": (_tall, lambda a: LA.qr(a).Q),
    "linalg_eigh": (_spd, lambda a: LA.eigh(a).eigenvectors),
    "linalg_svd": (_tall, lambda a: LA.svd(a, full_matrices=False).U),
    "linalg_svdvals": (_tall, LA.svdvals),
    "linalg_pinv": (_tall, LA.pinv),
    "linalg_lstsq": (_lstsq, lambda a, b: LA.lstsq(a, b).solution),
}
