"""onnxruntime's activation contrib ops: Gelu, QuickGelu, FastGelu, BiasGelu,
ScaledSiLU, BiasAdd, BiasSplitGelu, BiasDropout, BiasSoftmax.

Output shapes are X's except BiasSplitGelu (last axis halved).  Bias inputs
are 1-D with X's last dim (onnxruntime's CPU kernels: "Input 1 dimension 0
should have same length as the last dimension of input 0").  BiasAdd,
BiasSplitGelu, BiasDropout and BiasSoftmax have CUDA kernels only and follow
the spec.
"""
from __future__ import annotations

from ... import irtypes as ir

from ... import expr as E
from ...constraints import eq
from ...printing import show
from ...registry import register
from ..common import norm_axis
from ._util import MS, contract, last_dim, onto, same_shape, vector_of


def _same(ctx):
    ctx.set_output(0, ctx.shape(0), ctx.dtype(0))


@register(MS, "Gelu", since_version=1)
@register(MS, "QuickGelu", since_version=1)
def gelu(ctx):
    contract(ctx)
    _same(ctx)


@register(MS, "FastGelu", since_version=1)
@register(MS, "BiasGelu", since_version=1)
def bias_gelu(ctx):
    """Y has X's shape; the (optional for FastGelu) bias is 1-D of X's last dim."""
    contract(ctx)
    x = ctx.shape(0)
    if x is not None and len(x) == 0:
        ctx.invalid(f"{ctx.op_type.lower()}.rank", f"X is a scalar: {ctx.op_type} takes X of rank >= 1 "
                    "(onnxruntime: \"Input 0 is expected to have 1 or more dimensions\")",
                    f"give {ctx.op_type} an X of rank >= 1")
    if ctx.has_input(1):
        vector_of(ctx, 1, last_dim(ctx, x), f"{ctx.op_type.lower()}.bias", "bias", "X's last dim")
    _same(ctx)


@register(MS, "ScaledSiLU", since_version=1)
def scaled_silu(ctx):
    """Y has X's shape; the optional scale is a scalar (onnxruntime: "scale must be a scalar")."""
    contract(ctx)
    s = ctx.shape(1) if ctx.has_input(1) else None
    if s is not None and len(s) != 0:
        ctx.invalid("scaledsilu.scale", f"scale has rank {len(s)}: it is a scalar", "give scale the shape ()")
    _same(ctx)


@register(MS, "BiasAdd", since_version=1)
def bias_add(ctx):
    """X (N, S, C) + bias (C) + skip (N, S, C): Y has X's shape.  (CUDA only.)"""
    contract(ctx)
    x = ctx.shape(0)
    if x is not None and len(x) != 3:
        ctx.invalid("biasadd.rank", f"X has rank {len(x)}: it is 3-D (N, S, C)", "give X the shape (N, S, C)")
    vector_of(ctx, 1, last_dim(ctx, x), "biasadd.bias", "bias", "the channel count")
    x = same_shape(ctx, x, ctx.shape(2), "biasadd.skip", "X", "skip")
    ctx.set_output(0, x, ctx.dtype(0))


@register(MS, "BiasSplitGelu", since_version=1)
def bias_split_gelu(ctx):
    """X (N, S, D) + bias (D), split in halves: Y is (N, S, D / 2), D even.  (CUDA only.)"""
    contract(ctx)
    x = ctx.shape(0)
    if x is not None and len(x) != 3:
        ctx.invalid("biassplitgelu.rank", f"X has rank {len(x)}: it is 3-D (N, S, D)", "give X the shape (N, S, D)")
    d = last_dim(ctx, x)
    vector_of(ctx, 1, d, "biassplitgelu.bias", "bias", "X's hidden dim")
    out = None
    if x is not None:
        ctx.require(eq(E.mod(d, 2), 0), "biassplitgelu.even", f"the hidden dim {show(d)} must be even")
        out = (x[0], x[1], E.floordiv(d, 2))
    ctx.set_output(0, out, ctx.dtype(0))


@register(MS, "BiasDropout", since_version=1)
def bias_dropout(ctx):
    """Dropout(data + bias) + residual: output and mask have data's shape; bias is 1-D of the
    last dim or data's shape; residual has data's shape.  (CUDA only.)"""
    contract(ctx)
    x = ctx.shape(0)
    b = ctx.shape(1)
    if x is not None and b is not None:
        if len(b) == 1:
            vector_of(ctx, 1, last_dim(ctx, x), "biasdropout.bias", "bias", "data's last dim")
        else:
            x = same_shape(ctx, x, b, "biasdropout.bias", "data", "bias")
    if ctx.has_input(2):
        x = same_shape(ctx, x, ctx.shape(2), "biasdropout.residual", "data", "residual")
    ctx.set_output(0, x, ctx.dtype(0))
    if ctx.has_output(1):
        ctx.set_output(1, x, ir.DataType.BOOL)


@register(MS, "BiasSoftmax", since_version=1)
def bias_softmax(ctx):
    """softmax(data + bias): output has data's shape, bias broadcasts onto data (one direction).  (CUDA only.)"""
    contract(ctx)
    x = ctx.shape(0)
    if x is not None:
        norm_axis(ctx, int(ctx.attr("axis", 1)), len(x))
    onto(ctx, x, 1, "biassoftmax.bias", "bias")
    ctx.set_output(0, x, ctx.dtype(0))
