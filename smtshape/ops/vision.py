"""Vision ops: GridSample, AffineGrid, RoiAlign, MaxRoiPool, Col2Im,
CenterCropPad, DeformConv, ImageDecoder, ReverseSequence.

Output sizes read from runtime tensors (AffineGrid's ``size``, Col2Im's
``image_shape``, CenterCropPad's ``shape``) come from the input's known value;
an unknown element is a data symbol.  A decoded image's height and width are
data symbols.

DeformConv's output size is ``1 + trunc((H + pads - dk) / stride)`` (int64
division, as onnxruntime and ONNX's inference compute it: a kernel larger than
the padded input gives 0 or 1), at least 0; Col2Im's padded image must hold
the dilated block (onnxruntime refuses it otherwise).
"""
from __future__ import annotations

from .. import irtypes as ir

from .. import expr as E
from ..constraints import eq, ge
from ..printing import show
from ..registry import register
from .common import norm_axes, unify
from .conv import _ints, kernel_dims, trunc_window


def _str(ctx, name, default):
    v = ctx.attr(name, default)
    return v.decode() if isinstance(v, bytes) else str(v)


def _shape_str(s):
    return "(" + ", ".join(show(d) for d in s) + ")"


def _rank_is(ctx, i, r, what):
    s = ctx.shape(i)
    if s is not None and len(s) != r:
        ctx.invalid(f"{ctx.op_type.lower()}.rank",
                    f"{ctx.op_type} {what} has shape {_shape_str(s)}: it must have rank {r}",
                    f"give {what} rank {r}")
    return s


_MAX_VECTOR = 4096     # a shape vector longer than this has unknown elements and is not expanded


def _vector(ctx, i, what, length=None):
    """The elements of 1-D input ``i``: a list (unknown elements are data symbols),
    or None when even the length is unknown."""
    s = ctx.shape(i)
    if s is not None and len(s) != 1:
        ctx.invalid(f"{ctx.op_type.lower()}.{what}", f"{ctx.op_type} {what} has shape {_shape_str(s)}: it must be 1-D",
                    f"give {what} as a 1-D tensor")
    v = ctx.value(i)
    if v is not None:
        out = []
        for k, x in enumerate(v):
            if x is None or isinstance(x, bool):
                out.append(ctx.unknown_dim(f"{what}_{k}"))
            else:
                out.append(E.norm(x))
        return out
    n = s[0] if s is not None else length
    if isinstance(n, int) and n <= _MAX_VECTOR:
        return [ctx.unknown_dim(f"{what}_{k}") for k in range(n)]
    return None     # (a longer one is no rank: not that many data symbols)


def _windows(ctx, sizes, kernel, rule, trunc=False):
    """Sliding-window counts per spatial axis (``strides``, ``dilations``, ``pads`` attributes):
    floor((size + pad_begin + pad_end - (dilation * (k - 1) + 1)) / stride) + 1, with the padded
    size required to hold the dilated kernel; ``trunc``: DeformConv's count, 1 + trunc(that
    difference / stride), only required not to be negative."""
    n = len(sizes)
    fam = rule.split(".")[0]
    strides = _ints(ctx, "strides", n, 1, 1, fam)
    dil = _ints(ctx, "dilations", n, 1, 1, fam)
    pads = _ints(ctx, "pads", 2 * n, 0, 0, fam, axes=n)
    out = []
    for i, (h, k) in enumerate(zip(sizes, kernel)):
        dk = E.add(E.mul(E.sub(k, 1), dil[i]), 1)
        padded = E.add(h, pads[i] + pads[n + i])
        if trunc:
            out.append(trunc_window(ctx, i, E.sub(padded, dk), strides[i], rule))
            continue
        if isinstance(padded, int) and isinstance(dk, int) and padded < dk:
            ctx.invalid(rule, f"{ctx.op_type} spatial axis {i}: the padded size {padded} is smaller than the dilated "
                        f"kernel {dk}", "pad the image or use a smaller block or dilation")
        ctx.require(ge(padded, dk), rule,
                    f"spatial axis {i}: the padded size {show(padded)} must be at least the dilated kernel {show(dk)}")
        out.append(E.add(E.floordiv(E.sub(padded, dk), strides[i]), 1))
    return out


def _nonneg(ctx, xs, what, least=0):
    for k, x in enumerate(xs):
        if isinstance(x, int):
            if x < least:
                ctx.invalid(f"{ctx.op_type.lower()}.{what}", f"{ctx.op_type} {what}[{k}] is {x}: it must be "
                            f"{'positive' if least else 'non-negative'}",
                            f"give {what} {'positive' if least else 'non-negative'} values")
        else:
            ctx.require(ge(x, least), f"{ctx.op_type.lower()}.{what}",
                        f"{ctx.op_type} {what}[{k}] = {show(x)} must be >= {least}")


