"""gradcheck's parts (autograd/_gradcheck.py runs the checks): the structure of
inputs and outputs, the numerical Jacobian (central differences), the analytical
one (VJP rows, JVP columns), and the messages of a failed check."""
import warnings

import numpy as np

__all__ = ["GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck``/``gradgradcheck`` when a check fails (a RuntimeError,
    as ``torch.autograd.GradcheckError``).  A Jacobian mismatch names the output
    and the input, prints both Jacobians and the worst entry."""


# ------------------------------------------------------------------ structure
def _as_tuple(x):
    """PyTorch's ``_as_tuple``: a tuple as is, a list as a tuple, else ``(x,)``."""
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _tensor_cls():
    from tensorplay._tensor import Tensor
    return Tensor


def _walk(x, path=()):
    """``(path, tensor)`` for every Tensor in the (nested) lists and tuples ``x``."""
    Tensor = _tensor_cls()
    if isinstance(x, Tensor):
        yield path, x
    elif isinstance(x, (list, tuple)):
        for i, e in enumerate(x):
            yield from _walk(e, path + (i,))


def _replace(x, new, path=()):
    """``x`` with the tensors at the paths in ``new`` (a dict) replaced."""
    if path in new:
        return new[path]
    depth = len(path)
    if isinstance(x, (list, tuple)) and any(len(p) > depth and p[:depth] == path
                                            for p in new):
        items = [_replace(e, new, path + (i,)) for i, e in enumerate(x)]
        return tuple(items) if isinstance(x, tuple) else items
    return x


def _label(path):
    """``input 1`` or, inside a list argument, ``input 1[0]``."""
    return "input " + str(path[0]) + "".join(f"[{i}]" for i in path[1:])


class _Problem:
    """What gradcheck works on: the inputs, the differentiable ones (with their
    paths), ``func`` and its outputs (positions of the differentiable ones)."""

    def __init__(self, func, inputs, op):
        self.func, self.inputs, self.op = func, inputs, op
        self.diff = [(p, t) for p, t in _walk(inputs) if t._requires_grad]

    def call(self, inputs=None):
        """``func(*inputs)`` as a tuple of Tensors (TypeError otherwise)."""
        Tensor = _tensor_cls()
        outs = _as_tuple(self.func(*(self.inputs if inputs is None else inputs)))
        for k, o in enumerate(outs):
            if not isinstance(o, Tensor):
                raise TypeError(f"{self.op}(): func must return a Tensor or a tuple/list of "
                                f"Tensors; output {k} is a {type(o).__name__}")
        return outs

    def duals(self, tangents, skip=None):
        """``{path: dual}``: each differentiable input made dual (``make_dual`` of its
        detached self) with its tangent in ``tangents`` (by position in
        ``self.diff``), except the one at position ``skip``."""
        from tensorplay.autograd import _forward as fw
        new = {}
        for c, (p, t) in enumerate(self.diff):
            if c == skip:
                continue
            new[p] = fw.make_dual(t.detach(), tangents[c])
        return new


def _float_outputs(outs):
    return [k for k, o in enumerate(outs) if o._data.dtype.kind == "f"]


def _numpy(t):
    return np.asarray(t._data, dtype=np.float64)


def _check_inputs(prob):
    """PyTorch's ``_check_inputs``: warn for non-double inputs, refuse overlapping
    memory and the case of no input that requires grad."""
    for path, t in prob.diff:
        if t._data.dtype != np.float64:
            warnings.warn(f"Input #{_label(path)[6:]} requires gradient and is not a double "
                          f"precision floating point or complex. This check will likely "
                          f"fail if all the inputs are not of double precision floating "
                          f"point or complex. ", UserWarning, stacklevel=4)
        d = t._data
        if d.size > 1 and any(st == 0 and sz > 1 for st, sz in zip(d.strides, d.shape)):
            raise RuntimeError(
                f"{prob.op}(): The {_label(path)} has a dimension with stride 0. gradcheck "
                f"only supports inputs that are non-overlapping to be able to compute the "
                f"numerical gradients correctly. You should call .contiguous on the input "
                f"before passing it to gradcheck.")
        if not d.flags.writeable:
            raise RuntimeError(f"{prob.op}(): the {_label(path)} is read-only, so it cannot "
                               f"be perturbed for finite differences; clone() it")
    if not prob.diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of them have requires_grad=True.")


