"""Op-table rows of the convolutions (tensorplay/_ops/conv.py, conv_api.py).

References are direct numpy loops over the kernel taps (np.pad, strided slices,
np.einsum), never tensorplay and never im2col: an independent formulation of
the same sums.  Samples stay tiny (second-order finite differences run on
every row)."""
import hypothesis.strategies as st
import numpy as np

import tensorplay as tp
from tensorplay._ops.conv_api import conv2d_input, conv2d_weight

from ._base import Fuzz, OpSpec, _normal, fixed_samples

F = tp.nn.functional


# ---------------------------------------------------------------- references
def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _pads(padding, w_shape, dilation):
    """((top, bottom), (left, right)) for an int/tuple/'valid'/'same' padding."""
    if padding == "valid":
        return ((0, 0), (0, 0))
    if padding == "same":
        out = []
        for k, d in zip(w_shape[2:], dilation):
            t = d * (k - 1)
            out.append((t // 2, t - t // 2))
        return tuple(out)
    p = _pair(padding)
    return ((p[0], p[0]), (p[1], p[1]))


def conv2d_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """out[n, o, i, j] = b[o] + sum_{c,p,q} w[o, c, p, q] xpad[n, gC + c, i s + p d, ...]."""
    x, w = np.asarray(x), np.asarray(w)
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
    (pt, pb), (pl, pr) = _pads(padding, w.shape, (dh, dw))
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    n, c, hp, wp = xp.shape
    o, cg, kh, kw = w.shape
    ho, wo = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    out = np.zeros((n, o, ho, wo), np.result_type(x, w))
    for p in range(kh):
        for q in range(kw):
            patch = xp[:, :, p * dh:p * dh + sh * (ho - 1) + 1:sh,
                       q * dw:q * dw + sw * (wo - 1) + 1:sw]
            for g in range(groups):
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", patch[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og, :, p, q])
    if b is not None:
        out += np.asarray(b).reshape(1, -1, 1, 1)
    return out[0] if unbatched else out


def conv1d_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    x = np.asarray(x)
    pad = padding if isinstance(padding, str) else (0, _pair(padding)[0])
    out = conv2d_ref(x[..., None, :], np.asarray(w)[:, :, None, :], b, (1, _pair(stride)[0]),
                     pad, (1, _pair(dilation)[0]), groups)
    return out[..., 0, :]


def conv_transpose2d_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                         dilation=1):
    """Scatter every input pixel times the kernel into the (uncropped) output, then
    crop ``padding`` from each side (PyTorch's definition)."""
    x, w = np.asarray(x), np.asarray(w)
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    (ah, aw) = _pair(output_padding)
    n, cin, h, wd = x.shape
    _, cog, kh, kw = w.shape
    ig = cin // groups
    hf = (h - 1) * sh + dh * (kh - 1) + 1 + ah
    wf = (wd - 1) * sw + dw * (kw - 1) + 1 + aw
    full = np.zeros((n, cog * groups, hf, wf), np.result_type(x, w))
    for p in range(kh):
        for q in range(kw):
            for g in range(groups):
                full[:, g * cog:(g + 1) * cog, p * dh:p * dh + sh * (h - 1) + 1:sh,
                     q * dw:q * dw + sw * (wd - 1) + 1:sw] += np.einsum(
                    "nihw,ic->nchw", x[:, g * ig:(g + 1) * ig], w[g * ig:(g + 1) * ig, :, p, q])
    out = full[:, :, ph:hf - ph, pw:wf - pw]
    if b is not None:
        out = out + np.asarray(b).reshape(1, -1, 1, 1)
    return out[0] if unbatched else out


def conv_transpose1d_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                         dilation=1):
    x = np.asarray(x)
    out = conv_transpose2d_ref(x[..., None, :], np.asarray(w)[:, :, None, :], b,
                               (1, _pair(stride)[0]), (0, _pair(padding)[0]),
                               (0, _pair(output_padding)[0]), groups, (1, _pair(dilation)[0]))
    return out[..., 0, :]


