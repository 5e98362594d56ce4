"""Convolution and pooling: Conv, ConvInteger, QLinearConv, ConvTranspose,
MaxPool (+ Indices), AveragePool, LpPool, global pools, MaxUnpool.

Spatial output sizes (``dk = (k - 1) * d + 1`` the dilated kernel, ``L = H +
pb + pe`` the padded input):

- NOTSET / VALID (VALID = zero pads), floor mode: ``(L - dk) // s + 1``;
  the op needs ``L >= dk`` (rule ``conv.window``).
- ceil mode (pools, opset >= 10): ``c = ceil((L - dk) / s)``, ``c + 1``
  windows, minus the last one when it would start in the right padding
  (``c * s >= H + pb``), as onnxruntime and PyTorch do.  For ``pe <= dk``
  this is exactly ``ceil((H + min(pb, pb + pe - dk + s)) / s)`` (both
  candidates are ``ceil((H + const) / s)`` and the drop rule takes the
  smaller), a single integer-exact CeilDiv.
- SAME_UPPER / SAME_LOWER: ``ceil(H / s)``.  (onnxruntime's pools compute
  SAME pads from the undilated kernel, so a dilated SAME pool has no exact
  formula we trust: its dims become data symbols.)
- ConvTranspose: ``s * (H - 1) + output_padding + dk - pb - pe``, or the
  ``output_shape`` attribute; SAME gives ``H * s`` (onnxruntime clamps the
  total padding at 0, so it is ``s * (H - 1) + op + dk`` when that is smaller).
"""
from __future__ import annotations

from .. import irtypes as ir

from .. import expr as E
from ..constraints import eq, ge
from ..printing import show
from ..registry import register
from .common import unify

_AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


def _ints(ctx, name, n, default, minimum):
    v = ctx.attr(name)
    if v is None:
        return [default] * n
    v = [int(x) for x in v]
    if len(v) != n:
        ctx.fail(f"attribute '{name}' has {len(v)} values, expected {n} (one per spatial axis)")
    if any(x < minimum for x in v):
        ctx.fail(f"attribute '{name}' = {v} has a value below {minimum}")
    return v


def _auto_pad(ctx):
    ap = ctx.attr("auto_pad", "NOTSET")
    if isinstance(ap, bytes):
        ap = ap.decode()
    ap = str(ap)
    if ap not in _AUTO_PADS:
        ctx.fail(f"auto_pad '{ap}' is not one of {', '.join(_AUTO_PADS)}")
    return ap


def _window_params(ctx, n, kernel):
    """strides, dilations, (pads begin, pads end), auto_pad for ``n`` spatial axes."""
    strides = _ints(ctx, "strides", n, 1, 1)
    dil = _ints(ctx, "dilations", n, 1, 1)
    ap = _auto_pad(ctx)
    pads = ctx.attr("pads")
    if pads is None or ap != "NOTSET":
        pads = [0] * (2 * n)
    pads = [int(p) for p in pads]
    if len(pads) != 2 * n:
        ctx.fail(f"attribute 'pads' has {len(pads)} values, expected {2 * n} (begin and end per spatial axis)")
    if any(p < 0 for p in pads):
        ctx.fail(f"attribute 'pads' = {pads} has a negative value")
    return strides, dil, pads[:n], pads[n:], ap


def _spatial_out(ctx, i, h, k, s, d, pb, pe, ap, ceil_mode, pool):
    """Output size of spatial axis ``i`` of a sliding window op."""
    dk = E.add(E.mul(E.sub(k, 1), d), 1)
    if ap in ("SAME_UPPER", "SAME_LOWER"):
        if pool and d != 1:
            ctx.warn(f"{ctx.op_type} with auto_pad {ap} and dilation {d}: onnxruntime derives the padding "
                     "from the undilated kernel; spatial axis kept as a data symbol")
            return ctx.data_symbol(f"{ctx.name}_sp{i}", None, f"{ctx.op_type} {ap} dilated size of spatial axis {i}")
        return E.ceildiv(h, s)
    padded = E.add(h, pb + pe)
    ctx.require(ge(padded, dk), "conv.window",
                lambda: f"{ctx.op_type} spatial axis {i}: the padded input {show(padded)} must be at least "
                        f"the dilated kernel {show(dk)}")
    if not ceil_mode:
        return E.add(E.floordiv(E.sub(padded, dk), s), 1)
    if not (isinstance(dk, int) and pe <= dk):
        ctx.warn(f"{ctx.op_type} ceil_mode with end padding {pe} larger than the kernel: spatial axis {i} "
                 "kept as a data symbol")
        return ctx.data_symbol(f"{ctx.name}_sp{i}", None, f"{ctx.op_type} ceil-mode size of spatial axis {i}")
    return E.ceildiv(E.add(h, min(pb, pb + pe - dk + s)), s)