# ------------------------------------------------------------------ numerical
def _central(prob, arr, delta, eps_label):
    """``(f(x + delta) - f(x - delta)) / 2`` for every float output (flattened
    float64), ``arr`` (an input's storage) perturbed in place and restored."""
    orig = arr.copy()
    try:
        arr -= delta
        outa = prob.call()
        fa = {k: _numpy(outa[k]).ravel().copy() for k in _float_outputs(outa)}
        arr[...] = orig + delta
        outb = prob.call()
        fb = {k: _numpy(outb[k]).ravel().copy() for k in _float_outputs(outb)}
    finally:
        arr[...] = orig
    for k in fa:
        a, b = outa[k]._data, outb[k]._data
        if a.shape != b.shape:
            raise AssertionError(f"Expected `func` to return outputs with the same shape when "
                                 f"inputs are perturbed {eps_label}, but got: shapes "
                                 f"{list(a.shape)} and {list(b.shape)}.")
        if a.dtype != b.dtype:
            raise AssertionError(f"Expected `func` to return outputs with the same dtype when "
                                 f"inputs are perturbed {eps_label}, but got: dtypes "
                                 f"{a.dtype} and {b.dtype}.")
    return {k: (fb[k] - fa[k]) / 2 for k in fa}


def _numerical_jacobian(prob, c, outs, eps):
    """``{k: J}`` for input ``prob.diff[c]`` and each float output k, J of shape
    (input numel, output numel), by central differences (slow mode)."""
    t = prob.diff[c][1]
    arr = t._data
    jac = {k: np.zeros((arr.size, outs[k]._data.size)) for k in _float_outputs(outs)}
    delta = np.zeros_like(arr)
    for e, idx in enumerate(np.ndindex(*arr.shape)):
        delta[idx] = eps
        try:
            cols = _central(prob, arr, delta, f"on index {idx} by {eps}")
        finally:
            delta[idx] = 0
        for k in jac:
            jac[k][e, :] = cols[k] / eps
    return jac


def _numerical_ju(prob, c, u, eps):
    """``{k: J u}`` (flattened) for input c along the unit vector u (fast mode)."""
    arr = prob.diff[c][1]._data
    delta = (u * eps).reshape(arr.shape).astype(arr.dtype)
    cols = _central(prob, arr, delta, f"by {eps}")
    return {k: v / eps for k, v in cols.items()}


# ------------------------------------------------------------------ analytical
def _vjp(prob, out, v):
    """One VJP of ``out`` with cotangent ``v``: one gradient Tensor (or None) per
    differentiable input."""
    from tensorplay import autograd
    grads = autograd.grad(out, [t for _, t in prob.diff], v, retain_graph=True,
                          allow_unused=True)
    return grads


def _vjp_rows(prob, out, check_grad_dtypes):
    """The analytical Jacobian of ``out`` w.r.t. every differentiable input,
    row by row (one VJP per output entry): a list of arrays (in numel, out numel)."""
    from tensorplay._creation import zeros_like
    n_out = out._data.size
    jac = [np.zeros((t._data.size, n_out)) for _, t in prob.diff]
    u = zeros_like(out)
    flat = u._data.reshape(-1)
    for r in range(n_out):
        flat[:] = 0
        flat[r] = 1
        grads = _vjp(prob, out, u)
        for c, g in enumerate(grads):
            _check_grad(prob, c, g, check_grad_dtypes)
            if g is not None:
                jac[c][:, r] = _numpy(g).ravel()
    return jac


def _check_grad(prob, c, g, check_grad_dtypes):
    if g is None:
        return
    t = prob.diff[c][1]
    if g._data.shape != t._data.shape:
        raise GradcheckError(f"Analytical gradient has incorrect size: {list(g.shape)} for "
                             f"the {_label(prob.diff[c][0])} of size {list(t.shape)}")
    if check_grad_dtypes and g._data.dtype != t._data.dtype:
        raise GradcheckError(f"Gradient has dtype mismatch: {g.dtype} for the "
                             f"{_label(prob.diff[c][0])} of dtype {t.dtype}")


