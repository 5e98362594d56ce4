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
        ctx.fail(f"block_size must be >= 0, is {block}")
    if s is not None:
        if block > 0:
            if x is not None:
                if len(s) != len(x):
                    ctx.fail(f"blocked quantization needs a scale of x's rank {len(x)}, has rank {len(s)}")
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
            ctx.fail(f"the scale has rank {len(s)}: a scalar or 1-D scale, or block_size > 0 for blocked "
                     "quantization (opset 21+), is needed")
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
                ctx.fail(f"the zero point has rank {len(z)}, the scale {len(s)}: they must have the same shape")
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
    od = int(ctx.attr("output_dtype", 0)) if (ctx.opset or 99) >= 21 else 0
    dt = ir.DataType(od) if od else (ctx.dtype(2) if ctx.has_input(2) else None) or UINT8
    ctx.set_output(0, x, dt)


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
    od = int(ctx.attr("output_dtype", 0)) if opset >= 28 else 0
    dt = ir.DataType(od) if od else (ctx.dtype(1) if opset >= 19 else FLOAT)
    ctx.set_output(0, x, dt)


@register("", "DynamicQuantizeLinear", since_version=11)
def dynamic_quantize_linear(ctx):
    """y like x (uint8); y_scale and y_zero_point are scalars."""
    ctx.check_inputs(1, 1)
    ctx.set_output(0, ctx.shape(0), UINT8)
    ctx.set_output(1, (), FLOAT)
    ctx.set_output(2, (), UINT8)
