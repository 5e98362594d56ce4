"""onnxruntime's fused com.microsoft ops: FusedConv, NhwcConv, FusedGemm,
FusedMatMul (+ TransposeMatMul), GemmFastGelu, GemmFloat8.

They reuse the Conv / Gemm / MatMul rules (``ops/conv.py``, ``ops/linalg.py``)
through a remapped view of the context; the extra inputs (FusedConv's sum
``Z``) are constrained against the computed output.
"""
from __future__ import annotations

from ...registry import register
from ..conv import _conv
from ..linalg import _gemm, _matmul_shape
from ._util import MS, View, contract, same_shape, vector_of


# ---------------------------------------------------------------- FusedConv
@register(MS, "FusedConv", since_version=1)
def fused_conv(ctx):
    """Conv + activation (+ an added tensor Z).  onnxruntime's CPU kernel requires Z's
    shape to be exactly Y's ("output and sum shape must match"): no broadcasting."""
    contract(ctx)
    view = View(ctx, [0, 1, 2])
    _conv(view, 0, 1, 2, ctx.dtype(0))
    y = view.outputs_seen.get(0)
    if ctx.has_input(3):
        same_shape(ctx, y, ctx.shape(3), "fusedconv.sum", "the Conv output Y", "the sum input Z")


# ---------------------------------------------------------------- NhwcConv
def _to_nchw(s):
    return None if s is None else (s[0], s[-1], *s[1:-1])


def _to_nhwc(s):
    return None if s is None else (s[0], *s[2:], s[1])


@register(MS, "NhwcConv", since_version=1)
def nhwc_conv(ctx):
    """Conv on channels-last tensors: X is (N, D1..Dn, C) and Y is (N, D1'..Dn', M).
    The weight follows onnxruntime's NHWC fusion (and its SymbolicShapeInference):
    (M, k1..kn, C/group)."""
    contract(ctx)
    xs, ws = ctx.shape(0), ctx.shape(1)
    if xs is not None and len(xs) < 3:
        ctx.invalid("nhwcconv.rank", f"X has rank {len(xs)}: NhwcConv takes X of rank >= 3 (N, spatial..., C)",
                    "give X the shape (N, D1, ..., Dn, C)")
    if ws is not None and len(ws) < 3:
        ctx.invalid("nhwcconv.rank", f"W has rank {len(ws)}: NhwcConv takes W of rank >= 3 (M, k1..kn, C/group)",
                    "give W the shape (M, k1, ..., kn, C/group)")
    ctx.warn("NhwcConv: weight read as (M, k1..kn, C/group), the layout of onnxruntime's NHWC fusion "
             "and SymbolicShapeInference (onnxruntime has no CPU kernel to check it against)")
    view = View(ctx, [0, 1, 2], shapes={0: _to_nchw(xs), 1: _to_nchw(ws)},
                on_output=lambda i, s, d: (_to_nhwc(s), d))
    _conv(view, 0, 1, 2, ctx.dtype(0))


# ---------------------------------------------------------------- FusedGemm
@register(MS, "FusedGemm", since_version=1)
def fused_gemm(ctx):
    """Gemm + activation: Gemm's shapes (A, B, C broadcast to (M, N))."""
    contract(ctx)
    _gemm(ctx)


@register(MS, "GemmFloat8", since_version=1)
def gemm_float8(ctx):
    """Gemm on float8 A, B (+ C), with scales as inputs 3..5: Gemm's shapes; the output
    type is the ``dtype`` attribute (default float)."""
    contract(ctx)
    from onnx_ir import DataType
    dt = DataType(int(ctx.attr("dtype", 1)))
    _gemm(View(ctx, [0, 1, 2], on_output=lambda i, s, d: (s, dt)))


# ---------------------------------------------------------------- FusedMatMul
def _fused_matmul_shape(ctx, a, b, what):
    """numpy.matmul after onnxruntime's FusedMatMul transposes.

    ``transBatchX`` moves X's first axis behind its batch axes ((d0, b1..bk, dl) is read as
    (b1..bk, d0, dl)) and needs both inputs of the same rank >= 3 (onnxruntime's
    MatMulComputeHelper); ``transX`` then swaps the last two axes."""
    ta, tb = int(ctx.attr("transA", 0)), int(ctx.attr("transB", 0))
    tba, tbb = int(ctx.attr("transBatchA", 0)), int(ctx.attr("transBatchB", 0))
    if a is None or b is None:
        return None
    if (tba or tbb) and not (len(a) == len(b) and len(a) >= 3):
        ctx.invalid(f"{ctx.op_type.lower()}.trans_batch", f"{what} with transBatchA/transBatchB has inputs of ranks "
                    f"{len(a)} and {len(b)}: it takes two inputs of one rank >= 3",
                    "give both inputs one rank >= 3, or drop transBatchA / transBatchB")

    def prep(s, tbatch, t):
        s = tuple(s)
        if tbatch:
            s = s[1:-1] + (s[0], s[-1])
        if t and len(s) >= 2:
            s = s[:-2] + (s[-1], s[-2])
        return s

    return _matmul_shape(ctx, prep(a, tba, ta), prep(b, tbb, tb), what)


@register(MS, "FusedMatMul", since_version=1)
@register(MS, "TransposeMatMul", since_version=1)
def fused_matmul(ctx):
    contract(ctx)
    ctx.set_output(0, _fused_matmul_shape(ctx, ctx.shape(0), ctx.shape(1), ctx.op_type), ctx.dtype(0))


# ---------------------------------------------------------------- GemmFastGelu
@register(MS, "GemmFastGelu", since_version=1)
def gemm_fast_gelu(ctx):
    """MatMul(X, W) + bias then FastGelu: numpy.matmul's shape; bias has the output's last dim."""
    contract(ctx)
    out = _matmul_shape(ctx, ctx.shape(0), ctx.shape(1), "GemmFastGelu")
    if out is not None and out:
        vector_of(ctx, 2, out[-1], "gemmfastgelu.bias", "bias", "the output's last dim")
    ctx.set_output(0, out, ctx.dtype(0))

