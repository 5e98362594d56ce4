"""Resize, Upsample, DepthToSpace, SpaceToDepth.

Resize/Upsample with scales: the spec says ``out = floor(H * scale)``;
onnxruntime computes that product in float32 (``0.7f * 10`` gives 7, the
exact product 6.99999988 floors to 6).  Every float32 scale is exactly
``p / 2**e``; when ``p`` is small (2.0, 0.5, 1.5, 0.25, ...) the float32
product ``H * p / 2**e`` is exact while ``H * p < 2**24``, so the dim is the
exact ``(H * p) // 2**e`` under that recorded constraint
(``resize.float_exact``).  A constant ``H`` is computed the float32 way.  A
symbolic ``H`` with any other scale becomes a data symbol ``s`` with
``floor(H * p / 2**e) <= s <= floor(H * p / 2**e) + 1``.

Resize with ``sizes``: the sizes themselves (``stretch``), or for
``not_larger`` / ``not_smaller`` the float32 computation when every size and
input dim is a constant, else data symbols.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .. import expr as E
from ..constraints import eq, ge, lt
from ..printing import show
from ..registry import register
from .common import norm_axes

_F32_MANTISSA = 2 ** 24
_SMALL_NUMERATOR = 2 ** 12


def _scaled(ctx, h, scale, axis):
    """floor(h * scale) as onnxruntime computes it (float32)."""
    s32 = np.float32(scale)
    if not np.isfinite(s32) or s32 <= 0:
        ctx.fail(f"scale {float(scale)} on axis {axis} must be a positive finite number")
    if isinstance(h, int):
        return int(math.floor(np.float32(h) * s32))
    fr = Fraction(float(s32))
    p, q = fr.numerator, fr.denominator
    exact = E.floordiv(E.mul(h, p), q)
    if p == q:
        return h
    if p <= _SMALL_NUMERATOR:
        ctx.require(lt(E.mul(h, p), _F32_MANTISSA), "resize.float_exact",
                    f"{ctx.op_type} axis {axis}: {show(h)} * {float(s32)} is computed in float32; "
                    f"exact while {show(h)} * {p} < 2**24")
        return exact
    s = ctx.data_symbol(f"{ctx.name}_ax{axis}", E.add(exact, 1),
                        f"{ctx.op_type} axis {axis}: float32 floor({show(h)} * {float(s32)})")
    ctx.require(ge(s, exact), "resize.float_lower",
                f"{ctx.op_type} axis {axis}: float32 floor({show(h)} * {float(s32)}) is at least the exact floor")
    ctx.require(lt(E.mul(h, p), E.mul(_F32_MANTISSA, q)), "resize.float_range",
                f"{ctx.op_type} axis {axis}: {show(h)} * {float(s32)} < 2**24 (float32 integer range)")
    return s


def _unknown_axes(ctx, xs, axes):
    return tuple(ctx.unknown_dim(f"{ctx.name}_ax{a}") if a in axes else d for a, d in enumerate(xs))


def _apply_scales(ctx, xs, scales, axes):
    if len(scales) != len(axes):
        ctx.fail(f"scales has {len(scales)} values, expected {len(axes)}")
    out = list(xs)
    for a, sc in zip(axes, scales):
        out[a] = _scaled(ctx, xs[a], float(sc), a)
    return tuple(out)


def _apply_sizes(ctx, xs, sizes, axes):
    if len(sizes) != len(axes):
        ctx.fail(f"sizes has {len(sizes)} values, expected {len(axes)}")
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch") if ctx.opset is None or ctx.opset >= 18 else "stretch"
    policy = policy.decode() if isinstance(policy, bytes) else str(policy)
    if policy not in ("stretch", "not_larger", "not_smaller"):
        ctx.fail(f"keep_aspect_ratio_policy '{policy}' is not stretch, not_larger or not_smaller")
    out = list(xs)
    if policy == "stretch":
        for a, v in zip(axes, sizes):
            if isinstance(v, int) and v < 0:
                ctx.fail(f"sizes value {v} on axis {a} is negative")
            out[a] = ctx.unknown_dim(f"{ctx.name}_ax{a}") if v is None else v
        return tuple(out)
    ins = [xs[a] for a in axes]
    if not all(isinstance(v, int) for v in list(sizes) + ins) or any(v <= 0 for v in ins):
        if policy == "not_larger" and all(isinstance(v, int) for v in sizes):
            # scale = min_k sizes[k] / in[k] <= sizes[a] / in[a], so scale * in[a] <= sizes[a]
            # (float32 error far below 0.5) and round-half-up gives at most sizes[a];
            # onnxruntime rejects zero input sizes and non-positive sizes
            for a, v in zip(axes, sizes):
                if v < 0:
                    ctx.fail(f"sizes value {v} on axis {a} is negative")
                out[a] = ctx.data_symbol(f"{ctx.name}_ax{a}", upper=v,
                                         message=f"Resize (not_larger) axis {a}: at most sizes[{a}] = {v}")
            return tuple(out)
        if policy == "not_smaller" and all(isinstance(v, int) for v in sizes) and sizes:
            # scale = max_k sizes[k] / in[k] <= max(sizes) (every in[k] >= 1: onnxruntime
            # rejects zero input sizes), so the output is at most in[a] * max(sizes), plus
            # slack for float32 rounding (relative error < 2**-22)
            top = max(sizes)
            for a, v in zip(axes, sizes):
                if v < 0:
                    ctx.fail(f"sizes value {v} on axis {a} is negative")
                p = E.mul(xs[a], top)
                out[a] = ctx.data_symbol(f"{ctx.name}_ax{a}", upper=E.add(E.add(p, E.floordiv(p, 2 ** 22)), 1),
                                         message=f"Resize (not_smaller) axis {a}: at most in[{a}] * {top} (+ rounding)")
            return tuple(out)
        return _unknown_axes(ctx, xs, set(axes))
    ratios = [np.float32(s) / np.float32(h) for s, h in zip(sizes, ins)]
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    for a, h in zip(axes, ins):
        v = np.float32(scale) * np.float32(h)
        out[a] = int(math.floor(float(v) + 0.5))   # round half up
    return tuple(out)


def _axes(ctx, r):
    ax = ctx.attr("axes") if ctx.opset is None or ctx.opset >= 18 else None
    return list(range(r)) if ax is None else norm_axes(ctx, ax, r)


def _resize(ctx, scales_idx, sizes_idx):
    xs = ctx.shape(0)
    if xs is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    axes = _axes(ctx, len(xs))
    sc = None
    if scales_idx is not None and ctx.has_input(scales_idx):
        s = ctx.input(scales_idx).shape
        n = None
        if s is not None and all(isinstance(d, int) for d in s):
            n = 1
            for d in s:
                n *= d
        if n is not None and n > len(axes):
            # the same failure _apply_scales gives, without reading a large constant
            ctx.fail(f"scales has {n} values, expected {len(axes)}")
        sc = ctx.const(scales_idx)
    has_scales = ctx.has_input(scales_idx) if scales_idx is not None else False
    if sc is not None and sc.size > 0:
        ctx.set_output(0, _apply_scales(ctx, xs, sc.reshape(-1).tolist(), axes), ctx.dtype(0))
        return
    if sizes_idx is not None and ctx.has_input(sizes_idx):
        v = ctx.value(sizes_idx)
        if v is not None:
            ctx.set_output(0, _apply_sizes(ctx, xs, list(v), axes), ctx.dtype(0))
            return
        ctx.set_output(0, _unknown_axes(ctx, xs, set(axes)), ctx.dtype(0))
        return
    if sc is not None and sc.size == 0 or not has_scales:
        ctx.fail("Resize needs either a non-empty 'scales' or a 'sizes' input")
    ctx.set_output(0, _unknown_axes(ctx, xs, set(axes)), ctx.dtype(0))


@register("", "Resize", since_version=10)
def resize_10(ctx):
    ctx.check_inputs(2, 2)
    _resize(ctx, 1, None)


@register("", "Resize", since_version=11)
def resize_11(ctx):
    ctx.check_inputs(1, 4)
    _resize(ctx, 2, 3)


def _upsample_attr(ctx):
    xs = ctx.shape(0)
    sc = ctx.attr("scales")
    if sc is None:      # opset 1: width_scale / height_scale on an NCHW input
        hs, ws = ctx.attr("height_scale"), ctx.attr("width_scale")
        if hs is None or ws is None:
            ctx.fail("Upsample needs the 'scales' attribute (or height_scale and width_scale)")
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
    if xs is not None and len(xs) != 4:
        ctx.fail(f"{ctx.op_type} input must have rank 4 (N, C, H, W), has rank {len(xs)}")
    b = int(ctx.require_attr("blocksize"))
    if b < 1:
        ctx.fail(f"blocksize must be >= 1, is {b}")
    return xs, b


@register("", "DepthToSpace", since_version=1)
def depth_to_space(ctx):
    ctx.check_inputs(1, 1)
    xs, b = _rank4(ctx)
    if xs is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    n, c, h, w = xs
    bb = b * b
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
        ctx.require(eq(E.mod(d, b), 0), "spacetodepth.spatial",
                    f"SpaceToDepth {name} = {show(d)} must be divisible by blocksize {b}")
    ctx.set_output(0, (n, E.mul(c, b * b), E.floordiv(h, b), E.floordiv(w, b)), ctx.dtype(0))
