"""einsum: any equation, as a composition of registered primitives.

The plan, per ``torch.einsum``'s semantics:

1. parse: subscripts are letters ``a-zA-Z`` and at most one ``...`` per operand;
   without ``->`` the output is the ellipsis dims, then the letters that occur
   exactly once, in alphabetical (ASCII) order;
2. per operand: a label repeated inside it takes the diagonal (``ii->i``):
   the two dims moved last and flattened, then every (n+1)-th entry (permute,
   reshape and a strided getitem: its derivative is a scatter, for free, and an
   inf off the diagonal stays out of it); size-1 dims are expanded to the label's size (broadcasting, as
   PyTorch allows); labels no other operand and not the output has are summed;
3. operands contract left to right, two at a time, with one batched ``matmul``
   (permute to (batch, free, contracted) / (batch, contracted, free), reshape);
4. a final permute to the output order.

Everything is ``permute``, ``reshape``, ``expand``, ``mul``, ``sum`` and
``matmul``, so VJPs, JVPs and higher orders come from their rules.
"""
import numpy as np

from tensorplay._ops.linalg import matmul
from tensorplay._tensor import Tensor

__all__ = ["einsum"]

_LETTERS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _parse_term(term, op_index, ndim):
    """Labels of one operand, ellipsis dims as ints 0..k-1 (right aligned later)."""
    if term.count("...") > 1 or term.replace("...", "").count("."):
        raise RuntimeError(f"einsum(): invalid subscript '{term}' for operand {op_index}: "
                           f"at most one ellipsis ('...') is allowed")
    for c in term.replace("...", ""):
        if c not in _LETTERS:
            raise RuntimeError(f"einsum(): invalid subscript '{c}' in '{term}': subscripts "
                               f"must be letters in [a-zA-Z]")
    if "..." in term:
        left, right = term.split("...")
        k = ndim - len(left) - len(right)
        if k < 0:
            raise RuntimeError(f"einsum(): the subscripts '{term}' of operand {op_index} "
                               f"have more labels than its {ndim} dims")
        return list(left), k, list(right)
    if len(term) != ndim:
        raise RuntimeError(f"einsum(): the number of subscripts in '{term}' ({len(term)}) "
                           f"does not match the number of dims ({ndim}) of operand "
                           f"{op_index}")
    return list(term), None, []


def einsum(equation, *operands):
    """Einstein summation, as ``torch.einsum(equation, *operands)`` (operands may also
    come as one list).

    Implicit output (no ``->``: ellipsis dims, then the labels that appear once,
    sorted) and explicit output; repeated labels within an operand take
    diagonals (``'ii->i'``, ``'ii->'`` is the trace); ``...`` broadcasts; labels
    of size 1 broadcast against the same label's size elsewhere; any number of
    operands, contracted left to right in pairs.  float32, float64 and integer
    operands of one dtype.

    Raises:
        TypeError: a non-str equation, a non-Tensor operand.
        RuntimeError: a malformed equation, subscripts that do not match the
            operands' dims, a label with two sizes (neither 1), an output label
            that no operand has or that repeats, operands of different dtypes.
        NotImplementedError: bool operands.
    """
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not "
                        f"{type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for i, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): expected Tensor as operand {i}, got "
                            f"{type(t).__name__}")
        if t._data.dtype.kind == "b":
            raise NotImplementedError(f"einsum(): not implemented for bool operands "
                                      f"(operand {i})")
        if t.dtype is not operands[0].dtype:
            raise RuntimeError(f"einsum(): expected all operands to have the same dtype, "
                               f"got {operands[0].dtype} and {t.dtype} (operand {i})")
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise RuntimeError(f"einsum(): more than one '->' in equation '{equation}'")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): the equation has {len(terms)} operand subscripts, "
                           f"but {len(operands)} operands were given")
    parsed = [_parse_term(term, i, t._data.ndim) for i, (term, t) in
              enumerate(zip(terms, operands))]
    ell = max([k for _, k, _ in parsed if k is not None], default=0)
    labels = []                                   # per operand, per dim
    for left, k, right in parsed:
        mid = [] if k is None else list(range(ell - k, ell))     # right-aligned
        labels.append(left + mid + right)
    for i, (lab, t) in enumerate(zip(labels, operands)):
        seen = {}
        for lb, s in zip(lab, t._data.shape):
            if seen.setdefault(lb, s) != s:
                name = "..." if isinstance(lb, int) else lb
                raise RuntimeError(f"einsum(): subscript '{name}' is repeated for operand "
                                   f"{i} but the sizes don't match, {seen[lb]} != {s}")
    # sizes per label (1 broadcasts)
    size = {}
    for i, (lab, t) in enumerate(zip(labels, operands)):
        for lb, s in zip(lab, t._data.shape):
            old = size.get(lb, 1)
            if s != 1 and old != 1 and s != old:
                name = "..." if isinstance(lb, int) else lb
                raise RuntimeError(f"einsum(): operand {i} has size {s} for subscript "
                                   f"'{name}', which does not broadcast with the size {old} "
                                   f"seen before")
            size[lb] = s if s != 1 else old
    count = {}
    for lab in labels:
        for lb in lab:
            count[lb] = count.get(lb, 0) + 1
    if arrow:
        if rhs.count("...") > 1 or rhs.replace("...", "").count("."):
            raise RuntimeError(f"einsum(): invalid output subscripts '{rhs}'")
        out = []
        for part_i, part in enumerate(rhs.split("...")):
            if part_i == 1:
                out.extend(range(ell))
            for c in part:
                if c not in _LETTERS:
                    raise RuntimeError(f"einsum(): invalid output subscript '{c}'")
                if c not in count:
                    raise RuntimeError(f"einsum(): output subscript '{c}' does not appear "
                                       f"in the equation for any input operand")
                if c in out:
                    raise RuntimeError(f"einsum(): output subscript '{c}' appears more than "
                                       f"once in the output")
                out.append(c)
    else:
        out = list(range(ell)) + sorted(c for c, n in count.items()
                                        if isinstance(c, str) and n == 1)
    keep_out = set(out)

    xs = []
    for t, lab in zip(operands, labels):
        x, lab = _diagonals(t, lab)
        want = tuple(size[lb] for lb in lab)
        if x._data.shape != want:
            x = x.expand(want)
        xs.append((x, lab))
    # contract left to right
    x, lab = xs[0]
    for j in range(1, len(xs)):
        y, y_lab = xs[j]
        rest = keep_out.union(*[set(lb) for _, lb in xs[j + 1:]])
        # labels only one side has and nobody needs later: sum them first
        x, lab = _sum_out(x, lab, rest | set(y_lab))
        y, y_lab = _sum_out(y, y_lab, rest | set(lab))
        x, lab = _contract(x, lab, y, y_lab, rest)
    x, lab = _sum_out(x, lab, keep_out)
    if lab != out:
        x = x.permute(*[lab.index(lb) for lb in out])
    return x


