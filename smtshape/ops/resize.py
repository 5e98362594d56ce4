"""Resize, Upsample, DepthToSpace, SpaceToDepth.

Resize/Upsample with scales: the spec says ``out = floor(H * scale)``;
onnxruntime computes that product in float32 (``0.7f * 10`` gives 7, the
exact product 6.99999988 floors to 6).  Every float32 scale is exactly
``odd * 2**k``; when ``odd`` is small (2.0, 0.5, 1.5, 0.25, ...) the float32
product is exact while ``H * odd <= 2**24``, so the dim is the exact
``floor(H * scale)``: without condition where the store knows that bound,
under the recorded premise ``resize.float_exact`` (an assumption of the
analysis, never a finding) where it does not.  A constant ``H`` is computed
both ways: exact where they agree, else a data symbol between the two (the
spec and onnxruntime disagree on that size).  A symbolic ``H`` with any other
scale, or past the bound, becomes a data symbol within a relative 2**-22 of
the exact product, and the exact floor or one more while ``H`` and the
product are at most 2**24 (``_float32_floor``; no premise).

Resize with ``sizes``: the sizes themselves (``stretch``), or for
``not_larger`` / ``not_smaller`` the rounded ``scale * H`` when every size and
input dim is a constant (onnxruntime in float32, ONNX's inference in double:
exact where they agree, else a data symbol between them), else data symbols.

Preconditions: exactly one of ``scales`` / ``sizes`` (opset >= 11), each with
one value per resized axis, scales > 0 (>= 1 for Upsample), sizes >= 0, no
``scales`` with a ``keep_aspect_ratio_policy`` other than stretch, known
``mode`` / ``coordinate_transformation_mode`` / ``nearest_mode`` strings, a
``roi`` of two values per resized axis for ``tf_crop_and_resize``.
DepthToSpace / SpaceToDepth: rank 4, blocksize > 0, the channels (spatial
sizes) divisible by blocksize**2 (blocksize), mode DCR or CRD.
"""
from __future__ import annotations

import math
from fractions import Fraction

from ..lazy import numpy as np

from .. import expr as E
from ..constraints import all_of, any_of, eq, ge, gt, le
from ..printing import show
from ..registry import register
from ..store import Verdict
from .common import norm_axes

_F32_MANTISSA = 2 ** 24
_SMALL_NUMERATOR = 2 ** 12
_MODES = ("nearest", "linear", "cubic")
_COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_half_pixel_for_nn", "tf_crop_and_resize")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_POLICIES = ("stretch", "not_larger", "not_smaller")


def _str(ctx, name, default):
    v = ctx.attr(name, default)
    return v.decode() if isinstance(v, bytes) else str(v)


def _between(ctx, axis, lo, hi, why):
    """``lo`` or ``hi`` (the spec and onnxruntime disagree): exact when equal, else a data
    symbol ``lo <= s <= hi``."""
    if lo == hi:
        return lo
    lo, hi = min(lo, hi), max(lo, hi)
    ctx.warn(f"{ctx.op_type} axis {axis}: {why}; the size is kept as a data symbol between {lo} and {hi}")
    s = ctx.data_symbol(f"{ctx.name}_ax{axis}", hi, f"{ctx.op_type} axis {axis}: {why}")
    if lo > 0:
        ctx.require(ge(s, lo), "resize.size_range", f"{ctx.op_type} axis {axis}: the size is at least {lo} ({why})")
    return s


