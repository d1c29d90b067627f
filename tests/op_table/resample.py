"""Op-table rows of padding and interpolation (tensorplay/_ops/resample.py,
_interpolate.py).

References: ``numpy.pad`` (modes constant / reflect / edge / wrap) after a crop
for negative pads; interpolation from the documented source-index formulas in
float64 (samples avoid sizes where PyTorch's float32 nearest scale rounds
differently); the VJPs as dense adjoints of those references.
"""
import hypothesis.strategies as st
import numpy as np

import tensorplay as tp
from tensorplay._ops.resample import (pad_backward, upsample_linear_backward,
                                      upsample_nearest_backward)

from ._base import Fuzz, OpSpec, _normal, fixed_samples
from .pool import ref_vjp

F = tp.nn.functional
_NP_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
            "circular": "wrap"}


def ref_pad(x, pad, mode="constant", value=None):
    """numpy.pad with PyTorch's treatment of negative pads: circular (and constant)
    crop first and pad the cropped dims; reflect and replicate pad the whole dim
    and then crop (so a crop never changes what is mirrored or repeated)."""
    x = np.asarray(x)
    k = len(pad) // 2
    crop = [slice(None)] * x.ndim
    widths = [(0, 0)] * x.ndim
    for i in range(k):
        dim = x.ndim - 1 - i
        a, b = pad[2 * i], pad[2 * i + 1]
        crop[dim] = (max(-a, 0), max(-b, 0))
        widths[dim] = (max(a, 0), max(b, 0))

    def cut(y):
        return y[tuple(slice(c[0], y.shape[d] - c[1]) if isinstance(c, tuple) else c
                       for d, c in enumerate(crop))]
    if mode == "constant":
        return np.pad(cut(x), widths, mode="constant", constant_values=value or 0)
    if mode == "circular":
        return np.pad(cut(x), widths, mode="wrap")
    return cut(np.pad(x, widths, mode=_NP_MODE[mode]))


def _src_nearest(L, O, scale):
    s = L / O if scale is None else 1.0 / scale
    return np.minimum(np.floor(np.arange(O) * s).astype(int), L - 1)


def _taps(L, O, align_corners, scale):
    o = np.arange(O, dtype=np.float64)
    if align_corners:
        src = o * ((L - 1) / (O - 1) if O > 1 else 0.0)
    else:
        s = L / O if scale is None else 1.0 / scale
        src = np.maximum((o + 0.5) * s - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(int), L - 1)
    i1 = np.minimum(i0 + 1, L - 1)
    return i0, i1, src - i0


def ref_interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                    recompute_scale_factor=None):
    x = np.asarray(x)
    k = x.ndim - 2
    sp = x.shape[2:]
    if size is not None:
        out = (size,) * k if np.isscalar(size) else tuple(size)
        scales = (None,) * k
    else:
        sf = (scale_factor,) * k if np.isscalar(scale_factor) else tuple(scale_factor)
        out = tuple(int(np.floor(L * s)) for L, s in zip(sp, sf))
        scales = (None,) * k if recompute_scale_factor else sf
    y = x
    for i in range(k):                      # separable: one axis at a time
        ax = 2 + i
        if mode == "nearest":
            y = np.take(y, _src_nearest(sp[i], out[i], scales[i]), axis=ax)
        else:
            i0, i1, lam = _taps(sp[i], out[i], bool(align_corners), scales[i])
            shape = [1] * y.ndim
            shape[ax] = out[i]
            lam = lam.reshape(shape)
            y = np.take(y, i0, axis=ax) * (1 - lam) + np.take(y, i1, axis=ax) * lam
    return y


_PADS = [("const_2d", (2, 2, 3, 4), dict(pad=(1, 2, 2, 0), value=1.5)),
         ("const_crop", (2, 3, 4), dict(pad=(-1, 2, 1, -2))),
         ("const_3dims", (2, 2, 3, 2), dict(pad=(1, 0, 0, 1, 1, 1))),
         ("reflect_1d", (2, 2, 5), dict(pad=(2, 3), mode="reflect")),
         ("reflect_2d", (2, 1, 4, 5), dict(pad=(3, 1, 2, 3), mode="reflect")),
         ("reflect_crop", (1, 2, 4, 5), dict(pad=(-1, 2, 1, -1), mode="reflect")),
         ("replicate_2d", (2, 1, 3, 4), dict(pad=(2, 1, 1, 3), mode="replicate")),
         ("replicate_unbatched", (2, 3, 4), dict(pad=(1, 1, 2, 0), mode="replicate")),
         ("circular_2d", (1, 2, 3, 4), dict(pad=(2, 4, 3, 1), mode="circular")),
         ("circular_crop", (2, 1, 5), dict(pad=(-1, 3), mode="circular")),
         ("circular_3d", (1, 1, 2, 3, 3), dict(pad=(1, 1, 2, 0, 1, 2), mode="circular")),
         ("noncontig_reflect", (2, 2, 4, 4), dict(pad=(1, 1, 1, 1), mode="reflect"))]
