"""Expand, Tile and Pad: broadcasting to a shape read from a value, repeats, and pads
(every mode), with the values moved where they are known."""
from __future__ import annotations

import math

from ..lazy import numpy as np

from .. import expr as E
from ..constraints import ge, le
from ..context import MAX_VALUE_ELEMENTS
from ..registry import register
from .common import broadcast_shapes, norm_axes, norm_axis
from .values import BIG, flat_values, index_vector, ints_of, is_expr, obj_array, shape_str, shown, sign_of, target_dims


# ================================================================ Expand, Tile

@register("", "Expand", since_version=8)
def expand(ctx):
    ctx.check_inputs(2, 2)
    s = ctx.shape(0)
    dtype = ctx.dtype(0)
    r1 = ctx.rank(1)
    if r1 is not None and r1 > 1:       # (a scalar runs in onnxruntime and onnx's reference)
        ctx.invalid("expand.shape_rank", f"Expand's shape input has rank {r1}; it must be a 1-D tensor of sizes",
                    "give Expand a 1-D shape tensor")
    target = target_dims(ctx, 1, "shape")
    if target is None or s is None:
        ctx.set_output(0, None, dtype)
        return
    tdims = []
    for k, t in enumerate(target):
        if t is None or isinstance(t, bool) or not is_expr(t):
            tdims.append(ctx.data_symbol("expand_dim", None, f"Expand target axis {k} is read at run time"))
        elif isinstance(t, int) and t < 0:
            ctx.invalid("expand.shape", f"Expand target axis {k} is {t}; every size must be >= 0",
                        "give Expand non-negative sizes")
        else:
            if not isinstance(t, int) and sign_of(ctx, t) != "nonneg":
                ctx.require(ge(t, 0), "expand.shape", f"Expand target axis {k} ({shown(t)}) is >= 0")
            tdims.append(t)
    out = broadcast_shapes(ctx, [s, tuple(tdims)], "expand.broadcast")
    value = None
    arr = obj_array(ctx, 0) if out is not None and all(isinstance(d, int) for d in out) \
        and math.prod(out) <= MAX_VALUE_ELEMENTS else None
    if arr is not None:
        try:
            value = flat_values(np.broadcast_to(arr, out))
        except ValueError:
            value = None
    ctx.set_output(0, out, dtype, value=value)


@register("", "Tile", since_version=6)
def tile(ctx):
    ctx.check_inputs(2, 2)
    s = ctx.shape(0)
    dtype = ctx.dtype(0)
    rr = ctx.rank(1)
    if rr is not None and rr != 1:
        ctx.invalid("tile.repeats_rank", f"Tile's repeats input has rank {rr}; it must be a 1-D tensor",
                    "give Tile a 1-D repeats tensor, one entry per input axis")
    reps = index_vector(ctx, 1)
    rs = ctx.shape(1)
    if s is not None and rs is not None and len(rs) == 1:
        if isinstance(rs[0], int):
            if rs[0] != len(s):
                ctx.invalid("tile.repeats", f"Tile's repeats has {rs[0]} entries for an input of rank {len(s)}",
                            "give Tile one repeat per input axis")
        else:
            ctx.equal(rs[0], len(s), "tile.repeats", f"Tile's repeats ({shown(rs[0])} entries) has one entry per "
                      f"input axis ({len(s)})")
    if s is None:
        ctx.set_output(0, None, dtype)
        return
    if reps is None or len(reps) != len(s):
        ctx.set_output(0, [ctx.unknown_dim("tile_dim") for _ in s], dtype)
        return
    out = []
    for k, (d, rp) in enumerate(zip(s, reps)):
        if rp is None:
            out.append(ctx.unknown_dim("tile_dim"))
        elif isinstance(rp, int) and rp < 0:
            ctx.invalid("tile.repeats", f"Tile's repeats on axis {k} is {rp} (repeats {reps}); every repeat "
                        "must be >= 0", "give Tile non-negative repeats")
        else:
            if not isinstance(rp, int) and sign_of(ctx, rp) != "nonneg":
                ctx.require(ge(rp, 0), "tile.nonnegative", f"Tile repeats on axis {k} ({shown(rp)}) is >= 0")
            out.append(E.mul(d, rp))
    value = None
    arr = obj_array(ctx, 0)
    if arr is not None and all(isinstance(x, int) for x in reps) and math.prod(
            x for x in out if isinstance(x, int)) <= MAX_VALUE_ELEMENTS and all(isinstance(x, int) for x in out):
        value = flat_values(np.tile(arr, reps))
    ctx.set_output(0, out, dtype, value=value)