def _scaled(ctx, h, scale, axis):
    """floor(h * scale): exact where onnxruntime's float32 product agrees."""
    s32 = np.float32(scale)
    least = 1 if ctx.op_type == "Upsample" else 0
    if not np.isfinite(s32) or s32 < least or s32 <= 0:
        what = "at least 1" if least else "positive"
        ctx.invalid(f"{ctx.op_type.lower()}.scales", f"{ctx.op_type} scale {float(scale)} on axis {axis} must be a "
                    f"{what} finite number", f"give every scale a {what} value")
    fr = Fraction(float(s32))
    p, q = fr.numerator, fr.denominator
    if isinstance(h, int):
        exact = h * p // q
        ort = int(np.float32(np.float32(h) * s32))
        return _between(ctx, axis, exact, ort, f"floor({h} * {float(s32)}) is {exact}, onnxruntime's float32 "
                        f"product gives {ort}")
    exact = E.floordiv(E.mul(h, p), q)
    odd = p // (p & -p)         # (scale = odd * 2**k: a power of two scales exactly)
    if odd <= _SMALL_NUMERATOR:
        # float32(h) is h, and float32(h) * scale is exact, while h * odd <= 2**24: the floor is
        # the spec's.  Unless the store already knows, that is a premise of the analysis (listed,
        # never a finding); known false, the size is onnxruntime's float32 floor, bounded
        holds = le(E.mul(h, odd), _F32_MANTISSA)
        known = ctx.decide(holds)
        if known is Verdict.PROVEN:
            return exact
        if known is Verdict.UNKNOWN:
            ctx.require(holds, "resize.float_exact",
                        f"{ctx.op_type} axis {axis}: {show(h)} * {float(s32)} is computed in float32; exact while "
                        f"{show(h)} * {odd} <= 2**24")
            return exact
    return _float32_floor(ctx, h, p, q, axis, exact, float(s32))


def _float32_floor(ctx, h, p, q, axis, exact, scale):
    """onnxruntime's floor(float32(float32(h) * scale)), scale = p / q, as a data symbol with
    bounds that hold for every h, and no premise: each float32 rounding moves a value by a
    relative 2**-24 at most, so the result is within a relative 2**-22 of h * p / q; where h
    and h * p / q are at most 2**24 (every integer up to there is a float32), it is the
    exact floor or one more."""
    wide = 2 ** 22
    s = ctx.data_symbol(f"{ctx.name}_ax{axis}", E.floordiv(E.mul(h, p * (wide + 1)), q * wide),
                        f"{ctx.op_type} axis {axis}: float32 floor({show(h)} * {scale})")
    ctx.require(ge(s, E.floordiv(E.mul(h, p * (wide - 1)), q * wide)), "resize.float_bounds",
                f"{ctx.op_type} axis {axis}: float32 floor({show(h)} * {scale}) is within a relative 2**-22 of "
                "the exact product")
    ctx.require(any_of(gt(h, _F32_MANTISSA), gt(E.mul(h, p), _F32_MANTISSA * q),
                       all_of(ge(s, exact), le(s, E.add(exact, 1)))), "resize.float_near",
                f"{ctx.op_type} axis {axis}: float32 floor({show(h)} * {scale}) is the exact floor or one more "
                f"while {show(h)} and the product are at most 2**24")
    return s


def _unknown_axes(ctx, xs, axes):
    return tuple(ctx.unknown_dim(f"{ctx.name}_ax{a}") if a in axes else d for a, d in enumerate(xs))


def _count_check(ctx, what, n, axes, rank, explicit):
    if n != len(axes):
        per = f"the {len(axes)} axes in 'axes'" if explicit else f"the input's rank {rank}"
        ctx.invalid(f"resize.{what}", f"{ctx.op_type} {what} has {n} values but there are {len(axes)} resized axes "
                    f"({per}): one value per axis", f"give {what} {len(axes)} values")


def _apply_scales(ctx, xs, scales, axes, explicit=False):
    _count_check(ctx, "scales", len(scales), axes, len(xs), explicit)
    out = list(xs)
    for a, sc in zip(axes, scales):
        out[a] = _scaled(ctx, xs[a], float(sc), a)
    return tuple(out)


def _round_half_away(x: float) -> int:
    f = math.floor(x)
    return f + 1 if x - f >= 0.5 else f