def _diagonals(x, lab):
    """Take the diagonal for each label repeated inside one operand."""
    while True:
        seen = {}
        pair = None
        for d, lb in enumerate(lab):
            if lb in seen:
                pair = (seen[lb], d)
                break
            seen[lb] = d
        if pair is None:
            return x, lab
        d1, d2 = pair
        n1, n2 = x._data.shape[d1], x._data.shape[d2]
        if n1 != n2:
            name = "..." if isinstance(lab[d1], int) else lab[d1]
            raise RuntimeError(f"einsum(): subscript '{name}' is repeated in an operand but "
                               f"its dims have sizes {n1} and {n2}")
        # move d1, d2 last, flatten them, take every (n+1)-th entry, put it back at d1
        rest = [d for d in range(x._data.ndim) if d not in (d1, d2)]
        x = x.permute(*(rest + [d1, d2]))
        x = x.reshape(tuple(x._data.shape[:-2]) + (n1 * n1,))[..., ::n1 + 1]
        lab = [lab[d] for d in rest] + [lab[d1]]


def _sum_out(x, lab, needed):
    dims = [d for d, lb in enumerate(lab) if lb not in needed]
    if not dims:
        return x, lab
    return x.sum(dim=tuple(dims)), [lb for lb in lab if lb in needed]


def _contract(x, xl, y, yl, later):
    """One pairwise contraction by a batched matmul."""
    batch = [lb for lb in xl if lb in yl and lb in later]
    summed = [lb for lb in xl if lb in yl and lb not in later]
    xf = [lb for lb in xl if lb not in yl]
    yf = [lb for lb in yl if lb not in xl]
    sx, sy = dict(zip(xl, x._data.shape)), dict(zip(yl, y._data.shape))

    def prod(ls, s):
        return int(np.prod([s[lb] for lb in ls], dtype=np.int64))
    xp = x.permute(*[xl.index(lb) for lb in batch + xf + summed])
    yp = y.permute(*[yl.index(lb) for lb in batch + summed + yf])
    b, m, k, n = prod(batch, sx), prod(xf, sx), prod(summed, sx), prod(yf, sy)
    z = matmul(xp.reshape(b, m, k), yp.reshape(b, k, n))
    shape = tuple(sx[lb] for lb in batch + xf) + tuple(sy[lb] for lb in yf)
    return z.reshape(shape), batch + xf + yf
