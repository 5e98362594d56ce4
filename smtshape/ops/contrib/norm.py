"""onnxruntime's normalization contrib ops: SkipLayerNormalization,
SkipSimplifiedLayerNormalization, EmbedLayerNormalization,
SimplifiedLayerNormalization and LayerNormalization (both registered by
onnxruntime in the default domain from version 1, before ONNX's opset 17),
GroupNorm, SkipGroupNorm, BranchwiseRMSNorm.

Shapes follow onnxruntime's CPU kernels (checked in tests/ops/test_contrib_norm.py);
GroupNorm / SkipGroupNorm have CUDA kernels only and follow the spec.
"""
from __future__ import annotations

from ... import irtypes as ir

from ... import expr as E
from ...constraints import any_of, eq, le
from ...printing import show
from ...registry import register
from ..common import norm_axis, unify
from ..elementwise import unidirectional
from ..norm import layer_norm
from ._util import FLOAT, INT32, MS, same_shape, vector_of


def _stats_dtype(ctx, default=FLOAT):
    st = ctx.attr("stash_type")
    return ir.DataType(int(st)) if st is not None else default


# ---------------------------------------------------------------- Skip(Simplified)LayerNormalization
def _skip_layer_norm(ctx, simplified: bool):
    """input (B, S, H) or (T, H); skip the same, or (1, S, H) / (S, H) for a 3-D input
    (onnxruntime: "last two dimensions of skip needs to be same as input"); gamma, beta,
    bias of length H.  Outputs: output and input_skip_bias_sum have input's shape; mean and
    inv_std_var have input's shape with the last axis 1."""
    ctx.check_inputs(3, 4 if simplified else 5)
    x, s = ctx.shape(0), ctx.shape(1)
    for what, t in (("input", x), ("skip", s)):
        if t is not None and len(t) not in (2, 3):
            ctx.fail(f"{what} must have rank 2 or 3, has rank {len(t)}")
    h = x[-1] if x is not None else (s[-1] if s is not None else None)
    if x is not None and s is not None:
        if len(s) > len(x):
            ctx.fail(f"skip has rank {len(s)}, more than input's rank {len(x)}")
        off = len(x) - len(s)
        for k in range(len(s)):
            a, b = x[off + k], s[k]
            if len(s) == 3 and k == 0:
                if a != b and b != 1:
                    ctx.require(any_of(eq(b, a), eq(b, 1)), "skiplayernorm.skip_batch",
                                f"skip's batch axis ({show(b)}) must equal input's ({show(a)}) or be 1")
            else:
                unify(ctx, a, b, "skiplayernorm.skip",
                      f"skip axis {k} ({show(b)}) must equal input axis {off + k} ({show(a)})")
    params = ((2, "gamma"), (3, "bias")) if simplified else ((2, "gamma"), (3, "beta"), (4, "bias"))
    for i, what in params:
        vector_of(ctx, i, h, "skiplayernorm.params", what)
    ctx.set_output(0, x, ctx.dtype(0))
    stats = None if x is None else tuple(x[:-1]) + (1,)
    for k in (1, 2):
        if ctx.has_output(k):
            ctx.set_output(k, stats, FLOAT)
    if ctx.has_output(3):
        ctx.set_output(3, x, ctx.dtype(0))


@register(MS, "SkipLayerNormalization", since_version=1)
def skip_layer_norm(ctx):
    _skip_layer_norm(ctx, False)


@register(MS, "SkipSimplifiedLayerNormalization", since_version=1)
def skip_simplified_layer_norm(ctx):
    _skip_layer_norm(ctx, True)


# ---------------------------------------------------------------- SimplifiedLayerNormalization
def simplified_layer_norm(ctx):
    """RMS norm over axes [axis, rank): Y has X's shape; scale broadcasts onto X.shape[axis:];
    inv_std_var is X.shape[:axis] followed by ones (onnxruntime's kernel; its own type
    inference claims X.shape[axis:] kept for axis != -1, which the kernel does not produce)."""
    ctx.check_inputs(2, 2)
    x = ctx.shape(0)
    axis = int(ctx.attr("axis", -1))
    a = None
    if x is not None:
        a = norm_axis(ctx, axis, len(x))
        unidirectional(ctx, x[a:], ctx.shape(1), "simplifiedlayernorm.scale", "scale")
    ctx.set_output(0, x, ctx.dtype(1) or ctx.dtype(0))
    if ctx.has_output(1):
        stats = None if x is None else tuple(x[:a]) + (1,) * (len(x) - a)
        ctx.set_output(1, stats, _stats_dtype(ctx))