# ------------------------------------------------------------ GridSample
def _grid_sample(ctx, nd: bool):
    ctx.check_inputs(2, 2)
    x, g = ctx.shape(0), ctx.shape(1)
    dtype = ctx.dtype(0)
    modes = ("linear", "nearest", "cubic") if nd else ("bilinear", "nearest", "bicubic")
    mode = _str(ctx, "mode", modes[0])
    if mode not in modes:
        ctx.invalid("gridsample.mode", f"GridSample-{ctx.opset or ''} mode '{mode}' is not one of "
                    f"{', '.join(modes)}", f"set mode to {' / '.join(modes)}")
    pm = _str(ctx, "padding_mode", "zeros")
    if pm not in ("zeros", "border", "reflection"):
        ctx.invalid("gridsample.padding_mode", f"GridSample padding_mode '{pm}' is not zeros, border or reflection",
                    "set padding_mode to zeros, border or reflection")
    if not nd:
        x = _rank_is(ctx, 0, 4, "X")
        g = _rank_is(ctx, 1, 4, "grid")
    if x is not None and len(x) < 3:
        ctx.invalid("gridsample.rank", f"GridSample X has rank {len(x)}: it needs rank >= 3 (N, C, spatial...)",
                    "give X a batch, a channel and a spatial axis")
    if x is not None and g is not None and len(g) != len(x):
        ctx.invalid("gridsample.rank", f"GridSample grid has rank {len(g)} but X has rank {len(x)}: they must be "
                    "equal", "give grid one axis per axis of X")
    if g is not None and len(g) < 3:
        ctx.invalid("gridsample.rank", f"GridSample grid has rank {len(g)}: it needs rank >= 3",
                    "give grid a batch, a spatial axis and a coordinate axis")
    if x is None and g is None:
        ctx.set_output(0, None, dtype)
        return
    r = len(x if x is not None else g) - 2
    if g is not None:
        ctx.equal(g[-1], r, "gridsample.coords",
                  f"grid's last dim {show(g[-1])} must equal the number of spatial dims {r}")
    n = x[0] if x is not None else g[0]
    if x is not None and g is not None:
        n = unify(ctx, x[0], g[0], "gridsample.batch",
                  f"batch: X has N = {show(x[0])}, grid has {show(g[0])}")
    c = x[1] if x is not None else ctx.unknown_dim("gridsample_c")
    sp = tuple(g[1:-1]) if g is not None else tuple(ctx.unknown_dim("gridsample_sp") for _ in range(r))
    ctx.set_output(0, (n, c) + sp, dtype)


@register("", "GridSample", since_version=16)
def grid_sample16(ctx):
    """Opset 16: 4-D only: (N, C, H, W), grid (N, Ho, Wo, 2) -> (N, C, Ho, Wo)."""
    _grid_sample(ctx, False)


@register("", "GridSample", since_version=20)
def grid_sample20(ctx):
    """Opset 20+: N-D: (N, C, D1..Dr), grid (N, O1..Or, r) -> (N, C, O1..Or)."""
    _grid_sample(ctx, True)


register("", "GridSample", 22)(grid_sample20)


# ------------------------------------------------------------ AffineGrid
@register("", "AffineGrid", since_version=20)
def affine_grid(ctx):
    """theta (N, 2, 3) with size [N, C, H, W] -> (N, H, W, 2);
    theta (N, 3, 4) with size [N, C, D, H, W] -> (N, D, H, W, 3)."""
    ctx.check_inputs(2, 2)
    th = ctx.shape(0)
    dtype = ctx.dtype(0)
    if th is not None and len(th) != 3:
        ctx.invalid("affinegrid.theta", f"AffineGrid theta has shape {_shape_str(th)}: it must have rank 3 "
                    "(N, 2, 3) or (N, 3, 4)", "give theta the shape (N, 2, 3) or (N, 3, 4)")
    size = _vector(ctx, 1, "size")
    if size is None:
        if th is not None and isinstance(th[1], int) and th[1] in (2, 3):
            size = [ctx.unknown_dim(f"size_{k}") for k in range(th[1] + 2)]
        else:
            ctx.set_output(0, None, dtype)
            return
    if len(size) not in (4, 5):
        ctx.invalid("affinegrid.size", f"AffineGrid size has {len(size)} elements: it must have 4 (N, C, H, W) or "
                    "5 (N, C, D, H, W)", "give size 4 or 5 elements")
    nd = len(size) - 2
    _nonneg(ctx, size, "size")
    n = size[0]
    if th is not None:
        n = unify(ctx, th[0], size[0], "affinegrid.batch",
                  f"batch: theta has N = {show(th[0])}, size[0] = {show(size[0])}")
        ctx.equal(th[1], nd, "affinegrid.theta", f"theta.shape[1] = {show(th[1])} must be {nd} for a {nd}-D grid")
        ctx.equal(th[2], nd + 1, "affinegrid.theta",
                  f"theta.shape[2] = {show(th[2])} must be {nd + 1} for a {nd}-D grid")
    ctx.set_output(0, (n, *size[2:], nd), dtype)