def _apply_sizes(ctx, xs, sizes, axes, policy, explicit=False):
    _count_check(ctx, "sizes", len(sizes), axes, len(xs), explicit)
    for a, v in zip(axes, sizes):
        if isinstance(v, int) and v < 0:
            ctx.invalid("resize.sizes", f"Resize sizes {list(sizes)}: the size {v} for axis {a} is negative",
                        "give every size a non-negative value")
    out = list(xs)
    if policy == "stretch":
        for a, v in zip(axes, sizes):
            out[a] = ctx.unknown_dim(f"{ctx.name}_ax{a}") if v is None else v
        return tuple(out)
    ins = [xs[a] for a in axes]
    if not all(isinstance(v, int) for v in list(sizes) + ins) or any(v <= 0 for v in ins):
        if policy == "not_larger" and all(isinstance(v, int) for v in sizes):
            # scale = min_k sizes[k] / in[k] <= sizes[a] / in[a], so scale * in[a] <= sizes[a]
            # (float32 error far below 0.5) and round-half-up gives at most sizes[a];
            # onnxruntime rejects zero input sizes and non-positive sizes
            for a, v in zip(axes, sizes):
                out[a] = ctx.data_symbol(f"{ctx.name}_ax{a}", upper=v,
                                         message=f"Resize (not_larger) axis {a}: at most sizes[{a}] = {v}")
            return tuple(out)
        if policy == "not_smaller" and all(isinstance(v, int) for v in sizes) and sizes:
            # scale = max_k sizes[k] / in[k] <= max(sizes) (every in[k] >= 1: onnxruntime
            # rejects zero input sizes), so the output is at most in[a] * max(sizes), plus
            # slack for float32 rounding (relative error < 2**-22)
            top = max(sizes)
            for a, v in zip(axes, sizes):
                p = E.mul(xs[a], top)
                out[a] = ctx.data_symbol(f"{ctx.name}_ax{a}", upper=E.add(E.add(p, E.floordiv(p, 2 ** 22)), 1),
                                         message=f"Resize (not_smaller) axis {a}: at most in[{a}] * {top} (+ rounding)")
            return tuple(out)
        return _unknown_axes(ctx, xs, set(axes))
    pick = min if policy == "not_larger" else max
    # onnxruntime: float32 ratios, scale and product; ONNX's inference: double
    s32 = pick(np.float32(s) / np.float32(h) for s, h in zip(sizes, ins))
    s64 = pick(float(s) / float(h) for s, h in zip(sizes, ins))
    for a, h in zip(axes, ins):
        ort = _round_half_away(float(np.float32(np.float32(s32) * np.float32(h))))
        spec = _round_half_away(s64 * float(h))
        out[a] = _between(ctx, a, spec, ort, f"round({policy} scale * {h}) is {spec} in double precision, "
                          f"{ort} in onnxruntime's float32")
    return tuple(out)


def _axes(ctx, r):
    ax = ctx.attr("axes") if ctx.opset is None or ctx.opset >= 18 else None
    return list(range(r)) if ax is None else norm_axes(ctx, ax, r)


def _numel(ctx, i):
    """The number of elements of input ``i`` when its shape is static, else None."""
    s = ctx.shape(i)
    if s is None or not all(isinstance(d, int) for d in s):
        return None
    n = 1
    for d in s:
        n *= d
    return n


def _check_modes(ctx):
    mode = _str(ctx, "mode", "nearest")
    if mode not in _MODES:
        ctx.invalid("resize.mode", f"Resize mode '{mode}' is not one of {', '.join(_MODES)}",
                    "set mode to nearest, linear or cubic")
    if ctx.opset is None or ctx.opset >= 11:
        ctm = _str(ctx, "coordinate_transformation_mode", "half_pixel")
        if ctm not in _COORD_MODES:
            ctx.invalid("resize.coordinate_transformation_mode", f"Resize coordinate_transformation_mode '{ctm}' "
                        f"is not one of {', '.join(_COORD_MODES)}", "use one of the modes the spec lists")
        nm = _str(ctx, "nearest_mode", "round_prefer_floor")
        if nm not in _NEAREST_MODES:
            ctx.invalid("resize.nearest_mode", f"Resize nearest_mode '{nm}' is not one of {', '.join(_NEAREST_MODES)}",
                        "use one of the nearest modes the spec lists")
        return ctm
    return "asymmetric"


