"""onnxruntime's quantization contrib ops: QLinearAdd / QLinearMul,
QLinearAveragePool, QLinearGlobalAveragePool, QLinearSoftmax, QLinearSigmoid,
QLinearLeakyRelu, QLinearConcat, QLinearConv (com.microsoft), QGemm,
DynamicQuantizeMatMul, MatMulIntegerToFloat, MatMulNBits, GatherBlockQuantized,
QuantizeLinear / DequantizeLinear (com.microsoft).

Shapes reuse the broadcasting, pool, Conv, Gemm, Concat and MatMul rules through
a remapped view of the context (the scale / zero-point inputs are skipped, and
no values propagate: quantized tensors hold requantized numbers).
"""
from __future__ import annotations

from ... import irtypes as ir

from ... import expr as E
from ...constraints import any_of, eq
from ...printing import show
from ...registry import register
from ..common import broadcast_shapes, norm_axis, unify
from ..conv import _conv, _sliding
from ..linalg import _gemm, _matmul_shape
from ..concat import concat
from ._util import FLOAT, MS, View, contract, vector_of

_UINT8 = ir.DataType.UINT8


def _quant_dtype(ctx, zp_index):
    """The quantized output type: the zero point's, uint8 when it is omitted."""
    if ctx.has_input(zp_index):
        return ctx.dtype(zp_index) or _UINT8
    return _UINT8


# ---------------------------------------------------------------- elementwise
@register(MS, "QLinearAdd", since_version=1)
@register(MS, "QLinearMul", since_version=1)
def qlinear_binary(ctx):
    """A (input 0) and B (input 3) broadcast numpy-style; the output has A's type."""
    contract(ctx)
    out = broadcast_shapes(ctx, [ctx.shape(0), ctx.shape(3)], f"{ctx.op_type.lower()}.broadcast")
    ctx.set_output(0, out, ctx.dtype(0))


@register(MS, "QLinearSigmoid", since_version=1)
@register(MS, "QLinearLeakyRelu", since_version=1)
def qlinear_unary(ctx):
    contract(ctx)
    ctx.set_output(0, ctx.shape(0), ctx.dtype(0))


@register(MS, "QLinearSoftmax", since_version=1)
def qlinear_softmax(ctx):
    """Y has X's shape; the output type is y_zero_point's."""
    contract(ctx)
    x = ctx.shape(0)
    if x is not None and len(x) > 0:
        norm_axis(ctx, int(ctx.attr("axis", -1)), len(x))
    ctx.set_output(0, x, ctx.dtype(4) if ctx.has_input(4) else ctx.dtype(0))


# ---------------------------------------------------------------- pools
def _to_nchw(s):
    return None if s is None else (s[0], s[-1], *s[1:-1])


def _to_nhwc(s):
    return None if s is None else (s[0], *s[2:], s[1])


@register(MS, "QLinearAveragePool", since_version=1)
def qlinear_average_pool(ctx):
    """AveragePool's output shape (ops/conv.py: pads, strides, ceil_mode, auto_pad) on X
    (NCHW, or NHWC when channels_last=1)."""
    contract(ctx)
    xs = ctx.shape(0)
    kernel = [int(k) for k in ctx.require_attr("kernel_shape")]
    if any(k < 1 for k in kernel):
        ctx.invalid("qlinearaveragepool.kernel_shape", f"kernel_shape {kernel} has a value below 1",
                    "give kernel_shape positive sizes")
    cl = int(ctx.attr("channels_last", 0))
    if xs is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    if len(xs) != len(kernel) + 2:
        ctx.invalid("qlinearaveragepool.kernel_shape", f"X has rank {len(xs)} but kernel_shape has {len(kernel)} "
                    f"axes: kernel_shape has one size per spatial axis of X ({len(xs) - 2})",
                    f"give kernel_shape {max(len(xs) - 2, 0)} sizes")
    x = _to_nchw(xs) if cl else xs
    out = (x[0], x[1], *_sliding(ctx, x, kernel, bool(int(ctx.attr("ceil_mode", 0))), True))
    ctx.set_output(0, _to_nhwc(out) if cl else out, ctx.dtype(0))


@register(MS, "QLinearGlobalAveragePool", since_version=1)
def qlinear_global_average_pool(ctx):
    """(N, C, 1, .., 1), or (N, 1, .., 1, C) when channels_last=1."""
    contract(ctx)
    xs = ctx.shape(0)
    out = None
    if xs is not None:
        if len(xs) < 3:
            ctx.invalid("qlinearglobalaveragepool.rank", f"X has rank {len(xs)}: it is (N x C x D1 ... Dn) with at "
                        "least one spatial axis (onnxruntime: \"Input dimension cannot be less than 3\")",
                        "give X a batch, a channel and a spatial axis")
        ones = (1,) * (len(xs) - 2)
        out = (xs[0], *ones, xs[-1]) if int(ctx.attr("channels_last", 0)) else (xs[0], xs[1], *ones)
    ctx.set_output(0, out, ctx.dtype(0))