# ------------------------------------------------------------ RoiAlign, MaxRoiPool
def _roi_channels(ctx):
    x = _rank_is(ctx, 0, 4, "X")
    return x[1] if x is not None else ctx.unknown_dim("roi_channels")


@register("", "RoiAlign", since_version=10)
def roi_align(ctx):
    """X (N, C, H, W), rois (R, 4), batch_indices (R,) -> (R, C, output_height, output_width)."""
    ctx.check_inputs(3, 3)
    c = _roi_channels(ctx)
    rois = _rank_is(ctx, 1, 2, "rois")
    bi = _rank_is(ctx, 2, 1, "batch_indices")
    oh, ow = int(ctx.attr("output_height", 1)), int(ctx.attr("output_width", 1))
    if oh < 0 or ow < 0:
        ctx.invalid("roialign.output_size", f"RoiAlign output_height {oh} and output_width {ow} must not be negative",
                    "give output_height and output_width non-negative values")
    sr = int(ctx.attr("sampling_ratio", 0))
    if sr < 0:
        ctx.invalid("roialign.sampling_ratio", f"RoiAlign sampling_ratio {sr} must not be negative (0 means "
                    "adaptive)", "set sampling_ratio to 0 or more")
    mode = _str(ctx, "mode", "avg")
    if mode not in ("avg", "max"):
        ctx.invalid("roialign.mode", f"RoiAlign mode '{mode}' is not avg or max", "set mode to avg or max")
    r = None
    if rois is not None:
        ctx.equal(rois[1], 4, "roialign.rois", f"rois.shape[1] = {show(rois[1])} must be 4 (x1, y1, x2, y2)")
        r = rois[0]
    if bi is not None:
        r = bi[0] if r is None else unify(ctx, r, bi[0], "roialign.count",
                                          f"rois has {show(r)} rows, batch_indices has {show(bi[0])} elements")
    if r is None:
        r = ctx.unknown_dim("num_rois")
    ctx.set_output(0, (r, c, oh, ow), ctx.dtype(0))


register("", "RoiAlign", 16)(roi_align)
register("", "RoiAlign", 22)(roi_align)


@register("", "MaxRoiPool", since_version=1)
def max_roi_pool(ctx):
    """X (N, C, H, W), rois (R, 5) -> (R, C, pooled_shape[0], pooled_shape[1])."""
    ctx.check_inputs(2, 2)
    c = _roi_channels(ctx)
    rois = _rank_is(ctx, 1, 2, "rois")
    ps = ctx.require_attr("pooled_shape")
    ps = [int(p) for p in ps]
    if len(ps) != 2 or any(p < 1 for p in ps):
        ctx.invalid("maxroipool.pooled_shape", f"MaxRoiPool pooled_shape {ps} must be two positive values "
                    "(height, width)", "give pooled_shape two positive values")
    r = ctx.unknown_dim("num_rois")
    if rois is not None:
        ctx.equal(rois[1], 5, "maxroipool.rois",
                  f"rois.shape[1] = {show(rois[1])} must be 5 (batch_id, x1, y1, x2, y2)")
        r = rois[0]
    ctx.set_output(0, (r, c, ps[0], ps[1]), ctx.dtype(0))


register("", "MaxRoiPool", 22)(max_roi_pool)