_NONDET_MSG = ("Backward is not reentrant, i.e., running backward with same input and "
               "grad_output multiple times gives different values, although analytical "
               "gradient matches numerical gradient. The tolerance for nondeterminism was "
               "{tol}.")


def _reentrant(j1, j2, nondet_tol):
    for a, b in zip(j1, j2):
        if a.size and np.max(np.abs(a - b)) > nondet_tol:
            return False
    return True


def _jvp_columns(prob, outs_k, tangent_fill, check_grad_dtypes):
    """Forward-mode: for each differentiable input c and each column setting
    ``tangent_fill(c, tangent_array)`` yields, the tangents of the outputs in
    ``outs_k``.  Returns ``{(c, col): {k: flat float64 tangent}}``."""
    from tensorplay._creation import zeros_like
    from tensorplay.autograd import _forward as fw
    results = {}
    with fw.dual_level():
        tangents = [zeros_like(t) for _, t in prob.diff]
        inputs = _replace(prob.inputs, prob.duals(tangents))
        for c, tan in enumerate(tangents):
            flat = tan._data.reshape(-1)
            for col in tangent_fill(c, flat):
                outs = prob.call(inputs)
                got = {}
                for k in outs_k:
                    primal, t = fw.unpack_dual(outs[k])
                    if t is None:
                        got[k] = np.zeros(primal._data.size)
                        continue
                    if check_grad_dtypes and t._data.dtype != primal._data.dtype:
                        raise GradcheckError("Forward AD gradient has dtype mismatch.")
                    got[k] = _numpy(t).ravel().copy()
                results[(c, col)] = got
            flat[:] = 0
    return results


# ------------------------------------------------------------------ messages
def _fmt(a):
    return np.array2string(np.asarray(a), precision=6, threshold=400, max_line_width=100)


def _worst(a, n, rtol, atol):
    """The entry of (a, n) furthest outside ``atol + rtol * |n|`` (a nan counts as
    furthest): its index, a's value and n's value."""
    excess = np.abs(a - n) - (atol + rtol * np.abs(n))
    excess = np.where(np.isnan(excess), np.inf, excess)
    i = np.unravel_index(int(np.argmax(excess)), a.shape)
    return i, a[i], n[i]


def _elem(shape, flat):
    """``[i, j]``: the multi-index of flat position ``flat`` in ``shape`` ("" for 0-d)."""
    return str([int(i) for i in np.unravel_index(flat, shape)]) if shape else ""


def _worst_line(prob, k, c, outs, a, n, rtol, atol):
    """The worst entry of a Jacobian pair, named by its output and input elements."""
    path, t = prob.diff[c]
    (ri, ci), av, nv = _worst(a, n, rtol, atol)
    return (f"The worst entry: d output {k}{_elem(outs[k]._data.shape, ci)} / d "
            f"{_label(path)}{_elem(t._data.shape, ri)}: numerical {float(nv)!r}, "
            f"analytical {float(av)!r} (|difference| {abs(float(av) - float(nv)):.6g}, "
            f"allowed {atol + rtol * abs(float(nv)):.6g})\n")


def _mismatch_msg(prob, k, c, outs, a, n, rtol, atol, forward):
    """PyTorch's "Jacobian mismatch for output k with respect to input j" message,
    with both Jacobians and the worst entry."""
    path, t = prob.diff[c]
    mode = "computed with forward mode " if forward else ""
    return (f"Jacobian {mode}mismatch for output {k} with respect to {_label(path)},\n"
            f"numerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n"
            f"(rows: the {t._data.size} elements of {_label(path)}, columns: the "
            f"{outs[k]._data.size} elements of output {k})\n"
            + _worst_line(prob, k, c, outs, a, n, rtol, atol))


_FAST_NOTE = (
    "\nThe above quantities relating the numerical and analytical jacobians are computed "
    "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more background "
    "about fast mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\n")

_FAST_FAIL_SLOW_OK = (
    "Fast gradcheck failed but element-wise differences are small. This means that the "
    "test might've passed in slow_mode! If you are checking your own function, call "
    "gradcheck/gradgradcheck with `fast_mode=False`.")


def _allclose(a, n, rtol, atol):
    return bool(np.all(np.abs(a - n) <= atol + rtol * np.abs(n)))