def _resize(ctx, scales_idx, sizes_idx, roi_idx=None):
    xs = ctx.shape(0)
    ctm = _check_modes(ctx) if ctx.op_type == "Resize" else "asymmetric"
    policy = _str(ctx, "keep_aspect_ratio_policy", "stretch") if ctx.opset is None or ctx.opset >= 18 else "stretch"
    if policy not in _POLICIES:
        ctx.invalid("resize.keep_aspect_ratio_policy", f"Resize keep_aspect_ratio_policy '{policy}' is not stretch, "
                    "not_larger or not_smaller", "set keep_aspect_ratio_policy to stretch, not_larger or not_smaller")
    has_scales = scales_idx is not None and ctx.has_input(scales_idx)
    has_sizes = sizes_idx is not None and ctx.has_input(sizes_idx)
    n_scales = _numel(ctx, scales_idx) if has_scales else 0
    n_sizes = _numel(ctx, sizes_idx) if has_sizes else 0
    if sizes_idx is not None:
        # (opset >= 11: an empty scales or sizes counts as not given; both given is refused from
        # opset 13, as ONNX's inference does: Resize-11 / 12 with both runs in onnx's reference)
        if n_scales and n_sizes and (ctx.opset is None or ctx.opset >= 13):
            ctx.invalid("resize.scales_sizes", f"Resize has both scales ({n_scales} values) and sizes ({n_sizes} "
                        "values): the spec lets a node give only one of them", "give either scales or sizes")
        if n_scales == 0 and n_sizes == 0:
            ctx.invalid("resize.scales_sizes", "Resize has neither a non-empty scales nor a non-empty sizes input: "
                        "the spec needs one of them", "give the node scales or sizes")
    if n_scales and policy != "stretch":
        ctx.invalid("resize.keep_aspect_ratio_policy", f"Resize gives scales with keep_aspect_ratio_policy "
                    f"'{policy}': the policy applies to sizes only", "use sizes, or set the policy to stretch")
    if xs is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    explicit = (ctx.opset is None or ctx.opset >= 18) and ctx.attr("axes") is not None
    axes = _axes(ctx, len(xs))
    if n_scales:
        _count_check(ctx, "scales", n_scales, axes, len(xs), explicit)
    if n_sizes:
        _count_check(ctx, "sizes", n_sizes, axes, len(xs), explicit)
    if roi_idx is not None and ctm == "tf_crop_and_resize" and ctx.has_input(roi_idx):
        n_roi = _numel(ctx, roi_idx)
        if n_roi is not None and n_roi != 2 * len(axes):
            ctx.invalid("resize.roi", f"Resize roi has {n_roi} values; tf_crop_and_resize needs a start and an end per "
                        f"resized axis: {2 * len(axes)}", f"give roi {2 * len(axes)} values")
    # (sizes first: where Resize-11 / 12 is given both, ONNX's inference and its reference
    # evaluator use sizes)
    if n_sizes or (has_sizes and n_sizes is None):
        v = ctx.value(sizes_idx)
        if v is not None and len(v):
            ctx.set_output(0, _apply_sizes(ctx, xs, list(v), axes, policy, explicit), ctx.dtype(0))
            return
    if n_scales and not n_sizes:
        sc = ctx.const(scales_idx)
        if sc is not None and sc.size > 0:
            ctx.set_output(0, _apply_scales(ctx, xs, sc.reshape(-1).tolist(), axes, explicit), ctx.dtype(0))
            return
    ctx.set_output(0, _unknown_axes(ctx, xs, set(axes)), ctx.dtype(0))