# ------------------------------------------------------------ Col2Im
@register("", "Col2Im", since_version=18)
def col2im(ctx):
    """input (N, C * prod(block_shape), L), image_shape, block_shape -> (N, C, *image_shape),
    with L the number of sliding blocks over the padded image."""
    ctx.check_inputs(3, 3)
    x = _rank_is(ctx, 0, 3, "input")
    dtype = ctx.dtype(0)
    img = _vector(ctx, 1, "image_shape")
    blk = _vector(ctx, 2, "block_shape")
    if img is None and blk is not None:
        img = [ctx.unknown_dim(f"image_shape_{k}") for k in range(len(blk))]
    if img is None:
        ctx.set_output(0, None, dtype)
        return
    if blk is not None and len(blk) != len(img):
        ctx.invalid("col2im.block_shape", f"Col2Im image_shape has {len(img)} elements but block_shape has "
                    f"{len(blk)}: one of each per spatial axis", "give image_shape and block_shape the same length")
    _nonneg(ctx, img, "image_shape")
    if x is None:
        n, c = ctx.unknown_dim("col2im_n"), ctx.unknown_dim("col2im_c")
    else:
        n, c = x[0], ctx.unknown_dim("col2im_c")
    if blk is not None:
        _nonneg(ctx, blk, "block_shape", least=1)
        kprod = E.prod(blk)
        if x is not None:
            ctx.require(eq(E.mod(x[1], kprod), 0), "col2im.channels",
                        f"input.shape[1] = {show(x[1])} must be a multiple of the block size {show(kprod)}")
            c = E.floordiv(x[1], kprod)
            blocks = _windows(ctx, img, blk, "col2im.window")
            ctx.equal(x[2], E.prod(blocks), "col2im.blocks",
                      f"input.shape[2] = {show(x[2])} must equal the number of sliding blocks "
                      f"{show(E.prod(blocks))}")
    ctx.set_output(0, (n, c, *img), dtype)


# ------------------------------------------------------------ CenterCropPad
@register("", "CenterCropPad", since_version=18)
def center_crop_pad(ctx):
    """Each axis in ``axes`` (default all) takes its size from ``shape``; others stay."""
    ctx.check_inputs(2, 2)
    x = ctx.shape(0)
    dtype = ctx.dtype(0)
    axes = ctx.attr("axes")
    target = _vector(ctx, 1, "shape")
    if x is None:
        ctx.set_output(0, None, dtype)
        return
    axes = list(range(len(x))) if axes is None else norm_axes(ctx, axes, len(x))
    if target is None:
        target = [ctx.unknown_dim(f"shape_{k}") for k in range(len(axes))]
    s = ctx.shape(1)
    if len(target) != len(axes):
        ctx.invalid("centercroppad.shape", f"CenterCropPad shape has {len(target)} elements but there are "
                    f"{len(axes)} axes {axes}: one size per axis", f"give shape {len(axes)} elements")
    if s is not None:
        ctx.equal(s[0], len(axes), "centercroppad.shape",
                  f"shape has {show(s[0])} elements, one per axis in {axes}")
    _nonneg(ctx, target, "shape")
    out = list(x)
    for a, t in zip(axes, target):
        out[a] = t
    ctx.set_output(0, tuple(out), dtype)


