"""Linear quantization: QuantizeLinear, DequantizeLinear (every opset), DynamicQuantizeLinear.

(QLinearConv, ConvInteger live in conv.py; QLinearMatMul, MatMulInteger in linalg.py.)

y has x's shape.  The scale's shape picks the granularity and is constrained to fit x:
- per-tensor: a scalar, or a 1-D tensor of one element (onnxruntime accepts ``(1,)``);
- per-axis (opset 13+): 1-D of length ``x.shape[axis]``;
- blocked (opset 21+, ``block_size`` B > 0): x's rank, equal to x on every axis but
  ``axis``, where it is ``ceil(x.shape[axis] / B)`` (what the accepted range of B in the
  spec amounts to; onnxruntime refuses anything else).
The zero point, when given, has the scale's shape, except that per-tensor a scalar and a
one-element 1-D tensor mix freely (scale ``(1,)`` with zero point ``()`` and the reverse:
onnxruntime accepts both at every opset, e.g. the int32 bias DequantizeLinear nodes of
onnxruntime's QDQ quantizer).  tests/ops/test_quant.py checks the accepted shapes against
onnxruntime at opsets 10, 13, 19, 21 and 23.
"""
from __future__ import annotations

from .. import irtypes as ir

from .. import expr as E
from .. import schemas
from ..constraints import any_of, eq
from ..printing import show
from ..registry import register
from .common import norm_axis, unify

UINT8 = ir.DataType.UINT8
FLOAT = ir.DataType.FLOAT


def _scale_fits(ctx, x, scale_i, zp_i, low):
    """Constraints between x, the scale (input ``scale_i``) and the zero point (``zp_i``)."""
    s = ctx.shape(scale_i)
    opset = ctx.opset or 99
    block = int(ctx.attr("block_size", 0)) if opset >= 21 else 0
    axis = int(ctx.attr("axis", 1))
    if block < 0:
        ctx.invalid(f"{low}.block_size", f"block_size must be >= 0 (0: not blocked), is {block}",
                    "set block_size to 0, or to the block length for blocked quantization")
    if s is not None:
        if block > 0:
            if x is not None:
                if len(s) != len(x):
                    ctx.invalid(f"{low}.block", f"block_size {block} asks for blocked quantization, whose scale "
                                f"has x's rank {len(x)}; the scale has rank {len(s)}",
                                "give the scale x's rank, or set block_size to 0")
                ax = norm_axis(ctx, axis, len(x))
                for k, (a, b) in enumerate(zip(x, s)):
                    if k == ax:
                        want = E.ceildiv(a, block)
                        ctx.equal(b, want, f"{low}.block",
                                  f"scale axis {k} is {show(b)}, must be ceil({show(a)} / block_size {block})"
                                  f" = {show(want)}")
                    else:
                        unify(ctx, b, a, f"{low}.block",
                              f"scale axis {k} is {show(b)}, must equal x axis {k} ({show(a)})")
        elif len(s) == 1:
            if s[0] != 1 and x is not None:
                ax = norm_axis(ctx, axis, len(x))
                rel = eq(s[0], x[ax]) if isinstance(s[0], int) else any_of(eq(s[0], x[ax]), eq(s[0], 1))
                ctx.require(rel, f"{low}.axis",
                            f"a 1-D scale has length {show(s[0])}: x axis {ax} ({show(x[ax])}) for per-axis "
                            "quantization, or 1 for per-tensor")
        elif len(s) != 0:
            ctx.invalid(f"{low}.scale", f"the scale has rank {len(s)} with block_size 0: a scale must be a scalar "
                        "(per tensor) or 1-D (per axis) unless block_size > 0 (blocked, opset 21+)",
                        "give a scalar or 1-D scale, or set block_size")
    if ctx.has_input(zp_i):
        z = ctx.shape(zp_i)
        if z is not None and s is not None:
            if {len(z), len(s)} == {0, 1}:
                # a scalar and a one-element vector: both per-tensor (ONNX's own tests, onnxruntime)
                one = z[0] if len(z) == 1 else s[0]
                ctx.equal(one, 1, f"{low}.zero_point",
                          f"a scalar scale or zero point pairs with a one-element vector, not length {show(one)}")
                return
            if len(z) != len(s):
                ctx.invalid(f"{low}.zero_point", f"the zero point has rank {len(z)}, the scale {len(s)}: they must "
                            "have the same shape", "give the zero point the scale's shape")
            for k, (a, b) in enumerate(zip(s, z)):
                unify(ctx, a, b, f"{low}.zero_point",
                      f"zero point axis {k} is {show(b)}, must equal the scale's {show(a)}")