def unfold_ref(x, kernel_size, dilation=1, padding=0, stride=1):
    x = np.asarray(x)
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = map(_pair, (kernel_size, dilation, padding,
                                                         stride))
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    n, c, hp, wp = xp.shape
    ho, wo = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1
    rows = np.zeros((n, c, kh, kw, ho * wo), x.dtype)
    for p in range(kh):
        for q in range(kw):
            rows[:, :, p, q] = xp[:, :, p * dh:p * dh + sh * (ho - 1) + 1:sh,
                                  q * dw:q * dw + sw * (wo - 1) + 1:sw].reshape(n, c, -1)
    out = rows.reshape(n, c * kh * kw, ho * wo)
    return out[0] if unbatched else out


def fold_ref(cols, output_size, kernel_size, dilation=1, padding=0, stride=1):
    cols = np.asarray(cols)
    unbatched = cols.ndim == 2
    if unbatched:
        cols = cols[None]
    (h, w), (kh, kw) = _pair(output_size), _pair(kernel_size)
    (dh, dw), (ph, pw), (sh, sw) = map(_pair, (dilation, padding, stride))
    n, r, _ = cols.shape
    c = r // (kh * kw)
    hp, wp = h + 2 * ph, w + 2 * pw
    ho, wo = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1
    full = np.zeros((n, c, hp, wp), cols.dtype)
    blocks = cols.reshape(n, c, kh, kw, ho, wo)
    for p in range(kh):
        for q in range(kw):
            full[:, :, p * dh:p * dh + sh * (ho - 1) + 1:sh,
                 q * dw:q * dw + sw * (wo - 1) + 1:sw] += blocks[:, :, p, q]
    out = full[:, :, ph:ph + h, pw:pw + w]
    return out[0] if unbatched else out


def conv2d_weight_ref(x, g, weight_size, stride=1, padding=0, dilation=1, groups=1):
    """sum_{n,i,j} g[n, o, i, j] xpad[n, gC + c, i s + p d, j s + q d]."""
    (sh, sw), (dh, dw), (ph, pw) = _pair(stride), _pair(dilation), _pair(padding)
    x, g = np.asarray(x), np.asarray(g)
    o, cg, kh, kw = weight_size
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    ho, wo = g.shape[2:]
    og = o // groups
    out = np.zeros(weight_size, np.result_type(x, g))
    for p in range(kh):
        for q in range(kw):
            patch = xp[:, :, p * dh:p * dh + sh * (ho - 1) + 1:sh,
                       q * dw:q * dw + sw * (wo - 1) + 1:sw]
            for gi in range(groups):
                out[gi * og:(gi + 1) * og, :, p, q] = np.einsum(
                    "nchw,nohw->oc", patch[:, gi * cg:(gi + 1) * cg], g[:, gi * og:(gi + 1) * og])
    return out


def conv2d_input_ref(w, g, input_size, stride=1, padding=0, dilation=1, groups=1):
    """The adjoint by its definition: <conv2d(x, w), g> = <x, result> for every x,
    i.e. the gradient of that linear form, one basis vector of x at a time."""
    w, g = np.asarray(w), np.asarray(g)
    out = np.zeros(input_size)
    flat = out.reshape(-1)
    for i in range(flat.size):
        e = np.zeros(input_size)
        e.reshape(-1)[i] = 1
        flat[i] = np.sum(conv2d_ref(e, w, None, stride, padding, dilation, groups) * g)
    return out


# ---------------------------------------------------------------- samples
def _conv_case(label, x, w, b=None, **kw):
    arrays = [(_normal, x), (_normal, w)] + ([(_normal, b)] if b else [])
    return (label, arrays, kw)


