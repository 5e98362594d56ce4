"""Convolution and pooling: Conv, ConvInteger, QLinearConv, ConvTranspose,
MaxPool (+ Indices), AveragePool, LpPool, global pools, MaxUnpool.

Spatial output sizes (``dk = (k - 1) * d + 1`` the dilated kernel, ``a = H +
pb + pe - dk`` the padded input minus the window):

- Conv (NOTSET / VALID): ``a // s + 1``; onnxruntime refuses a window larger
  than the padded input, so ``a >= 0`` (rule ``conv.window``).  SAME_UPPER /
  SAME_LOWER: ``ceil(H / s)``.
- Pools, floor mode: onnxruntime (and ONNX's own inference) compute
  ``(H + pads - dk) / s + 1`` in int64, which truncates toward zero: ``a // s + 1``
  for ``a >= 0``, ``1 - (-a) // s`` below (a window larger than the padded input
  gives 1 or 0, not an error); the size must be >= 0, i.e. ``a >= 1 - 2 * s``
  (rule ``pool.output_size``).  The spec's text says ``floor``: it differs from
  the runtime only where ``-s < a < 0``, and the runtime's rounding is the one
  kept.
- Pools, ceil mode (opset >= 10): ``c = ceil(a / s)``, ``c + 1`` windows, minus
  the last one when it would start in the right padding (``c * s >= H + pb``),
  as onnxruntime, PyTorch and the spec's text do.  For ``pe <= dk`` this is
  exactly ``ceil((H + min(pb, pb + pe - dk + s)) / s)``, a single CeilDiv; the
  size is >= 0 exactly when ``a >= 1 - 2 * s`` too.  onnxruntime computes the
  quotient in float32: exact while ``a < 2**24`` (a premise, rule
  ``pool.float_exact``); a constant size is computed the float32 way and, where
  that differs from the exact value, is a data symbol between the two.
- Pools, SAME_UPPER / SAME_LOWER: the spec says ``ceil(H / s)``; onnxruntime
  derives the padding from the undilated kernel, which is the same size without
  dilation.  With a dilation the two differ: a constant size is computed both
  ways (exact where they agree, else a data symbol between them), a symbolic one
  is a data symbol at most ``ceil(H / s)``.
- ConvTranspose: ``s * (H - 1) + output_padding + dk - pb - pe``, or the
  ``output_shape`` attribute; SAME: the spec says ``H * s``, onnxruntime clamps
  the total padding at 0 (``s * (H - 1) + op + dk`` when that is smaller): the
  size is exact where both agree, else a data symbol between them.

Preconditions (ONNX's inference and the spec): input rank >= 3; ``strides``,
``dilations``, ``kernel_shape`` positive, ``pads`` (and ConvTranspose's
``output_padding``, ``output_shape``) non-negative, each one value per spatial
axis (``pads`` two); ``pads`` and a non-NOTSET ``auto_pad`` not both given; the
weight's rank equal to the input's; ``group`` positive.
"""
from __future__ import annotations

import math

from ..lazy import numpy as np
from ..lazy import sympy

from .. import irtypes as ir

from .. import expr as E
from ..constraints import eq, ge, lt
from ..printing import show
from ..registry import register
from .common import unify
from .values import sign_of

_AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")
_SAME = ("SAME_UPPER", "SAME_LOWER")
# onnxruntime's ceil-mode pool size is computed in float32: exact while a < 2**24
_F32_EXACT = 2 ** 24


def _ints(ctx, name, n, default, minimum, fam="conv", axes=None):
    """Attribute ``name``: ``n`` ints each >= ``minimum`` (``default`` each when absent or
    empty, as onnxruntime reads it).  ``axes``: the number of spatial axes, for the sentence."""
    v = ctx.attr(name)
    if v is None or len(v) == 0:
        return [default] * n
    v = [int(x) for x in v]
    axes = n if axes is None else axes
    if len(v) != n:
        per = "one value per spatial axis" if n == axes else f"{n // max(axes, 1)} values per spatial axis"
        ctx.invalid(f"{fam}.{name}", f"{ctx.op_type} {name} {v} has {len(v)} values but the input has {axes} "
                    f"spatial axes: it needs {n} ({per})", f"give {name} {n} values")
    if any(x < minimum for x in v):
        what = "positive" if minimum == 1 else "non-negative" if minimum == 0 else f"at least {minimum}"
        ctx.invalid(f"{fam}.{name}", f"{ctx.op_type} {name} {v} must be {what}",
                    f"make every value of {name} {what}")
    return v


