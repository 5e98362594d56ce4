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
from ..common import unidirectional
from ..norm import layer_norm
from ._util import FLOAT, INT32, MS, contract, same_shape, vector_of


def _stats_dtype(ctx, default=FLOAT):
    st = ctx.attr("stash_type")
    return ir.DataType(int(st)) if st is not None else default


# ---------------------------------------------------------------- Skip(Simplified)LayerNormalization
def _skip_layer_norm(ctx, simplified: bool):
    """input (B, S, H) or (T, H); skip the same, or (1, S, H) / (S, H) for a 3-D input
    (onnxruntime: "last two dimensions of skip needs to be same as input"); gamma, beta,
    bias of length H.  Outputs: output and input_skip_bias_sum have input's shape; mean and
    inv_std_var have input's shape with the last axis 1."""
    contract(ctx)
    x, s = ctx.shape(0), ctx.shape(1)
    for what, t in (("input", x), ("skip", s)):
        if t is not None and len(t) not in (2, 3):
            ctx.invalid("skiplayernorm.rank", f"{what} has rank {len(t)}: it is (batch, sequence, hidden) or "
                        "(tokens, hidden)", f"give {what} rank 3 or 2")
    h = x[-1] if x is not None else (s[-1] if s is not None else None)
    if x is not None and s is not None:
        if len(s) > len(x):
            ctx.invalid("skiplayernorm.skip", f"skip has rank {len(s)}, more than input's rank {len(x)}: skip has "
                        "input's shape, or drops or ones its batch axis", "give skip the input's shape")
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
    contract(ctx)
    ids = ctx.shape(0)
    if ids is not None and len(ids) != 2:
        ctx.invalid("embedlayernorm.rank", f"input_ids has rank {len(ids)}: it is 2-D (batch, sequence)",
                    "give input_ids the shape (batch, sequence)")
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
            ctx.invalid("embedlayernorm.rank", f"{what} has rank {len(t)}: it is 2-D (rows, hidden)",
                        f"give {what} the shape (rows, hidden)")
        tables[i] = t
        h = t[1] if h is None else unify(ctx, h, t[1], "embedlayernorm.hidden",
                                         f"{what}'s hidden size {show(t[1])} must equal {show(h)}")
    for i, what in ((5, "gamma"), (6, "beta")):
        vector_of(ctx, i, h, "embedlayernorm.params", what)
    if ctx.has_input(8):
        p = ctx.shape(8)
        if p is not None and ids is not None:
            if len(p) != 2:
                ctx.invalid("embedlayernorm.rank", f"position_ids has rank {len(p)}: it is (batch, sequence) or "
                            "(1, sequence)", "give position_ids the shape (batch, sequence) or (1, sequence)")
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
        ctx.invalid("groupnorm.groups", f"groups {groups} is not positive: it is a divisor of the channel count",
                    "set groups to a positive divisor of the channel count")
    act = ctx.attr("activation")
    if act is not None and int(act) not in (0, 1):
        ctx.invalid("groupnorm.activation", f"activation {int(act)} is not 0 (none) or 1 (SiLU)",
                    "set activation to 0 or 1")
    cl = int(ctx.attr("channels_last", 1))
    c = None
    if x is not None:
        if len(x) < 2:
            ctx.invalid("groupnorm.rank", f"X has rank {len(x)}: it is (N x H x W x C) or (N x C x H x W)",
                        "give X a batch and a channel axis")
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
    contract(ctx)
    x, _, _ = _group_norm_common(ctx, 1, 2)
    ctx.set_output(0, x, ctx.dtype(0))


@register(MS, "SkipGroupNorm", since_version=1)
def skip_group_norm(ctx):
    """GroupNorm of X + skip + bias.  skip is (N, H, W, C), (N, 1, 1, C) or (N, C) (channels
    last); bias has length C.  Y and S have X's shape.  (CUDA-only in onnxruntime.)"""
    contract(ctx)
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
            ctx.invalid("skipgroupnorm.skip", f"skip has rank {len(s)}: it is (N x H x W x C), (N x 1 x 1 x C) or "
                        f"(N x C), of rank 2 or X's rank {len(x)}", "give skip X's shape or the shape (N, C)")
    vector_of(ctx, 4, c, "skipgroupnorm.bias", "bias", "the channel count")
    ctx.set_output(0, x, ctx.dtype(0))
    if ctx.has_output(1):
        ctx.set_output(1, x, ctx.dtype(0))


# ---------------------------------------------------------------- BranchwiseRMSNorm
@register(MS, "BranchwiseRMSNorm", since_version=1)
def branchwise_rms_norm(ctx):
    """Y has X's shape; with num_branches the last axis is divisible by it."""
    contract(ctx)
    x = ctx.shape(0)
    nb = int(ctx.attr("num_branches", 0) or 0)
    if x is not None and nb > 0:
        if len(x) < 1:
            ctx.invalid("branchwisermsnorm.rank", "X is a scalar: flattened X is (..., C * H)",
                        "give X the shape (..., C * H)")
        ctx.require(eq(E.mod(x[-1], nb), 0), "branchwisermsnorm.branches",
                    f"the last axis {show(x[-1])} must be divisible by num_branches {nb}")
    ctx.set_output(0, x, ctx.dtype(0))