def _sliding(ctx, xs, kernel, ceil_mode, pool):
    n = len(xs) - 2
    if len(kernel) != n:
        ctx.fail(f"kernel has {len(kernel)} spatial axes but the input has {n}")
    strides, dil, pb, pe, ap = _window_params(ctx, n, kernel)
    return [_spatial_out(ctx, i, xs[2 + i], kernel[i], strides[i], dil[i], pb[i], pe[i], ap, ceil_mode, pool)
            for i in range(n)]


# ---------------------------------------------------------------- Conv
def _conv_inputs(ctx, xi, wi):
    """X and W shapes and the group, with the preconditions Conv and ConvTranspose share."""
    xs, ws = ctx.shape(xi), ctx.shape(wi)
    if xs is not None and len(xs) < 3:
        ctx.fail(f"{ctx.op_type} input X must have rank >= 3 (N, C, spatial...), has rank {len(xs)}")
    if ws is not None and xs is not None and len(ws) != len(xs):
        ctx.fail(f"{ctx.op_type} weight W has rank {len(ws)} but X has rank {len(xs)}")
    group = int(ctx.attr("group", 1))
    if group < 1:
        ctx.fail(f"group must be >= 1, is {group}")
    return xs, ws, group


def kernel_dims(ctx, ws, rule: str) -> list:
    """The kernel's spatial sizes W.shape[2:], each unified with ``kernel_shape`` when given."""
    kernel = list(ws[2:])
    kattr = ctx.attr("kernel_shape")
    if kattr is not None:
        if len(kattr) != len(kernel):
            ctx.fail(f"kernel_shape {list(kattr)} has {len(kattr)} axes, W has {len(kernel)} spatial axes")
        for i, (kw, ka) in enumerate(zip(kernel, kattr)):
            kernel[i] = unify(ctx, kw, int(ka), rule,
                              lambda: f"{ctx.op_type} kernel axis {i}: W's size {show(kw)} must equal "
                                      f"kernel_shape {int(ka)}")
    return kernel


def _conv(ctx, xi, wi, bi, dtype):
    xs, ws, group = _conv_inputs(ctx, xi, wi)
    if xs is None or ws is None:
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
    if bi is not None and ctx.has_input(bi):
        bs = ctx.shape(bi)
        if bs is not None:
            if len(bs) != 1:
                ctx.fail(f"{ctx.op_type} bias B must have rank 1, has rank {len(bs)}")
            unify(ctx, bs[0], m, "conv.bias",
                  f"{ctx.op_type} bias length {show(bs[0])} must equal the output channels M = {show(m)}")
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
    if ap in ("SAME_UPPER", "SAME_LOWER"):
        slack = E.sub(E.add(op, dk), s)                     # full - H*s
        if isinstance(slack, int):
            return E.mul(h, s) if slack >= 0 else full
        return E.smin(E.mul(h, s), full)
    return E.sub(full, pb + pe)