def _auto_pad(ctx, fam):
    ap = ctx.attr("auto_pad", "NOTSET")
    if isinstance(ap, bytes):
        ap = ap.decode()
    ap = str(ap)
    if ap == "":
        return "NOTSET"          # (onnxruntime reads an empty auto_pad as NOTSET)
    if ap not in _AUTO_PADS:
        ctx.invalid(f"{fam}.auto_pad", f"{ctx.op_type} auto_pad '{ap}' is not one of {', '.join(_AUTO_PADS)}",
                    "set auto_pad to NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    return ap


def _window_params(ctx, n, fam):
    """strides, dilations, (pads begin, pads end), auto_pad for ``n`` spatial axes."""
    strides = _ints(ctx, "strides", n, 1, 1, fam)
    dil = _ints(ctx, "dilations", n, 1, 1, fam)
    ap = _auto_pad(ctx, fam)
    given = ctx.attr("pads")
    pads = _ints(ctx, "pads", 2 * n, 0, 0, fam, axes=n)
    if given is not None and len(given) and ap != "NOTSET":
        ctx.invalid(f"{fam}.pads_auto_pad", f"{ctx.op_type} has both pads {pads} and auto_pad {ap}: the spec lets "
                    "a node give only one of them", "remove pads, or set auto_pad to NOTSET")
    return strides, dil, pads[:n], pads[n:], ap


def _tdiv(a: int, b: int) -> int:
    """int64 division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _f32_ceil(a: int, s: int) -> int:
    """onnxruntime's ceil-mode count: ceil(float(a) / stride) + 1, the quotient in float32
    (exact while |a| < 2**24: a float32 quotient of exact integers never crosses an integer)."""
    return int(math.ceil(float(np.float32(np.float32(a) / np.float32(s))))) + 1


def _ort_pool_size(h, k, s, d, pb, pe, ap, ceil_mode):
    """A pool's output size as onnxruntime computes it on constants (negative: it refuses)."""
    dk = (k - 1) * d + 1
    if ap in _SAME:
        c = -(-h // s)
        pad = (c - 1) * s + k - h         # (from the undilated kernel)
        pb = _tdiv(pad, 2) if ap == "SAME_UPPER" else _tdiv(pad + 1, 2)
        pe = pad - pb
    a = h + pb + pe - dk
    if not ceil_mode:
        return _tdiv(a, s) + 1
    out = _f32_ceil(a, s)
    if (out - 1) * s >= h + pb:
        out -= 1
    return out


def _exact_pool_size(h, k, s, d, pb, pe, ap, ceil_mode):
    """The size by the spec's text with exact arithmetic and the runtime's rounding."""
    if ap in _SAME:
        return -(-h // s)
    a = h + pb + pe - (k - 1) * d - 1
    if not ceil_mode:
        return _tdiv(a, s) + 1
    out = -(-a // s) + 1
    if (out - 1) * s >= h + pb:
        out -= 1
    return out


def _between(ctx, i, lo, hi, why):
    """A size that is ``lo`` or ``hi`` (the spec and onnxruntime disagree): exact when equal,
    else a data symbol ``lo <= s <= hi``."""
    if lo == hi:
        return lo
    ctx.warn(f"{ctx.op_type} spatial axis {i}: {why}; the size is kept as a data symbol between {lo} and {hi}")
    s = ctx.data_symbol(f"{ctx.name}_sp{i}", hi, f"{ctx.op_type} spatial axis {i}: {why}")
    if lo > 0:
        ctx.require(ge(s, lo), f"{ctx.op_type.lower()}.size_range",
                    f"{ctx.op_type} spatial axis {i}: the size is at least {lo} ({why})")
    return s


def _conv_out(ctx, i, h, k, s, d, pb, pe, ap):
    """Conv's output size on spatial axis ``i``."""
    if ap in _SAME:
        return E.ceildiv(h, s)
    dk = E.add(E.mul(E.sub(k, 1), d), 1)
    a = E.sub(E.add(h, pb + pe), dk)
    if isinstance(a, int):
        if a < 0:
            ctx.invalid("conv.window", f"{ctx.op_type} spatial axis {i}: the padded input {show(E.add(h, pb + pe))} "
                        f"is smaller than the dilated kernel {show(dk)}",
                        "pad the input or use a smaller kernel, stride or dilation")
    else:
        ctx.require(ge(E.add(h, pb + pe), dk), "conv.window",
                    lambda: f"{ctx.op_type} spatial axis {i}: the padded input {show(E.add(h, pb + pe))} must be at "
                            f"least the dilated kernel {show(dk)}")
    return E.add(E.floordiv(a, s), 1)


def _pool_out(ctx, i, h, k, s, d, pb, pe, ap, ceil_mode):
    """A pool's output size on spatial axis ``i`` (``k``, ``s``, ``d`` ints)."""
    dk = (k - 1) * d + 1
    if isinstance(h, int):
        ort = _ort_pool_size(h, k, s, d, pb, pe, ap, ceil_mode)
        spec = _exact_pool_size(h, k, s, d, pb, pe, ap, ceil_mode)
        if ap not in _SAME and max(ort, spec) < 0:
            ctx.invalid("pool.output_size", f"{ctx.op_type} spatial axis {i}: an input of size {h} with pads "
                        f"{pb} + {pe}, kernel {k}, stride {s} and dilation {d} gives the negative size {ort}",
                        "pad the input or use a smaller kernel or dilation")
        why = ("onnxruntime pads for the undilated kernel where the spec says ceil(H / stride)" if ap in _SAME
               else "onnxruntime computes the ceil-mode size in float32")
        return _between(ctx, i, max(min(ort, spec), 0), max(ort, spec), why)
    if ap in _SAME:
        spec = E.ceildiv(h, s)
        if dk != k:
            ctx.warn(f"{ctx.op_type} with auto_pad {ap} and dilation {d}: onnxruntime derives the padding from the "
                     f"undilated kernel, the spec says ceil(H / stride); spatial axis {i} kept as a data symbol")
            return ctx.data_symbol(f"{ctx.name}_sp{i}", spec,
                                   f"{ctx.op_type} {ap} dilated size of spatial axis {i}: at most ceil(H / stride)")
        if ceil_mode:
            ctx.require(lt(h, _F32_EXACT), "pool.float_exact",
                        lambda: f"{ctx.op_type} spatial axis {i}: onnxruntime computes the ceil-mode size in float32, "
                                f"exact while {show(h)} < 2**24")
        return spec
    a = E.sub(E.add(h, pb + pe), dk)
    if not ceil_mode:
        return trunc_window(ctx, i, a, s, "pool.output_size")
    ctx.require(ge(a, 1 - 2 * s), "pool.output_size",
                lambda: f"{ctx.op_type} spatial axis {i}: the size (ceil(({show(E.add(h, pb + pe))} - {dk}) / {s}) "
                        f"+ 1, less a window starting in the end padding) must not be negative")
    ctx.require(lt(a, _F32_EXACT), "pool.float_exact",
                lambda: f"{ctx.op_type} spatial axis {i}: onnxruntime computes the ceil-mode size in float32, "
                        f"exact while {show(a)} < 2**24")
    if pe <= dk:
        return E.ceildiv(E.add(h, min(pb, pb + pe - dk + s)), s)
    c = E.ceildiv(a, s)
    return E.norm(sympy.Piecewise((E.to_sympy(c), sympy.Ge(E.to_sympy(E.mul(c, s)), E.to_sympy(E.add(h, pb)))),
                                  (E.to_sympy(E.add(c, 1)), True)))


def trunc_window(ctx, i, a, s: int, rule: str):
    """``1 + trunc(a / s)``: the number of windows of a pool (or DeformConv) when the padded
    input exceeds the dilated kernel by ``a``, with onnxruntime's int64 division, which
    truncates toward zero (a window larger than the padded input gives 1 or 0).  The size
    must not be negative: ``a >= 1 - 2 * s``."""
    if isinstance(a, int):
        out = _tdiv(a, s) + 1
        if out < 0:
            ctx.invalid(rule, f"{ctx.op_type} spatial axis {i}: the padded input is {-a} smaller than the dilated "
                        f"kernel, which with stride {s} gives the negative size {out}",
                        "pad the input or use a smaller kernel or dilation")
        return out
    ctx.require(ge(a, 1 - 2 * s), rule,
                lambda: f"{ctx.op_type} spatial axis {i}: the size 1 + trunc(({show(a)}) / {s}) must not be negative")
    if s == 1:
        return E.add(a, 1)
    sign = sign_of(ctx, a)
    below = E.sub(1, E.floordiv(E.neg(a), s))       # 1 + trunc(a / s) for a < 0
    if sign == "nonneg":
        return E.add(E.floordiv(a, s), 1)
    if sign == "neg":
        return below
    return E.by_sign(a, E.add(E.floordiv(a, s), 1), below)


def _sliding(ctx, xs, kernel, ceil_mode, pool):
    """Output spatial sizes of a sliding-window op on input shape ``xs``."""
    n = len(xs) - 2
    fam = "pool" if pool else "conv"
    if len(kernel) != n:
        ctx.invalid(f"{fam}.kernel_shape", f"{ctx.op_type} kernel has {len(kernel)} spatial axes but the input "
                    f"(rank {len(xs)}) has {n}", f"give kernel_shape {n} values")
    strides, dil, pb, pe, ap = _window_params(ctx, n, fam)
    if pool:
        return [_pool_out(ctx, i, xs[2 + i], int(kernel[i]), strides[i], dil[i], pb[i], pe[i], ap, ceil_mode)
                for i in range(n)]
    return [_conv_out(ctx, i, xs[2 + i], kernel[i], strides[i], dil[i], pb[i], pe[i], ap) for i in range(n)]


# ---------------------------------------------------------------- Conv
def _conv_inputs(ctx, xi, wi, fam="conv"):
    """X and W shapes and the group, with the preconditions Conv and ConvTranspose share."""
    xs, ws = ctx.shape(xi), ctx.shape(wi)
    if xs is not None and len(xs) < 3:
        ctx.invalid(f"{fam}.rank", f"{ctx.op_type} input X has rank {len(xs)}: it needs rank >= 3 "
                    "(N, C, at least one spatial axis)", "give X a batch, a channel and a spatial axis")
    if ws is not None and len(ws) < 3:
        ctx.invalid(f"{fam}.weight_rank", f"{ctx.op_type} weight W has rank {len(ws)}: it needs rank >= 3 "
                    "(two channel axes and at least one kernel axis)", "give W one kernel axis per spatial axis")
    if ws is not None and xs is not None and len(ws) != len(xs):
        ctx.invalid(f"{fam}.weight_rank", f"{ctx.op_type} weight W has rank {len(ws)} ({len(ws) - 2} kernel axes) "
                    f"but X has rank {len(xs)} ({len(xs) - 2} spatial axes): they must be equal",
                    "give W one kernel axis per spatial axis of X")
    group = int(ctx.attr("group", 1))
    if group < 1:
        ctx.invalid(f"{fam}.group", f"{ctx.op_type} group {group} must be positive", "set group to 1 or more")
    return xs, ws, group


def kernel_dims(ctx, ws, rule: str) -> list:
    """The kernel's spatial sizes W.shape[2:], each unified with ``kernel_shape`` when given,
    each positive."""
    fam = rule.split(".")[0]
    kernel = list(ws[2:])
    kattr = ctx.attr("kernel_shape")
    if kattr is not None:
        kattr = [int(k) for k in kattr]
        if len(kattr) != len(kernel):
            ctx.invalid(f"{fam}.kernel_shape", f"{ctx.op_type} kernel_shape {kattr} has {len(kattr)} values but W has "
                        f"{len(kernel)} kernel axes", f"give kernel_shape {len(kernel)} values (W's kernel axes)")
        if any(k < 1 for k in kattr):
            ctx.invalid(f"{fam}.kernel_shape", f"{ctx.op_type} kernel_shape {kattr} must be positive",
                        "make every value of kernel_shape positive")
        for i, (kw, ka) in enumerate(zip(kernel, kattr)):
            kernel[i] = unify(ctx, kw, ka, rule,
                              lambda: f"{ctx.op_type} kernel axis {i}: W's size {show(kw)} must equal "
                                      f"kernel_shape {ka}")
    for i, k in enumerate(kernel):
        if isinstance(k, int):
            if k < 1:
                ctx.invalid(f"{fam}.kernel_shape", f"{ctx.op_type} kernel axis {i} of W has size {k}: a kernel size "
                            "must be positive", "give W a positive size on every kernel axis")
        else:
            ctx.require(ge(k, 1), f"{fam}.kernel_shape", lambda: f"{ctx.op_type} kernel axis {i} of W "
                        f"({show(k)}) must be positive")
    return kernel


def _bias(ctx, bi, m, fam):
    if bi is None or not ctx.has_input(bi):
        return
    bs = ctx.shape(bi)
    if bs is None:
        return
    if len(bs) != 1:
        ctx.invalid(f"{fam}.bias", f"{ctx.op_type} bias B has rank {len(bs)}: it must be 1-D (one value per output "
                    "channel)", "give B the shape [output channels]")
    unify(ctx, bs[0], m, f"{fam}.bias",
          f"{ctx.op_type} bias length {show(bs[0])} must equal the output channels {show(m)}")


def _conv(ctx, xi, wi, bi, dtype):
    xs, ws, group = _conv_inputs(ctx, xi, wi)
    if xs is None or ws is None:
        if xs is not None or ws is not None:
            # (the attributes' own preconditions still hold, whatever the other rank)
            n = len(xs if xs is not None else ws) - 2
            _window_params(ctx, n, "conv")
        ctx.set_output(0, None, dtype)
        return
    kernel = kernel_dims(ctx, ws, "conv.kernel")
    m = ws[0]
    cin = E.mul(ws[1], group)
    unify(ctx, xs[1], cin, "conv.channels",
          f"{ctx.op_type} channels: X has C = {show(xs[1])}, W expects W.shape[1] * group = "
          f"{show(ws[1])} * {group} = {show(cin)}")
    if group != 1:
        ctx.require(eq(E.mod(m, group), 0), "conv.group",
                    f"{ctx.op_type} output channels M = {show(m)} must be divisible by group {group}")
    _bias(ctx, bi, m, "conv")
    spatial = _sliding(ctx, xs, kernel, False, False)
    ctx.set_output(0, (xs[0], ctx.store.canon(m), *spatial), dtype)


@register("", "Conv", since_version=1)
def conv(ctx):
    ctx.check_inputs(2, 3)
    _conv(ctx, 0, 1, 2, ctx.dtype(0))


@register("", "ConvInteger", since_version=10)
def conv_integer(ctx):
    ctx.check_inputs(2, 4)
    _conv(ctx, 0, 1, None, ir.DataType.INT32)


@register("", "QLinearConv", since_version=10)
def qlinear_conv(ctx):
    # x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B
    ctx.check_inputs(8, 9)
    _conv(ctx, 0, 3, 8, ctx.dtype(7) or ctx.dtype(0))


# ---------------------------------------------------------------- ConvTranspose
def _transpose_out(ctx, i, h, k, s, d, pb, pe, op, ap):
    dk = E.add(E.mul(E.sub(k, 1), d), 1)
    full = E.add(E.mul(s, E.sub(h, 1)), E.add(op, dk))   # s*(H-1) + op + dk
    if ap in _SAME:
        # the spec: H * s; onnxruntime: the total padding full - H*s clamped at 0
        spec = E.mul(h, s)
        slack = E.sub(E.add(op, dk), s)                     # full - H*s
        if isinstance(slack, int) and slack >= 0:
            return spec
        if isinstance(slack, int) and isinstance(h, int):
            return _between(ctx, i, full, spec, "the spec says H * stride, onnxruntime clamps the total padding at 0")
        ctx.warn(f"ConvTranspose {ap} spatial axis {i}: the spec says H * stride, onnxruntime gives "
                 f"{show(full)} when that is smaller; kept as a data symbol")
        return ctx.data_symbol(f"{ctx.name}_sp{i}", spec, f"ConvTranspose {ap} size of spatial axis {i}: at most "
                               "H * stride")
    out = E.sub(full, pb + pe)
    if isinstance(out, int):
        if out < 0:
            ctx.invalid("convtranspose.output_size", f"ConvTranspose spatial axis {i}: stride {show(s)} * "
                        f"({show(h)} - 1) + output_padding {show(op)} + dilated kernel {show(dk)} - pads {pb + pe} "
                        f"gives the negative size {out}", "use smaller pads")
    else:
        ctx.require(ge(out, 0), "convtranspose.output_size",
                    lambda: f"ConvTranspose spatial axis {i}: the size {show(out)} must not be negative")
    return out


@register("", "ConvTranspose", since_version=1)
def conv_transpose(ctx):
    ctx.check_inputs(2, 3)
    fam = "convtranspose"
    xs, ws, group = _conv_inputs(ctx, 0, 1, fam)
    if xs is None or ws is None:
        if xs is not None or ws is not None:
            n = len(xs if xs is not None else ws) - 2
            _transpose_params(ctx, n)
        ctx.set_output(0, None, ctx.dtype(0))
        return
    n = len(xs) - 2
    kernel = kernel_dims(ctx, ws, "convtranspose.kernel")
    unify(ctx, xs[1], ws[0], "convtranspose.channels",
          f"ConvTranspose channels: X has C = {show(xs[1])}, W.shape[0] = {show(ws[0])}; they must be equal")
    if group != 1:
        ctx.require(eq(E.mod(xs[1], group), 0), "convtranspose.group",
                    f"ConvTranspose input channels C = {show(xs[1])} must be divisible by group {group}")
    m = E.mul(ws[1], group)
    _bias(ctx, 2, m, fam)
    strides, dil, pb, pe, ap, opad, oshape = _transpose_params(ctx, n)
    if oshape is not None:
        # (the pads then come from output_shape: total = s * (H - 1) + op + dk - out; ONNX's own
        # backend test gives a negative total (output_shape [10, 8], stride 3, H 3, k 3): no
        # relation to the input is a precondition of the spec; onnxruntime's out < s * H + dk
        # is its own limit)
        spatial = oshape
    else:
        spatial = [_transpose_out(ctx, i, xs[2 + i], kernel[i], strides[i], dil[i], pb[i], pe[i], opad[i], ap)
                   for i in range(n)]
    ctx.set_output(0, (xs[0], m, *spatial), ctx.dtype(0))


def _transpose_params(ctx, n):
    """ConvTranspose's window attributes, output_padding and output_shape (or None)."""
    fam = "convtranspose"
    strides, dil, pb, pe, ap = _window_params(ctx, n, fam)
    opad = _ints(ctx, "output_padding", n, 0, 0, fam)
    for i, (op, s, d) in enumerate(zip(opad, strides, dil)):
        if op >= max(s, d):
            ctx.invalid("convtranspose.output_padding", f"ConvTranspose output_padding {opad} axis {i}: {op} must be "
                        f"less than the stride {s} or the dilation {d}",
                        f"make output_padding[{i}] smaller than {max(s, d)}")
    oshape = ctx.attr("output_shape")
    if oshape is not None and len(oshape) == 0:
        oshape = None
    if oshape is not None:
        oshape = _ints(ctx, "output_shape", n, 0, 0, fam)
    return strides, dil, pb, pe, ap, opad, oshape


# ---------------------------------------------------------------- pools
def _pool(ctx, ceil_ok: bool):
    ctx.check_inputs(1, 1)
    xs = ctx.shape(0)
    kernel = [int(k) for k in ctx.require_attr("kernel_shape")]
    if any(k < 1 for k in kernel):
        ctx.invalid("pool.kernel_shape", f"{ctx.op_type} kernel_shape {kernel} must be positive",
                    "make every value of kernel_shape positive")
    if xs is None:
        _window_params(ctx, len(kernel), "pool")
        return None
    if len(xs) < 3:
        ctx.invalid("pool.rank", f"{ctx.op_type} input X has rank {len(xs)}: it needs rank >= 3 (N, C, at least one "
                    "spatial axis)", "give X a batch, a channel and a spatial axis")
    if len(xs) != len(kernel) + 2:
        ctx.invalid("pool.kernel_shape", f"{ctx.op_type} kernel_shape {kernel} has {len(kernel)} values but the input "
                    f"(rank {len(xs)}) has {len(xs) - 2} spatial axes", f"give kernel_shape {len(xs) - 2} values")
    ceil_mode = bool(int(ctx.attr("ceil_mode", 0))) if ceil_ok else False
    return (xs[0], xs[1], *_sliding(ctx, xs, kernel, ceil_mode, True))


def _maxpool(ctx):
    out = _pool(ctx, ctx.opset is None or ctx.opset >= 10)
    ctx.set_output(0, out, ctx.dtype(0))
    if ctx.has_output(1):
        ctx.set_output(1, out, ir.DataType.INT64)


def _avgpool(ctx):
    ctx.set_output(0, _pool(ctx, ctx.opset is None or ctx.opset >= 10), ctx.dtype(0))


def _lppool(ctx):
    ctx.set_output(0, _pool(ctx, ctx.opset is None or ctx.opset >= 18), ctx.dtype(0))


register("", "MaxPool", since_version=1)(_maxpool)
register("", "AveragePool", since_version=1)(_avgpool)
register("", "LpPool", since_version=1)(_lppool)


def _global_pool(ctx):
    ctx.check_inputs(1, 1)
    xs = ctx.shape(0)
    if xs is not None and len(xs) < 2:
        ctx.invalid("globalpool.rank", f"{ctx.op_type} input has rank {len(xs)}: it needs rank >= 2 (N, C, ...)",
                    "give X a batch and a channel axis")
    out = None if xs is None else (xs[0], xs[1]) + (1,) * (len(xs) - 2)
    ctx.set_output(0, out, ctx.dtype(0))


for _op in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"):
    register("", _op, since_version=1)(_global_pool)


@register("", "MaxUnpool", since_version=9)
def max_unpool(ctx):
    ctx.check_inputs(2, 3)
    fam = "maxunpool"
    xs = ctx.shape(0)
    kernel = [int(k) for k in ctx.require_attr("kernel_shape")]
    n = len(kernel)
    if any(k < 1 for k in kernel):
        ctx.invalid("maxunpool.kernel_shape", f"MaxUnpool kernel_shape {kernel} must be positive",
                    "make every value of kernel_shape positive")
    if xs is not None and len(xs) != n + 2:
        ctx.invalid("maxunpool.kernel_shape", f"MaxUnpool kernel_shape {kernel} has {n} values but the input "
                    f"(rank {len(xs)}) has {len(xs) - 2} spatial axes", f"give kernel_shape {len(xs) - 2} values")
    strides = _ints(ctx, "strides", n, 1, 1, fam)
    pads = _ints(ctx, "pads", 2 * n, 0, 0, fam, axes=n)
    ish = ctx.shape(1)
    if ish is not None and (len(ish) < 2 or (xs is not None and len(ish) != len(xs))):
        ctx.invalid("maxunpool.indices", f"MaxUnpool indices I have rank {len(ish)}"
                    + (f" but X has rank {len(xs)}: I must have X's shape" if xs is not None else
                       ": I needs rank >= 2 (N, C, ...)"), "give I the shape of X (MaxPool's Indices output)")
    if xs is not None and ish is not None:
        for a, (dx, di) in enumerate(zip(xs, ish)):
            unify(ctx, dx, di, "maxunpool.indices",
                  f"MaxUnpool axis {a}: X is {show(dx)} and I is {show(di)}; they must be equal")
    if ctx.has_input(2):
        s2 = ctx.shape(2)
        if s2 is not None and len(s2) != 1:
            ctx.invalid("maxunpool.output_shape", f"MaxUnpool output_shape has rank {len(s2)}: it must be 1-D",
                        "give output_shape as a 1-D tensor")
        r = s2[0] if s2 is not None and isinstance(s2[0], int) else None
        if r is not None and xs is not None and r != len(xs):
            ctx.invalid("maxunpool.output_shape", f"MaxUnpool output_shape has {r} values but X has rank {len(xs)}",
                        f"give output_shape {len(xs)} values")
        v = ctx.value(2)
        if v is not None and all(x is not None for x in v) and (xs is None or len(v) == len(xs)):
            if any(isinstance(x, int) and x < 0 for x in v):
                ctx.invalid("maxunpool.output_shape", f"MaxUnpool output_shape {list(v)} has a negative value",
                            "give output_shape non-negative values")
            ctx.set_output(0, tuple(v), ctx.dtype(0))
            return
        r = r if r is not None else (len(xs) if xs is not None else None)
        if r is None:
            ctx.set_output(0, None, ctx.dtype(0))
            return
        ctx.set_output(0, tuple(ctx.unknown_dim(f"{ctx.name}_d{a}") for a in range(r)), ctx.dtype(0))
        return
    if xs is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    spatial = []
    for i in range(n):
        o = E.sub(E.add(E.mul(E.sub(xs[2 + i], 1), strides[i]), kernel[i]), pads[i] + pads[n + i])
        if isinstance(o, int):
            if o < 0:
                ctx.invalid("maxunpool.output_size", f"MaxUnpool spatial axis {i}: (H - 1) * stride + kernel - pads = "
                            f"{o} is negative", "use smaller pads")
        else:
            ctx.require(ge(o, 0), "maxunpool.output_size",
                        lambda: f"MaxUnpool spatial axis {i}: the size {show(o)} must not be negative")
        spatial.append(o)
    ctx.set_output(0, (xs[0], xs[1], *spatial), ctx.dtype(0))