register("", "SimplifiedLayerNormalization", since_version=1)(simplified_layer_norm)
register(MS, "SimplifiedLayerNormalization", since_version=1)(simplified_layer_norm)
# onnxruntime registers LayerNormalization in the default domain from version 1 (ONNX has it
# from opset 17): same semantics as ONNX's.
register("", "LayerNormalization", since_version=1)(layer_norm)
register(MS, "LayerNormalization", since_version=1)(layer_norm)


# ---------------------------------------------------------------- EmbedLayerNormalization
@register(MS, "EmbedLayerNormalization", since_version=1)
def embed_layer_norm(ctx):
    """input_ids (B, S); segment_ids, mask (B, S); word / position / segment embeddings
    (*, H); gamma, beta (H); position_ids (B, S) or (1, S).  Outputs (B, S, H) in the
    embeddings' type, mask_index (B,) int32, embedding_sum (B, S, H).  Without position_ids
    the positions are 0..S-1, so S <= the position table's rows (onnxruntime fails
    "input index out of range" otherwise)."""
    ctx.check_inputs(1, 9)
    missing = [i for i in (0, 2, 3, 5, 6) if not ctx.has_input(i)]
    if missing:
        ctx.fail(f"inputs {missing} (input_ids, word/position embeddings, gamma, beta) are required")
    ids = ctx.shape(0)
    if ids is not None and len(ids) != 2:
        ctx.fail(f"input_ids must be 2-D (batch, sequence), has rank {len(ids)}")
    for i, what in ((1, "segment_ids"), (7, "mask")):
        if ctx.has_input(i):
            ids = same_shape(ctx, ids, ctx.shape(i), "embedlayernorm.ids", "input_ids", what)
    h = None
    tables = {}
    for i, what in ((2, "word_embedding"), (3, "position_embedding"), (4, "segment_embedding")):
        if not ctx.has_input(i):
            continue
        t = ctx.shape(i)
        if t is None:
            continue
        if len(t) != 2:
            ctx.fail(f"{what} must be 2-D (rows, hidden), has rank {len(t)}")
        tables[i] = t
        h = t[1] if h is None else unify(ctx, h, t[1], "embedlayernorm.hidden",
                                         f"{what}'s hidden size {show(t[1])} must equal {show(h)}")
    for i, what in ((5, "gamma"), (6, "beta")):
        vector_of(ctx, i, h, "embedlayernorm.params", what)
    if ctx.has_input(8):
        p = ctx.shape(8)
        if p is not None and ids is not None:
            if len(p) != 2:
                ctx.fail(f"position_ids must be 2-D, has rank {len(p)}")
            if p[0] != ids[0] and p[0] != 1:
                ctx.require(any_of(eq(p[0], ids[0]), eq(p[0], 1)), "embedlayernorm.position_ids",
                            f"position_ids' batch axis ({show(p[0])}) must equal the batch {show(ids[0])} or be 1")
            unify(ctx, p[1], ids[1], "embedlayernorm.position_ids",
                  f"position_ids' sequence axis ({show(p[1])}) must equal the sequence length {show(ids[1])}")
    elif ids is not None and 3 in tables:
        ctx.require(le(ids[1], tables[3][0]), "embedlayernorm.positions",
                    f"the sequence length {show(ids[1])} must be at most the position_embedding rows "
                    f"{show(tables[3][0])} (positions are 0..S-1)")
    out = None if ids is None or h is None else (ids[0], ids[1], h)
    if out is None and ids is not None:
        out = (ids[0], ids[1], ctx.unknown_dim(f"{ctx.name}_hidden"))
    dt = ctx.dtype(2)
    ctx.set_output(0, out, dt)
    if ctx.has_output(1):
        ctx.set_output(1, None if ids is None else (ids[0],), INT32)
    if ctx.has_output(2):
        ctx.set_output(2, out, dt)