# ------------------------------------------------------------ DeformConv
def deform_conv(ctx):
    """Conv's output (N, oC, o1..on) with offset (N, offset_group * prod(k) * n, o1..on),
    mask (N, offset_group * prod(k), o1..on), bias (oC,)."""
    ctx.check_inputs(3, 5)
    xs, ws = ctx.shape(0), ctx.shape(1)
    dtype = ctx.dtype(0)
    if xs is not None and len(xs) < 3:
        ctx.invalid("deformconv.rank", f"DeformConv X has rank {len(xs)}: it needs rank >= 3 (N, C, spatial...)",
                    "give X a batch, a channel and a spatial axis")
    if ws is not None and len(ws) < 3:
        ctx.invalid("deformconv.weight_rank", f"DeformConv W has rank {len(ws)}: it needs rank >= 3",
                    "give W one kernel axis per spatial axis")
    if xs is not None and ws is not None and len(ws) != len(xs):
        ctx.invalid("deformconv.weight_rank", f"DeformConv W has rank {len(ws)} but X has rank {len(xs)}: they must "
                    "be equal", "give W one kernel axis per spatial axis of X")
    group = int(ctx.attr("group", 1))
    if group < 1:
        ctx.invalid("deformconv.group", f"DeformConv group {group} must be positive", "set group to 1 or more")
    og = int(ctx.attr("offset_group", 1))
    if og < 1:
        ctx.invalid("deformconv.offset_group", f"DeformConv offset_group {og} must be positive",
                    "set offset_group to 1 or more")
    if xs is None or ws is None:
        ctx.set_output(0, None, dtype)
        return
    nsp = len(xs) - 2
    kernel = kernel_dims(ctx, ws, "deformconv.kernel")
    m = ws[0]
    unify(ctx, xs[1], E.mul(ws[1], group), "deformconv.channels",
          f"channels: X has C = {show(xs[1])}, W expects W.shape[1] * group = {show(ws[1])} * {group}")
    if group != 1:
        ctx.require(eq(E.mod(m, group), 0), "deformconv.group",
                    f"output channels oC = {show(m)} must be divisible by group {group}")
    if og != 1:
        ctx.require(eq(E.mod(xs[1], og), 0), "deformconv.offset_group",
                    f"input channels C = {show(xs[1])} must be divisible by offset_group {og}")
    spatial = _windows(ctx, xs[2:], kernel, "deformconv.output_size", trunc=True)
    n = xs[0]
    kprod = E.prod(kernel)
    for i, what, ch in ((2, "offset", E.mul(og * nsp, kprod)), (4, "mask", E.mul(og, kprod))):
        if not ctx.has_input(i):
            continue
        s = ctx.shape(i)
        if s is None:
            continue
        if len(s) != len(xs):
            ctx.invalid(f"deformconv.{what}", f"DeformConv {what} has rank {len(s)} but X has rank {len(xs)}: they "
                        "must be equal", f"give {what} the rank of X")
        n = unify(ctx, n, s[0], "deformconv.batch", f"batch: X has N = {show(xs[0])}, {what} has {show(s[0])}")
        ctx.equal(s[1], ch, f"deformconv.{what}",
                  f"{what}.shape[1] = {show(s[1])} must equal {show(ch)}")
        for k in range(nsp):
            spatial[k] = unify(ctx, spatial[k], s[2 + k], f"deformconv.{what}_spatial",
                               f"{what} spatial axis {k}: {show(s[2 + k])} must equal the output size "
                               f"{show(spatial[k])}")
    if ctx.has_input(3):
        b = ctx.shape(3)
        if b is not None:
            if len(b) != 1:
                ctx.invalid("deformconv.bias", f"DeformConv bias B has rank {len(b)}: it must be 1-D",
                            "give B the shape [output channels]")
            unify(ctx, b[0], m, "deformconv.bias", f"bias length {show(b[0])} must equal oC = {show(m)}")
    ctx.set_output(0, (n, ctx.store.canon(m), *spatial), dtype)


register("", "DeformConv", 19)(deform_conv)
register("", "DeformConv", 22)(deform_conv)


# ------------------------------------------------------------ ImageDecoder
_CHANNELS = {"RGB": 3, "BGR": 3, "Grayscale": 1}


@register("", "ImageDecoder", since_version=20)
def image_decoder(ctx):
    """1-D encoded bytes -> (H, W, C): C from ``pixel_format`` (RGB / BGR: 3, Grayscale: 1),
    H and W known only at run time."""
    ctx.check_inputs(1, 1)
    _rank_is(ctx, 0, 1, "encoded_stream")
    fmt = ctx.attr("pixel_format", "RGB")
    if isinstance(fmt, bytes):
        fmt = fmt.decode()
    if fmt not in _CHANNELS:
        ctx.invalid("imagedecoder.pixel_format", f"ImageDecoder pixel_format {fmt!r} is not one of RGB, BGR, "
                    "Grayscale", "set pixel_format to RGB, BGR or Grayscale")
    h = ctx.data_symbol("image_height", message="decoded image height is known only at run time")
    w = ctx.data_symbol("image_width", message="decoded image width is known only at run time")
    ctx.set_output(0, (h, w, _CHANNELS[fmt]), ir.DataType.UINT8)


# ------------------------------------------------------------ ReverseSequence
@register("", "ReverseSequence", since_version=10)
def reverse_sequence(ctx):
    """Output has the input's shape; sequence_lens has one element per batch entry."""
    ctx.check_inputs(2, 2)
    x = ctx.shape(0)
    ba, ta = int(ctx.attr("batch_axis", 1)), int(ctx.attr("time_axis", 0))
    if {ba, ta} != {0, 1}:
        ctx.invalid("reversesequence.axes", f"ReverseSequence batch_axis {ba} and time_axis {ta} must be 0 and 1, "
                    "one each", "set batch_axis and time_axis to 1 and 0 (or 0 and 1)")
    if x is not None and len(x) < 2:
        ctx.invalid("reversesequence.rank", f"ReverseSequence input has rank {len(x)}: it needs rank >= 2 "
                    "(time and batch axes)", "give the input a time and a batch axis")
    s = _rank_is(ctx, 1, 1, "sequence_lens")
    if x is not None and s is not None:
        ctx.equal(s[0], x[ba], "reversesequence.batch",
                  f"sequence_lens has {show(s[0])} elements, the batch axis {ba} has size {show(x[ba])}")
    ctx.set_output(0, x, ctx.dtype(0))


register("", "ReverseSequence", 28)(reverse_sequence)