CONV2D = fixed_samples(
    _conv_case("basic", (2, 2, 5, 5), (3, 2, 3, 3)),
    _conv_case("bias_pad", (2, 2, 5, 4), (3, 2, 3, 3), (3,), padding=1),
    _conv_case("stride_dil", (1, 2, 7, 6), (2, 2, 2, 3), stride=(2, 1), dilation=(2, 1),
               padding=(1, 2)),
    _conv_case("stride_rem", (1, 1, 6, 6), (2, 1, 2, 2), (2,), stride=3, padding=1),
    _conv_case("groups", (2, 4, 4, 4), (6, 2, 3, 3), (6,), groups=2, padding=1),
    _conv_case("same_even", (1, 2, 5, 4), (2, 2, 2, 4), padding="same"),
    _conv_case("same_dil", (1, 1, 5, 5), (2, 1, 3, 2), (2,), padding="same", dilation=2),
    _conv_case("valid_unbatched", (2, 5, 4), (3, 2, 3, 2), padding="valid"),
    _conv_case("noncontig", (2, 2, 4, 5), (2, 2, 3, 3), (2,), padding=1),
)
CONV1D = fixed_samples(
    _conv_case("basic", (2, 2, 7), (3, 2, 3), (3,)),
    _conv_case("stride_pad_dil", (1, 2, 9), (2, 1, 3), stride=2, padding=2, dilation=2,
               groups=2),
    _conv_case("same_even", (2, 1, 6), (2, 1, 4), padding="same"),
    _conv_case("unbatched", (2, 6), (2, 2, 2)),
)
CONVT2D = fixed_samples(
    _conv_case("basic", (2, 3, 3, 4), (3, 2, 3, 3)),
    _conv_case("stride_pad_out", (1, 2, 3, 3), (2, 2, 3, 2), (2,), stride=2, padding=1,
               output_padding=1),
    _conv_case("groups_dil", (2, 4, 3, 3), (4, 1, 2, 2), (2,), groups=2, dilation=2,
               stride=(1, 2)),
    _conv_case("outpad_dil", (1, 1, 3, 3), (1, 2, 2, 2), stride=1, dilation=3,
               output_padding=2),
    _conv_case("unbatched", (2, 3, 3), (2, 2, 2, 2)),
    _conv_case("noncontig", (2, 2, 3, 3), (2, 2, 2, 2), (2,), stride=2),
)
CONVT1D = fixed_samples(
    _conv_case("basic", (2, 2, 4), (2, 3, 3), (3,), stride=2, padding=1, output_padding=1),
    _conv_case("unbatched", (2, 5), (2, 1, 2)),
)
UNFOLD = fixed_samples(
    ("basic", [(_normal, (2, 2, 4, 5))], {"kernel_size": 2}),
    ("all", [(_normal, (1, 2, 5, 5))], {"kernel_size": (2, 3), "dilation": (1, 2),
                                        "padding": 1, "stride": (2, 1)}),
    ("unbatched", [(_normal, (2, 3, 3))], {"kernel_size": 2, "padding": 1}),
    ("noncontig", [(_normal, (1, 2, 4, 4))], {"kernel_size": 3, "stride": 2, "padding": 1}),
)
FOLD = fixed_samples(
    ("basic", [(_normal, (2, 8, 12))], {"output_size": (4, 5), "kernel_size": 2}),
    ("all", [(_normal, (1, 12, 9))], {"output_size": (5, 5), "kernel_size": (2, 3),
                                      "dilation": (1, 2), "padding": 1, "stride": (2, 1)}),
    ("unbatched", [(_normal, (8, 16))], {"output_size": 3, "kernel_size": 2, "padding": 1}),
    ("noncontig", [(_normal, (1, 18, 4))], {"output_size": 4, "kernel_size": 3,
                                            "stride": 2, "padding": 1}),
)
WEIGHT = fixed_samples(
    ("basic", [(_normal, (2, 2, 4, 4)), (_normal, (2, 3, 2, 2))],
     {"weight_size": (3, 2, 3, 3)}),
    ("all", [(_normal, (1, 4, 5, 5)), (_normal, (1, 2, 3, 3))],
     {"weight_size": (2, 2, 2, 2), "stride": 2, "padding": 1, "dilation": (2, 1),
      "groups": 2}),
)
INPUT = fixed_samples(
    ("basic", [(_normal, (3, 2, 2, 2)), (_normal, (1, 3, 3, 2))],
     {"input_size": (1, 2, 4, 3)}),
    ("all", [(_normal, (2, 1, 2, 2)), (_normal, (1, 2, 3, 3))],
     {"input_size": (1, 2, 5, 4), "stride": 2, "padding": 1, "groups": 2}),
)