def _scalar_const(ctx, i, what):
    """A Tile-1 scalar input (typed T: float in the schema) as an int, or None when not constant."""
    sh = ctx.shape(i)
    if sh is not None and not (len(sh) == 0 or (len(sh) == 1 and sh[0] == 1)):
        ctx.invalid(f"tile.{what}", f"Tile's {what} input has shape {shape_str(sh)}; it must be a scalar",
                    f"give Tile a scalar {what}")
    c = ctx.const(i)
    if c is None:
        return None
    v = c.reshape(-1)[0].item()
    if isinstance(v, bool) or not math.isfinite(float(v)) or not float(v).is_integer():
        ctx.invalid(f"tile.{what}", f"Tile's {what} is {v}; it must be a whole number",
                    f"give Tile an integral {what}")
    return int(v)


@register("", "Tile", since_version=1)
def tile_v1(ctx):
    """Tile-1 (Caffe2's Tile): ``tiles`` copies of the input along ``axis`` (both scalar inputs).

    The schema's output text says "same shape as input", its summary "repeat along an axis";
    no runtime implements it (onnxruntime starts at Tile-6) and onnx infers no shape.  The
    repetition is followed: axis ``axis`` becomes ``d * tiles``, the other axes stay."""
    ctx.check_inputs(3, 3)
    s = ctx.shape(0)
    dtype = ctx.dtype(0)
    tiles = _scalar_const(ctx, 1, "tiles")
    axis = _scalar_const(ctx, 2, "axis")
    if tiles is not None and tiles < 0:
        ctx.invalid("tile.tiles", f"Tile's tiles is {tiles}; the number of copies must be >= 0",
                    "give Tile a non-negative tiles")
    if s is None:
        ctx.set_output(0, None, dtype)
        return
    if axis is None:
        ctx.set_output(0, [ctx.unknown_dim("tile_dim") for _ in s], dtype)
        return
    ax = norm_axis(ctx, axis, len(s))
    if tiles is not None and tiles != 1:
        ctx.warn("Tile-1: following the repetition along axis (Caffe2 semantics), not the output "
                 "description 'same shape as input'")
    out = list(s)
    out[ax] = E.mul(s[ax], tiles) if tiles is not None else ctx.unknown_dim("tile_dim")
    ctx.set_output(0, out, dtype)


# ================================================================ Pad

_PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _pad(ctx, pads, axes):
    s = ctx.shape(0)
    dtype = ctx.dtype(0)
    mode = ctx.attr("mode", "constant")
    if isinstance(mode, bytes):
        mode = mode.decode()
    modes = _PAD_MODES if (ctx.opset or 19) >= 19 else _PAD_MODES[:3]
    if mode not in modes:
        ctx.invalid("pad.mode", f"Pad mode {mode!r} is not one of {', '.join(modes)} (opset {ctx.opset})",
                    f"give Pad a mode among {', '.join(modes)}")
    if s is None:
        ctx.set_output(0, None, dtype)
        return
    r = len(s)
    if axes is not None and axes != "unknown":
        axes = norm_axes(ctx, axes, r)
    n = r if axes is None else None if axes == "unknown" else len(axes)
    if pads is not None and n is not None and len(pads) != 2 * n:
        ctx.invalid("pad.pads", f"Pad has {len(pads)} pads for {n} axes; it needs 2 * {n} = {2 * n} (all the "
                    "starts, then all the ends)", f"give Pad {2 * n} pads")
    if pads is None or axes == "unknown":
        ctx.set_output(0, [ctx.unknown_dim("pad_dim") for _ in s], dtype)
        return
    axes = list(range(r)) if axes is None else axes
    out = list(s)
    for j, a in enumerate(axes):
        pb, pe = pads[j], pads[j + n]
        if pb is None or pe is None:
            out[a] = ctx.unknown_dim("pad_dim")
            continue
        total = E.add(pb, pe)
        if isinstance(total, int) and not -2 ** 63 <= total < 2 ** 63:
            ctx.invalid("pad.int64_range", f"Pad axis {a}: the pads {pb} and {pe} add up to {total}, beyond the "
                        "int64 range of ONNX sizes", "give Pad pads whose sums fit in int64")
        d = E.add(s[a], total)
        if isinstance(d, int):
            if d < 0:
                ctx.invalid("pad.output_size", f"Pad axis {a}: {shown(s[a])} + {pb} + {pe} = {d}, a size below 0",
                            "remove less than the axis holds")
        else:
            if any(sign_of(ctx, p) != "nonneg" for p in (pb, pe)):
                ctx.require(ge(d, 0), "pad.nonnegative",
                            f"Pad axis {a}: {shown(s[a])} + {shown(pb)} + {shown(pe)} is non-negative")
            if isinstance(total, int) and total > BIG:
                ctx.require(le(d, 2 ** 63 - 1), "pad.int64_range",
                            f"Pad axis {a}: {shown(s[a])} + {total} is within the int64 range of ONNX sizes")
        out[a] = d
    ctx.set_output(0, out, dtype)


@register("", "Pad", since_version=1)
def pad_v1(ctx):
    ctx.check_inputs(1, 1)
    pads = ctx.attr("paddings") if ctx.opset is not None and ctx.opset < 2 else ctx.attr("pads")
    if pads is None:
        pads = ctx.require_attr("pads")
    _pad(ctx, [int(p) for p in pads], None)


@register("", "Pad", since_version=2)
def pad_v2(ctx):
    ctx.check_inputs(1, 1)
    _pad(ctx, [int(p) for p in ctx.require_attr("pads")], None)


@register("", "Pad", since_version=11)
def pad_v11(ctx):
    ctx.check_inputs(2, 4)
    ps = ctx.shape(1)
    # (onnxruntime also runs pads of shape [1, 2 * n])
    if ps is not None and not (len(ps) == 1 or (len(ps) == 2 and ps[0] == 1)):
        ctx.invalid("pad.pads_rank", f"Pad's pads input has shape {shape_str(ps)}; it must be a 1-D tensor "
                    "of 2 * (number of axes) entries", "give Pad a 1-D pads tensor")
    if ctx.has_input(2):
        cs = ctx.shape(2)
        if cs is not None and all(isinstance(d, int) for d in cs) and math.prod(cs) != 1:
            ctx.invalid("pad.constant_value", f"Pad's constant_value has shape {shape_str(cs)}; it must be a "
                        "scalar (one element)", "give Pad a scalar constant_value")
    axes = None
    if ctx.has_input(3):
        ar = ctx.rank(3)
        if ar is not None and ar != 1:
            ctx.invalid("pad.axes_rank", f"Pad's axes input has rank {ar}; it must be a 1-D tensor",
                        "give Pad a 1-D axes tensor")
        axes = ints_of(ctx, 3, "axes")
        if axes is None:
            axes = "unknown"
    pads = ints_of(ctx, 1, "pads") if ps is not None and len(ps) == 2 else index_vector(ctx, 1)
    if pads is None and ps is not None and len(ps) == 2 and isinstance(ps[1], int):
        pads = [None] * ps[1]
    _pad(ctx, pads, axes)