@register("", "ConvTranspose", since_version=1)
def conv_transpose(ctx):
    ctx.check_inputs(2, 3)
    xs, ws, group = _conv_inputs(ctx, 0, 1)
    if xs is None or ws is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    n = len(xs) - 2
    kernel = kernel_dims(ctx, ws, "conv.kernel")
    unify(ctx, xs[1], ws[0], "convtranspose.channels",
          f"ConvTranspose channels: X has C = {show(xs[1])}, W.shape[0] = {show(ws[0])}; they must be equal")
    m = E.mul(ws[1], group)
    if ctx.has_input(2) and ctx.shape(2) is not None:
        bs = ctx.shape(2)
        if len(bs) != 1:
            ctx.fail(f"ConvTranspose bias B must have rank 1, has rank {len(bs)}")
        unify(ctx, bs[0], m, "conv.bias",
              f"ConvTranspose bias length {show(bs[0])} must equal the output channels {show(m)}")
    strides, dil, pb, pe, ap = _window_params(ctx, n, kernel)
    opad = _ints(ctx, "output_padding", n, 0, 0)
    oshape = ctx.attr("output_shape")
    if oshape is not None:
        oshape = [int(v) for v in oshape]
        if len(oshape) not in (n, n + 2):
            ctx.fail(f"output_shape {oshape} must have {n} values (one per spatial axis)")
        spatial = oshape[-n:]
        if any(v < 0 for v in spatial):
            ctx.fail(f"output_shape {oshape} has a negative value")
    else:
        spatial = [_transpose_out(ctx, i, xs[2 + i], kernel[i], strides[i], dil[i], pb[i], pe[i], opad[i], ap)
                   for i in range(n)]
    ctx.set_output(0, (xs[0], m, *spatial), ctx.dtype(0))


# ---------------------------------------------------------------- pools
def _pool(ctx, ceil_ok: bool):
    ctx.check_inputs(1, 1)
    xs = ctx.shape(0)
    kernel = [int(k) for k in ctx.require_attr("kernel_shape")]
    if any(k < 1 for k in kernel):
        ctx.fail(f"kernel_shape {kernel} has a value below 1")
    if xs is None:
        return None
    if len(xs) != len(kernel) + 2:
        ctx.fail(f"{ctx.op_type} input has rank {len(xs)} but kernel_shape has {len(kernel)} axes "
                 f"(expected rank {len(kernel) + 2})")
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
        ctx.fail(f"{ctx.op_type} input must have rank >= 2 (N, C, ...), has rank {len(xs)}")
    out = None if xs is None else (xs[0], xs[1]) + (1,) * (len(xs) - 2)
    ctx.set_output(0, out, ctx.dtype(0))


for _op in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"):
    register("", _op, since_version=1)(_global_pool)


@register("", "MaxUnpool", since_version=9)
def max_unpool(ctx):
    ctx.check_inputs(2, 3)
    xs = ctx.shape(0)
    kernel = [int(k) for k in ctx.require_attr("kernel_shape")]
    if xs is not None and len(xs) != len(kernel) + 2:
        ctx.fail(f"MaxUnpool input has rank {len(xs)} but kernel_shape has {len(kernel)} axes")
    ish = ctx.shape(1)
    if xs is not None and ish is not None:
        if len(ish) != len(xs):
            ctx.fail(f"MaxUnpool indices have rank {len(ish)}, X has rank {len(xs)}")
        for a, (dx, di) in enumerate(zip(xs, ish)):
            unify(ctx, dx, di, "maxunpool.indices",
                  f"MaxUnpool axis {a}: X is {show(dx)} and I is {show(di)}; they must be equal")
    if ctx.has_input(2):
        v = ctx.value(2)
        if v is not None and all(x is not None for x in v) and xs is not None and len(v) == len(xs):
            ctx.set_output(0, tuple(v), ctx.dtype(0))
            return
        r = ctx.shape(2)[0] if ctx.shape(2) is not None and len(ctx.shape(2)) == 1 else None
        r = r if isinstance(r, int) else (len(xs) if xs is not None else None)
        if r is None:
            ctx.set_output(0, None, ctx.dtype(0))
            return
        ctx.set_output(0, tuple(ctx.unknown_dim(f"{ctx.name}_d{a}") for a in range(r)), ctx.dtype(0))
        return
    if xs is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    n = len(kernel)
    strides = _ints(ctx, "strides", n, 1, 1)
    pads = [int(p) for p in (ctx.attr("pads") or [0] * (2 * n))]
    if len(pads) != 2 * n:
        ctx.fail(f"attribute 'pads' has {len(pads)} values, expected {2 * n}")
    spatial = [E.sub(E.add(E.mul(E.sub(xs[2 + i], 1), strides[i]), kernel[i]), pads[i] + pads[n + i])
               for i in range(n)]
    ctx.set_output(0, (xs[0], xs[1], *spatial), ctx.dtype(0))