# ---------------------------------------------------------------- fuzz drawers
def _conv_shapes(nd, transposed=False):
    def shapes(draw):
        g = draw(st.integers(1, 2))
        cg, og = draw(st.integers(1, 2)), draw(st.integers(1, 2))
        n = draw(st.integers(0, 2))
        ks = tuple(draw(st.integers(1, 3)) for _ in range(nd))
        sp = tuple(draw(st.integers(1, 5)) for _ in range(nd))
        if transposed:      # weight (C_in, C_out / groups, k...), input C_in channels
            return [(n, g * og) + sp, (g * og, cg) + ks]
        return [(n, g * cg) + sp, (g * og, cg) + ks]
    return shapes


def _conv_kwargs(transposed=False):
    def kwargs(draw, arrays):
        x, w = arrays
        nd = x.ndim - 2
        if transposed:      # any groups dividing C_in = w.shape[0]
            out = {"groups": draw(st.sampled_from([d for d in (1, 2) if w.shape[0] % d == 0]))}
        else:
            out = {"groups": x.shape[1] // w.shape[1]}
        s = tuple(draw(st.integers(1, 3)) for _ in range(nd))
        d = tuple(draw(st.integers(1, 2)) for _ in range(nd))
        p = []
        for size, k, dd in zip(x.shape[2:], w.shape[2:], d):
            lo = 0 if transposed else max(0, -(-(dd * (k - 1) + 1 - size) // 2))
            p.append(draw(st.integers(lo, lo + 1)))
        out.update(stride=s, dilation=d, padding=tuple(p))
        if transposed:
            out["output_padding"] = tuple(draw(st.integers(0, max(ss, dd) - 1))
                                          for ss, dd in zip(s, d))
            sizes = [(n - 1) * ss - 2 * pp + dd * (k - 1) + a + 1 for n, ss, pp, dd, k, a in
                     zip(x.shape[2:], s, p, d, w.shape[2:], out["output_padding"])]
            if any(v < 1 for v in sizes):
                out["padding"] = (0,) * nd
        return out
    return kwargs


def _conv_base(ts, kw):
    """The full positional call: input, weight, bias, stride, padding, dilation, groups."""
    return [ts[0], ts[1], None, kw["stride"], kw["padding"], kw["dilation"], kw["groups"]]


def _convt_base(ts, kw):
    """input, weight, bias, stride, padding, output_padding, groups, dilation."""
    return [ts[0], ts[1], None, kw["stride"], kw["padding"], kw["output_padding"],
            kw["groups"], kw["dilation"]]


def _conv_fuzz(op, nd, transposed=False):
    return Fuzz(op, ("input", "weight"), shapes=_conv_shapes(nd, transposed),
                kwargs=_conv_kwargs(transposed), base=_convt_base if transposed else _conv_base)


def _unfold_kwargs(draw, arrays):
    x = arrays[0]
    k = tuple(draw(st.integers(1, 3)) for _ in range(2))
    d = tuple(draw(st.integers(1, 2)) for _ in range(2))
    p = [max(0, -(-(dd * (kk - 1) + 1 - size) // 2)) for size, kk, dd in
         zip(x.shape[-2:], k, d)]
    return {"kernel_size": k, "dilation": d, "padding": tuple(p),
            "stride": tuple(draw(st.integers(1, 3)) for _ in range(2))}


def _fold_shapes(draw):
    c, n = draw(st.integers(1, 2)), draw(st.integers(0, 2))
    k = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    h, w = draw(st.integers(k[0], 4)), draw(st.integers(k[1], 4))
    s = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    _FOLD_GEOM[0] = {"output_size": (h, w), "kernel_size": k, "stride": s}
    L = ((h - k[0]) // s[0] + 1) * ((w - k[1]) // s[1] + 1)
    return [(n, c * k[0] * k[1], L)]


_FOLD_GEOM = [None]         # the geometry _fold_shapes drew, for _fold_kwargs


def _torch_conv(name):
    return lambda T, *xs, **kw: getattr(T.nn.functional, name)(*xs, **kw)


SPECS = [
    OpSpec("conv2d", lambda x, w, *b, **kw: F.conv2d(x, w, *b, **kw), conv2d_ref, CONV2D,
           fuzz=_conv_fuzz("conv2d", 2), torch=_torch_conv("conv2d")),
    OpSpec("conv2d", lambda x, w, *b, **kw: F.conv1d(x, w, *b, **kw), conv1d_ref, CONV1D,
           variant="conv1d", fuzz=_conv_fuzz("conv1d", 1), torch=_torch_conv("conv1d")),
    OpSpec("conv_transpose2d", lambda x, w, *b, **kw: F.conv_transpose2d(x, w, *b, **kw),
           conv_transpose2d_ref, CONVT2D, fuzz=_conv_fuzz("conv_transpose2d", 2, True),
           torch=_torch_conv("conv_transpose2d")),
    OpSpec("conv_transpose2d", lambda x, w, *b, **kw: F.conv_transpose1d(x, w, *b, **kw),
           conv_transpose1d_ref, CONVT1D, variant="conv_transpose1d",
           fuzz=_conv_fuzz("conv_transpose1d", 1, True), torch=_torch_conv("conv_transpose1d")),
    OpSpec("conv2d_weight", lambda x, g, weight_size, **kw: conv2d_weight(x, weight_size, g, **kw),
           conv2d_weight_ref, WEIGHT,
           fuzz=Fuzz("conv2d_weight", ("input", "grad_output"),
                     shapes=lambda draw: [(2, 2, 4, 4), (2, 3, 2, 2)],
                     kwargs=lambda draw, arrays: {"weight_size": (3, 2, 3, 3)},
                     base=lambda ts, kw: [ts[0], kw["weight_size"], ts[1]]),
           torch=lambda T, x, g, weight_size, **kw: T.nn.grad.conv2d_weight(
               x, weight_size, g, **kw)),
    OpSpec("conv_transpose2d", lambda w, g, input_size, **kw: conv2d_input(input_size, w, g, **kw),
           conv2d_input_ref, INPUT, variant="conv2d_input",
           fuzz=Fuzz("conv2d_input", ("weight", "grad_output"),
                     shapes=lambda draw: [(3, 2, 2, 2), (1, 3, 3, 2)],
                     kwargs=lambda draw, arrays: {"input_size": (1, 2, 4, 3)},
                     base=lambda ts, kw: [kw["input_size"], ts[0], ts[1]],
                     # the reference sums basis-vector convolutions: 0 * inf is nan
                     special=False),
           torch=lambda T, w, g, input_size, **kw: T.nn.grad.conv2d_input(
               input_size, w, g, **kw)),
    OpSpec("im2col", lambda x, **kw: F.unfold(x, **kw), unfold_ref, UNFOLD,
           fuzz=Fuzz("unfold", shapes=lambda draw: [(draw(st.integers(0, 2)),
                                                     draw(st.integers(1, 2)),
                                                     draw(st.integers(1, 4)),
                                                     draw(st.integers(1, 4)))],
                     kwargs=_unfold_kwargs,
                     base=lambda ts, kw: [ts[0], kw["kernel_size"], kw["dilation"],
                                          kw["padding"], kw["stride"]]),
           torch=lambda T, x, **kw: T.nn.functional.unfold(x, **kw)),
    OpSpec("col2im", lambda x, **kw: F.fold(x, **kw), fold_ref, FOLD,
           fuzz=Fuzz("fold", shapes=_fold_shapes, kwargs=lambda draw, arrays: dict(_FOLD_GEOM[0]),
                     base=lambda ts, kw: [ts[0], kw["output_size"], kw["kernel_size"], 1, 0,
                                          kw["stride"]]),
           torch=lambda T, x, **kw: T.nn.functional.fold(x, **kw)),
]