_INTERP = [("nearest_up", (2, 2, 3, 4), dict(size=(5, 7))),
           ("nearest_down", (1, 2, 7, 6), dict(size=(3, 4))),
           ("nearest_x2", (1, 2, 3, 3), dict(scale_factor=2)),
           ("nearest_scale", (2, 1, 5, 4), dict(scale_factor=(1.5, 0.75))),
           ("nearest_1d", (2, 2, 5), dict(size=7)),
           ("bilinear", (2, 2, 3, 4), dict(size=(5, 7), mode="bilinear")),
           ("bilinear_down", (1, 2, 7, 6), dict(size=(3, 4), mode="bilinear")),
           ("bilinear_corners", (1, 2, 3, 4), dict(size=(5, 6), mode="bilinear",
                                                   align_corners=True)),
           ("bilinear_scale", (1, 1, 4, 5), dict(scale_factor=1.7, mode="bilinear")),
           ("bilinear_recompute", (1, 1, 4, 5), dict(scale_factor=1.7, mode="bilinear",
                                                     recompute_scale_factor=True)),
           ("linear_1d", (2, 2, 5), dict(size=8, mode="linear")),
           ("noncontig_bilinear", (2, 1, 3, 4), dict(size=(4, 6), mode="bilinear"))]


def _rows(cases):
    return fixed_samples(*[(label, [(_normal, shape)], kw) for label, shape, kw in cases])


def _backward_samples(cases, out_shape):
    def samples(rng):
        out = []
        for label, shape, kw in cases:
            y = out_shape(np.zeros(shape), kw)
            extra = {k: v for k, v in kw.items() if k != "value"}
            out.append((label, [rng.standard_normal(y.shape)],
                        dict(extra, input_size=shape)))
        return out
    return samples


def _pad_bwd(g, input_size, pad, mode="constant"):
    k = len(pad) // 2
    return pad_backward(g, input_size[len(input_size) - k:], pad, mode)


def _interp_bwd(g, input_size, size=None, scale_factor=None, mode="nearest",
                align_corners=None, recompute_scale_factor=None):
    k = len(input_size) - 2
    sp = input_size[2:]
    scales = None
    if scale_factor is not None and not recompute_scale_factor:
        scales = (scale_factor,) * k if np.isscalar(scale_factor) else tuple(scale_factor)
    if mode == "nearest":
        return upsample_nearest_backward(g, sp, None, scales)
    return upsample_linear_backward(g, sp, None, bool(align_corners), scales)


def _pad_fuzz_kwargs(draw, arrays):
    shape = arrays[0].shape
    mode = draw(st.sampled_from(["constant", "reflect", "replicate", "circular"]))
    lo = 1 if mode == "constant" else max(1, len(shape) - 2)
    k = draw(st.integers(lo, min(3, len(shape) - 1)))
    pad = []
    for i in range(k):
        L = shape[-1 - i]
        hi = L - 1 if mode == "reflect" else L
        pad += [draw(st.integers(-min(L - 1, 1), hi)), draw(st.integers(0, hi))]
    kw = {"pad": tuple(pad), "mode": mode}
    if mode == "constant" and draw(st.booleans()):
        kw["value"] = 0.5
    return kw


def _interp_fuzz_kwargs(draw, arrays):
    k = arrays[0].ndim - 2
    mode = draw(st.sampled_from(["nearest", "bilinear" if k == 2 else "linear"]))
    kw = {"size": tuple(draw(st.integers(1, 6)) for _ in range(k)), "mode": mode}
    if mode != "nearest":
        kw["align_corners"] = draw(st.booleans())
    return kw


def _shapes_min(nd_lo, nd_hi, lo=1):
    def shapes(draw):
        n = draw(st.integers(nd_lo, nd_hi))
        return [tuple(draw(st.integers(lo, 4)) for _ in range(n))]
    return shapes