@register("", "Resize", since_version=10)
def resize_10(ctx):
    ctx.check_inputs(2, 2)
    _resize(ctx, 1, None)


@register("", "Resize", since_version=11)
def resize_11(ctx):
    ctx.check_inputs(1, 4)
    _resize(ctx, 2, 3, 1)


def _upsample_attr(ctx):
    xs = ctx.shape(0)
    sc = ctx.attr("scales")
    if sc is None:      # opset 1: width_scale / height_scale on an NCHW input
        hs, ws = ctx.attr("height_scale"), ctx.attr("width_scale")
        if hs is None or ws is None:
            ctx.invalid("upsample.scales", "Upsample has no 'scales' attribute (nor both height_scale and "
                        "width_scale): the spec needs the scales", "give the node its 'scales' attribute")
        if xs is not None and len(xs) != 4:
            ctx.invalid("upsample.rank", f"Upsample-1 input has rank {len(xs)}: height_scale / width_scale need an "
                        "NCHW input of rank 4", "give the node a rank-4 input")
        sc = [1.0, 1.0, float(hs), float(ws)]
    if xs is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    ctx.set_output(0, _apply_scales(ctx, xs, [float(s) for s in sc], list(range(len(xs)))), ctx.dtype(0))


register("", "Upsample", since_version=1)(_upsample_attr)


@register("", "Upsample", since_version=9)
def upsample_9(ctx):
    ctx.check_inputs(2, 2)
    _resize(ctx, 1, None)


# ---------------------------------------------------------------- depth <-> space
def _rank4(ctx):
    xs = ctx.shape(0)
    fam = ctx.op_type.lower()
    if xs is not None and len(xs) != 4:
        ctx.invalid(f"{fam}.rank", f"{ctx.op_type} input has rank {len(xs)}: it must have rank 4 (N, C, H, W)",
                    "give the node an NCHW input of rank 4")
    b = int(ctx.require_attr("blocksize"))
    if b < 1:
        ctx.invalid(f"{fam}.blocksize", f"{ctx.op_type} blocksize {b} must be positive", "set blocksize to 1 or more")
    return xs, b


@register("", "DepthToSpace", since_version=1)
def depth_to_space(ctx):
    ctx.check_inputs(1, 1)
    xs, b = _rank4(ctx)
    mode = _str(ctx, "mode", "DCR")
    if mode not in ("DCR", "CRD"):
        ctx.invalid("depthtospace.mode", f"DepthToSpace mode '{mode}' is not DCR or CRD", "set mode to DCR or CRD")
    if xs is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    n, c, h, w = xs
    bb = b * b
    if isinstance(c, int) and c % bb:
        ctx.invalid("depthtospace.channels", f"DepthToSpace channels C = {c} are not divisible by blocksize^2 = {bb}",
                    f"give the input a multiple of {bb} channels")
    ctx.require(eq(E.mod(c, bb), 0), "depthtospace.channels",
                f"DepthToSpace channels C = {show(c)} must be divisible by blocksize^2 = {bb}")
    ctx.set_output(0, (n, E.floordiv(c, bb), E.mul(h, b), E.mul(w, b)), ctx.dtype(0))


@register("", "SpaceToDepth", since_version=1)
def space_to_depth(ctx):
    ctx.check_inputs(1, 1)
    xs, b = _rank4(ctx)
    if xs is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    n, c, h, w = xs
    for name, d in (("H", h), ("W", w)):
        if isinstance(d, int) and d % b:
            ctx.invalid("spacetodepth.spatial", f"SpaceToDepth {name} = {d} is not divisible by blocksize {b}",
                        f"give the input a multiple of {b} on {name}")
        ctx.require(eq(E.mod(d, b), 0), "spacetodepth.spatial",
                    f"SpaceToDepth {name} = {show(d)} must be divisible by blocksize {b}")
    ctx.set_output(0, (n, E.mul(c, b * b), E.floordiv(h, b), E.floordiv(w, b)), ctx.dtype(0))