# ---------------------------------------------------------------- Conv / Gemm / Concat
@register(MS, "QLinearConv", since_version=1)
def qlinear_conv_ms(ctx):
    """x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B: Conv's shapes on x and w
    (NCHW, or NHWC when channels_last=1)."""
    contract(ctx)
    xs = ctx.shape(0)
    cl = int(ctx.attr("channels_last", 0))
    shapes = {0: _to_nchw(xs)} if cl else {}
    view = View(ctx, [0, 3, 8], shapes=shapes, on_output=lambda i, s, d: (_to_nhwc(s) if cl else s, d))
    _conv(view, 0, 1, 2, ctx.dtype(7) or ctx.dtype(0))


@register(MS, "QGemm", since_version=1)
def qgemm(ctx):
    """A (input 0), B (input 3), C (input 6): Gemm's shapes.  The output is quantized
    (y_zero_point's type) when y_scale is given, float otherwise."""
    contract(ctx)
    if ctx.has_input(7):
        dt = _quant_dtype(ctx, 8)
    else:
        dt = FLOAT
    view = View(ctx, [0, 3, 6], on_output=lambda i, s, d: (s, dt))
    _gemm(view)


@register(MS, "QLinearConcat", since_version=1)
def qlinear_concat(ctx):
    """Y_scale, Y_zero_point, then (tensor, scale, zero point) per input: Concat's shapes
    on the tensors; the output has Y_zero_point's type."""
    contract(ctx)
    n = ctx.num_inputs
    if n < 5 or (n - 2) % 3:
        ctx.invalid("qlinearconcat.arity", f"QLinearConcat has {n} inputs: it takes Y_scale, Y_zero_point, then a "
                    "(tensor, scale, zero point) triple per input", "give QLinearConcat 2 + 3k inputs (k >= 1)")
    dt = ctx.dtype(1)
    view = View(ctx, list(range(2, n, 3)), on_output=lambda i, s, d: (s, dt or d))
    concat(view)


# ---------------------------------------------------------------- MatMul family
def _bias_n(ctx, i, out, rule):
    if out:
        vector_of(ctx, i, out[-1], rule, "bias", "B's last dim")


@register(MS, "DynamicQuantizeMatMul", since_version=1)
def dynamic_quantize_matmul(ctx):
    """numpy.matmul(A, B) in A's (float) type; bias (input 4) has B's last dim (onnxruntime:
    "bias tensor's element count must equal B's last dimension")."""
    contract(ctx)
    out = _matmul_shape(ctx, ctx.shape(0), ctx.shape(1), "DynamicQuantizeMatMul")
    _bias_n(ctx, 4, out, "dynamicquantizematmul.bias")
    ctx.set_output(0, out, ctx.dtype(0) or FLOAT)


@register(MS, "MatMulIntegerToFloat", since_version=1)
def matmul_integer_to_float(ctx):
    """numpy.matmul(A, B) in the scales' type; bias (input 6) has B's last dim."""
    contract(ctx)
    out = _matmul_shape(ctx, ctx.shape(0), ctx.shape(1), "MatMulIntegerToFloat")
    _bias_n(ctx, 6, out, "matmulintegertofloat.bias")
    ctx.set_output(0, out, ctx.dtype(2) or FLOAT)