@register("", "QuantizeLinear", since_version=10)
@register("", "QuantizeLinear", since_version=13)
@register("", "QuantizeLinear", since_version=19)
@register("", "QuantizeLinear", since_version=21)
@register("", "QuantizeLinear", since_version=23)
@register("", "QuantizeLinear", since_version=24)
@register("", "QuantizeLinear", since_version=25)
@register("", "QuantizeLinear", since_version=28)
def quantize_linear(ctx):
    ctx.check_inputs(2, 3)
    x = ctx.shape(0)
    _scale_fits(ctx, x, 1, 2, "quantizelinear")
    od = _output_dtype(ctx, "quantizelinear") if (ctx.opset or 99) >= 21 else None
    zp = ctx.dtype(2) if ctx.has_input(2) else None
    if od is not None and zp is not None and od != zp:
        # "If both output_dtype and y_zero_point are specified, output_dtype must be T3"
        ctx.invalid("quantizelinear.output_dtype", f"output_dtype {od.name} does not match the zero point's "
                    f"type {zp.name}", f"set output_dtype to {zp.name} or drop it")
    # (a zero point whose type is unknown: the output's type is unknown too)
    dt = od if od is not None else zp if ctx.has_input(2) else UINT8
    ctx.set_output(0, x, dt)


def _output_dtype(ctx, low):
    """The ``output_dtype`` attribute (0: absent) as a DataType, checked against the types
    the schema allows for the output."""
    code = int(ctx.attr("output_dtype", 0))
    if not code:
        return None
    try:
        dt = ir.DataType(code)
    except ValueError:
        dt = None
    sig = schemas.signature(ctx.domain or "", ctx.op_type, ctx.opset)
    allowed = None
    if sig is not None:
        p = sig.formal(sig.outputs, 0)
        allowed = sig.allowed.get(p[0]) if p is not None else None
    if dt is None or (allowed and schemas.tensor_type(dt) not in allowed):
        what = dt.name if dt is not None else str(code)
        ctx.invalid(f"{low}.output_dtype", f"output_dtype {what} is not a type {ctx.op_type}-{sig.since if sig else ''}"
                    f" gives" + (f" (allowed: {', '.join(sorted(a[7:-1] for a in allowed))})" if allowed else ""),
                    "set output_dtype to one of the allowed types")
    return dt


@register("", "DequantizeLinear", since_version=10)
@register("", "DequantizeLinear", since_version=13)
@register("", "DequantizeLinear", since_version=19)
@register("", "DequantizeLinear", since_version=21)
@register("", "DequantizeLinear", since_version=23)
@register("", "DequantizeLinear", since_version=24)
@register("", "DequantizeLinear", since_version=25)
@register("", "DequantizeLinear", since_version=28)
def dequantize_linear(ctx):
    ctx.check_inputs(2, 3)
    x = ctx.shape(0)
    _scale_fits(ctx, x, 1, 2, "dequantizelinear")
    opset = ctx.opset or 99
    od = _output_dtype(ctx, "dequantizelinear") if opset >= 23 else None
    dt = od if od is not None else (ctx.dtype(1) if opset >= 19 else FLOAT)
    ctx.set_output(0, x, dt)


@register("", "DynamicQuantizeLinear", since_version=11)
def dynamic_quantize_linear(ctx):
    """y like x (uint8); y_scale and y_zero_point are scalars."""
    ctx.check_inputs(1, 1)
    ctx.set_output(0, ctx.shape(0), UINT8)
    ctx.set_output(1, (), FLOAT)
    ctx.set_output(2, (), UINT8)