# ---------------------------------------------------------------- GroupNorm / SkipGroupNorm
def _group_norm_common(ctx, gamma_i, beta_i):
    x = ctx.shape(0)
    groups = int(ctx.require_attr("groups"))
    if groups <= 0:
        ctx.fail(f"groups must be positive, is {groups}")
    cl = int(ctx.attr("channels_last", 1))
    c = None
    if x is not None:
        if len(x) < 2:
            ctx.fail(f"X must have rank >= 2, has rank {len(x)}")
        c = x[-1] if cl else x[1]
        ctx.require(eq(E.mod(c, groups), 0), "groupnorm.divisible",
                    f"channel count {show(c)} must be divisible by groups {groups}")
    vector_of(ctx, gamma_i, c, "groupnorm.params", "gamma", "the channel count")
    vector_of(ctx, beta_i, c, "groupnorm.params", "beta", "the channel count")
    return x, c, cl


@register(MS, "GroupNorm", since_version=1)
def group_norm(ctx):
    """Y has X's shape; C (last axis when channels_last=1, the default; axis 1 otherwise) is
    divisible by groups; gamma and beta have length C.  (CUDA-only in onnxruntime.)"""
    ctx.check_inputs(3, 3)
    x, _, _ = _group_norm_common(ctx, 1, 2)
    ctx.set_output(0, x, ctx.dtype(0))


@register(MS, "SkipGroupNorm", since_version=1)
def skip_group_norm(ctx):
    """GroupNorm of X + skip + bias.  skip is (N, H, W, C), (N, 1, 1, C) or (N, C) (channels
    last); bias has length C.  Y and S have X's shape.  (CUDA-only in onnxruntime.)"""
    ctx.check_inputs(4, 5)
    x, c, cl = _group_norm_common(ctx, 1, 2)
    s = ctx.shape(3)
    if x is not None and s is not None:
        if len(s) == 2:
            unify(ctx, s[0], x[0], "skipgroupnorm.skip", f"skip's batch {show(s[0])} must equal X's {show(x[0])}")
            unify(ctx, s[1], c, "skipgroupnorm.skip", f"skip's channels {show(s[1])} must equal X's {show(c)}")
        elif len(s) == len(x):
            for k, (a, b) in enumerate(zip(x, s)):
                if k in (0, len(x) - 1 if cl else 1):
                    unify(ctx, b, a, "skipgroupnorm.skip", f"skip axis {k} ({show(b)}) must equal X's ({show(a)})")
                elif a != b and b != 1:
                    ctx.require(any_of(eq(b, a), eq(b, 1)), "skipgroupnorm.skip",
                                f"skip axis {k} ({show(b)}) must equal X's ({show(a)}) or be 1")
        else:
            ctx.fail(f"skip must have rank 2 or X's rank {len(x)}, has rank {len(s)}")
    vector_of(ctx, 4, c, "skipgroupnorm.bias", "bias", "the channel count")
    ctx.set_output(0, x, ctx.dtype(0))
    if ctx.has_output(1):
        ctx.set_output(1, x, ctx.dtype(0))


# ---------------------------------------------------------------- BranchwiseRMSNorm
@register(MS, "BranchwiseRMSNorm", since_version=1)
def branchwise_rms_norm(ctx):
    """Y has X's shape; with num_branches the last axis is divisible by it."""
    ctx.check_inputs(1, 2)
    x = ctx.shape(0)
    nb = int(ctx.attr("num_branches", 0) or 0)
    if x is not None and nb > 0:
        if len(x) < 1:
            ctx.fail("X must have rank >= 1")
        ctx.require(eq(E.mod(x[-1], nb), 0), "branchwisermsnorm.branches",
                    f"the last axis {show(x[-1])} must be divisible by num_branches {nb}")
    ctx.set_output(0, x, ctx.dtype(0))