@register(MS, "MatMulNBits", since_version=1)
def matmul_nbits(ctx):
    """A (..., K) times the N-bit weight (K, N) given by the attributes: Y is (..., N) (a 1-D
    A gives (N,)).  A's last dim equals K; B is (N, ceil(K / block_size), block_size * bits / 8),
    where each dim may also be 0 (an omitted projection); bias has length N."""
    contract(ctx)
    k = int(ctx.require_attr("K"))
    n = int(ctx.require_attr("N"))
    bs = int(ctx.require_attr("block_size"))
    bits = int(ctx.attr("bits", 4))
    if k < 0 or n < 0:
        ctx.invalid("matmulnbits.kn", f"K={k} and N={n}: both are sizes of the weight matrix (>= 0)",
                    "set K and N to the weight's input and output feature counts")
    if bs < 16 or bs & (bs - 1):
        ctx.invalid("matmulnbits.block_size", f"block_size {bs} is not a power of 2 >= 16",
                    "set block_size to 16, 32, 64, 128, ...")
    if not 2 <= bits <= 8:
        ctx.invalid("matmulnbits.bits", f"bits {bits} is not in 2..8", "set bits to 2, 4 or 8")
    a = ctx.shape(0)
    out = None
    if a is not None:
        if len(a) == 0:
            ctx.invalid("matmulnbits.rank", "A is a scalar: it is (..., K)", "give A the shape (..., K)")
        unify(ctx, a[-1], k, "matmulnbits.k", f"A's last dim {show(a[-1])} must equal the attribute K = {k}")
        out = (*a[:-1], n)
    b = ctx.shape(1)
    if b is not None and len(b) == 3 and not int(ctx.attr("weight_prepacked", 0) or 0):
        normal = (n, -(-k // bs), bs * bits // 8)
        for ax, (d, want) in enumerate(zip(b, normal)):
            if d != want and d != 0:
                ctx.require(any_of(eq(d, want), eq(d, 0)), "matmulnbits.b",
                            f"B axis {ax} ({show(d)}) must be {want} (N, k_blocks, blob_size) or 0")
    vector_of(ctx, 5, n, "matmulnbits.bias", "bias", "N")
    ctx.set_output(0, out, ctx.dtype(0))


# ---------------------------------------------------------------- GatherBlockQuantized
_PACKED = {ir.DataType.UINT8}
_INTQ = {ir.DataType.UINT8, ir.DataType.INT4, ir.DataType.UINT4}
_FLOATQ = {dt for dt in ir.DataType if dt.name.startswith(("FLOAT8", "FLOAT4"))}


@register(MS, "GatherBlockQuantized", since_version=1)
def gather_block_quantized(ctx):
    """Gather on the dequantized data: data.shape with axis gather_axis replaced by
    indices.shape.  uint8 data with bits < 8 packs 8 / bits values per byte along the last
    axis, so the logical last dim is data.shape[-1] * 8 / bits (onnxruntime's kernel).
    For integer data, scales match the logical shape except on quantize_axis, where they
    have ceil(dim / block_size)."""
    contract(ctx)
    d = ctx.shape(0)
    idx = ctx.shape(1)
    dt = ctx.dtype(0)
    bits = int(ctx.attr("bits", 4))
    if bits not in (2, 4, 8) and dt is not None and dt not in _FLOATQ:
        ctx.invalid("gatherblockquantized.bits", f"bits {bits} is not 2, 4 or 8", "set bits to 2, 4 or 8")
    bs = int(ctx.attr("block_size", 128))
    if not (bs >= 16 and not bs & (bs - 1)) and not (bs == 0 and (dt is None or dt in _FLOATQ)):
        ctx.invalid("gatherblockquantized.block_size", f"block_size {bs} is not a power of 2 >= 16"
                    + ("" if dt in _FLOATQ else " (0 only for float8 / float4 data)"),
                    "set block_size to 16, 32, 64, 128, ...")
    if d is None or idx is None:
        ctx.set_output(0, None, ctx.dtype(2))
        return
    if len(d) == 0:
        ctx.invalid("gatherblockquantized.rank", "data is a scalar: it is of rank >= 1",
                    "give data rank >= 1")
    g = norm_axis(ctx, int(ctx.attr("gather_axis", 0)), len(d), "gather_axis")
    q = norm_axis(ctx, int(ctx.attr("quantize_axis", 1)), len(d), "quantize_axis")
    logical = list(d)
    if dt in _PACKED and bits < 8:
        logical[-1] = E.mul(d[-1], 8 // bits)
    s = ctx.shape(2)
    if s is not None and len(s) != len(d):
        ctx.invalid("gatherblockquantized.scales", f"scales has rank {len(s)} and data {len(d)}: scales has "
                    "data's rank", f"give scales rank {len(d)}")
    if s is not None and dt in _INTQ and bs > 0:
        for ax, (sd, ld) in enumerate(zip(s, logical)):
            want = E.ceildiv(ld, bs) if ax == q else ld
            unify(ctx, sd, want, "gatherblockquantized.scales",
                  f"scales axis {ax} ({show(sd)}) must equal {show(want)}"
                  + (f" (ceil of data's {show(ld)} / block_size {bs})" if ax == q else " (data's size)"))
    out = (*logical[:g], *idx, *logical[g + 1:])
    ctx.set_output(0, out, ctx.dtype(2))


# ---------------------------------------------------------------- Quantize / Dequantize
def _per_axis(ctx, x, si):
    s = ctx.shape(si)
    if x is None or s is None or len(s) == 0 or (len(s) == 1 and s[0] == 1):
        return
    axis = ctx.attr("axis")
    if len(s) == 1 and axis is not None:
        a = norm_axis(ctx, int(axis), len(x))
        unify(ctx, s[0], x[a], "quantizelinear.axis",
              f"the scale's length {show(s[0])} must equal axis {a} of x ({show(x[a])})")


@register(MS, "QuantizeLinear", since_version=1)
def quantize_linear_ms(ctx):
    """y has x's shape, in y_zero_point's type (uint8 when omitted); a 1-D scale has the
    length of x's ``axis``."""
    contract(ctx)
    x = ctx.shape(0)
    _per_axis(ctx, x, 1)
    ctx.set_output(0, x, _quant_dtype(ctx, 2))


@register(MS, "DequantizeLinear", since_version=1)
def dequantize_linear_ms(ctx):
    """y has x's shape, in x_scale's type; a 1-D scale has the length of x's ``axis``."""
    contract(ctx)
    x = ctx.shape(0)
    _per_axis(ctx, x, 1)
    ctx.set_output(0, x, ctx.dtype(1) or FLOAT)