def _torch_vjp(T, f, shape, g):
    x0 = T.zeros(tuple(shape), dtype=g.dtype, requires_grad=True)
    return T.autograd.grad(f(x0), x0, g, create_graph=True)[0]


SPECS = [
    OpSpec("pad", lambda x, **kw: F.pad(x, **kw), ref_pad, _rows(_PADS),
           fuzz=Fuzz("pad", shapes=_shapes_min(2, 4), kwargs=_pad_fuzz_kwargs,
                     base=lambda ts, kw: [ts[0], kw["pad"]]),
           torch=lambda T, x, **kw: T.nn.functional.pad(x, **kw)),
    OpSpec("pad_backward", _pad_bwd,
           lambda g, input_size, **kw: ref_vjp(lambda x: ref_pad(x, **kw), input_size, g),
           _backward_samples(_PADS[:9], lambda x, kw: ref_pad(x, **kw)),
           fuzz=Fuzz("pad_backward", ("grad_output",), special=False,
                     shapes=lambda draw: [(draw(st.integers(1, 2)), 5, 6)],
                     kwargs=lambda draw, arrays: {
                         "input_size": arrays[0].shape[:1] + (3, 4), "pad": (1, 1, 1, 1),
                         "mode": draw(st.sampled_from(["constant", "reflect", "replicate",
                                                       "circular"]))},
                     base=lambda ts, kw: [ts[0], kw["input_size"][-2:], kw["pad"]]),
           torch=lambda T, g, input_size, **kw: _torch_vjp(
               T, lambda x: T.nn.functional.pad(x, **kw), input_size, g)),
    OpSpec("upsample_nearest", lambda x, **kw: F.interpolate(x, **kw), ref_interpolate,
           _rows(_INTERP[:5]), variant="nearest",
           fuzz=Fuzz("interpolate", shapes=_shapes_min(3, 4), kwargs=_interp_fuzz_kwargs,
                     base=lambda ts, kw: [ts[0], kw["size"]]),
           torch=lambda T, x, **kw: T.nn.functional.interpolate(x, **kw)),
    OpSpec("upsample_linear", lambda x, **kw: F.interpolate(x, **kw), ref_interpolate,
           _rows(_INTERP[5:]), variant="linear",
           fuzz=Fuzz("interpolate", shapes=_shapes_min(4, 4), kwargs=_interp_fuzz_kwargs,
                     base=lambda ts, kw: [ts[0], kw["size"]]),
           torch=lambda T, x, **kw: T.nn.functional.interpolate(x, **kw)),
    OpSpec("upsample_nearest_backward", _interp_bwd,
           lambda g, input_size, **kw: ref_vjp(lambda x: ref_interpolate(x, **kw),
                                               input_size, g),
           _backward_samples(_INTERP[:5], lambda x, kw: ref_interpolate(x, **kw)),
           fuzz=Fuzz("upsample_nearest_backward", ("grad_output",), special=False,
                     shapes=lambda draw: [(draw(st.integers(1, 2)), 2, 5, 3)],
                     kwargs=lambda draw, arrays: {"input_size": arrays[0].shape[:2] + (3, 4),
                                                  "size": (5, 3)},
                     base=lambda ts, kw: [ts[0], kw["input_size"][2:]]),
           torch=lambda T, g, input_size, **kw: _torch_vjp(
               T, lambda x: T.nn.functional.interpolate(x, **kw), input_size, g)),
    OpSpec("upsample_linear_backward", _interp_bwd,
           lambda g, input_size, **kw: ref_vjp(lambda x: ref_interpolate(x, **kw),
                                               input_size, g),
           _backward_samples(_INTERP[5:11], lambda x, kw: ref_interpolate(x, **kw)),
           fuzz=Fuzz("upsample_linear_backward", ("grad_output",), special=False,
                     shapes=lambda draw: [(draw(st.integers(1, 2)), 2, 5, 3)],
                     kwargs=lambda draw, arrays: {"input_size": arrays[0].shape[:2] + (3, 4),
                                                  "size": (5, 3), "mode": "bilinear"},
                     base=lambda ts, kw: [ts[0], kw["input_size"][2:]]),
           torch=lambda T, g, input_size, **kw: _torch_vjp(
               T, lambda x: T.nn.functional.interpolate(x, **kw), input_size, g)),
]
