"""The remaining com.microsoft ops that onnxruntime's SymbolicShapeInference handles:
UnfoldTensor, DynamicTimeWarping, MoE, HyperConnectionPreMix / PostMix,
RemovePadding / RestorePadding, PackedAttention, PackedMultiHeadAttention,
GatedRelativePositionBias, RelativePositionBias, SparseAttention.

UnfoldTensor, DynamicTimeWarping, MoE and the HyperConnection ops have CPU kernels
(tests/ops/test_contrib_misc.py); the padding-removal and packed-attention ops are
CUDA-only and follow the spec.
"""
from __future__ import annotations

from ... import expr as E
from ...constraints import eq, ge, le
from ...printing import show
from ...registry import register
from ..common import norm_axis, unify
from ._util import INT32, MS, contract, same_shape
from .attention import _div, _heads, _rank


@register(MS, "UnfoldTensor", since_version=1)
def unfold_tensor(ctx):
    """All windows of ``size`` along ``dim`` with ``step``: that axis becomes
    (d - size) // step + 1 and a last axis of ``size`` is appended (needs size <= d)."""
    contract(ctx)
    x = ctx.shape(0)
    size = int(ctx.require_attr("size"))
    step = int(ctx.attr("step", 1))
    if size <= 0 or step <= 0:
        ctx.invalid("unfoldtensor.size", f"size {size} and step {step}: both are positive",
                    "set size and step to positive values")
    out = None
    if x is not None:
        a = norm_axis(ctx, int(ctx.attr("dim", -1)), len(x), "dim")
        ctx.require(le(size, x[a]), "unfoldtensor.size", f"the window size {size} must be at most axis {a} "
                    f"({show(x[a])})")
        out = list(x)
        out[a] = E.add(E.floordiv(E.sub(x[a], size), step), 1)
        out = (*out, size)
    ctx.set_output(0, out, ctx.dtype(0))


@register(MS, "DynamicTimeWarping", since_version=1)
def dynamic_time_warping(ctx):
    """Cost matrix (M, N) or (1, M, N) -> path (2, x), max(M, N) <= x < M + N: x is a data symbol
    bounded by M + N."""
    contract(ctx)
    x = ctx.shape(0)
    out = None
    if x is not None:
        if len(x) not in (2, 3):
            ctx.invalid("dynamictimewarping.rank", f"the input has rank {len(x)}: it is (M, N) or (1, M, N)",
                        "give DynamicTimeWarping a cost matrix of shape (M, N) or (1, M, N)")
        if len(x) == 3:
            ctx.equal(x[0], 1, "dynamictimewarping.rank",
                      lambda: f"a 3-D cost matrix is (1, M, N): its axis 0 ({show(x[0])}) must be 1")
        m, n = x[-2], x[-1]
        steps = ctx.data_symbol(f"{ctx.name}_path", E.add(m, n), "DynamicTimeWarping path length "
                                "(max(M, N) <= x < M + N)")
        ctx.require(ge(steps, m), "dtw.path", f"the path length is at least M = {show(m)}")
        ctx.require(ge(steps, n), "dtw.path", f"the path length is at least N = {show(n)}")
        out = (2, steps)
    ctx.set_output(0, out, INT32)


@register(MS, "MoE", since_version=1)
@register(MS, "QMoE", since_version=1)
def moe(ctx):
    """Output has input's shape ((T, H) or (B, S, H)); router_probs has one row per token."""
    contract(ctx)
    x = ctx.shape(0)
    r = ctx.shape(1)
    if x is not None and r is not None and len(r) == 2 and len(x) in (2, 3):
        tokens = E.prod(x[:-1])
        unify(ctx, r[0], tokens, "moe.router", f"router_probs rows {show(r[0])} must equal the token count "
              f"{show(tokens)}")
    ctx.set_output(0, x, ctx.dtype(0))


@register(MS, "HyperConnectionPreMix", since_version=1)
def hyper_connection_pre_mix(ctx):
    """Grouped X (..., C, H) -> (..., H); flattened X (..., C * H) with num_branches = C -> (..., H)."""
    contract(ctx)
    x = ctx.shape(0)
    nb = int(ctx.attr("num_branches", 0) or 0)
    if nb < 0:
        ctx.invalid("hyperconnectionpremix.num_branches", f"num_branches {nb} is negative: it is the branch "
                    "count of flattened streams (0 for grouped ones)", "set num_branches >= 0")
    out = None
    if x is not None:
        if nb:
            if len(x) < 1:
                ctx.invalid("hyperconnectionpremix.rank", "flattened streams X is a scalar: it is (..., C * H)",
                            "give X the shape (..., C * H)")
            out = (*x[:-1], _div(ctx, x[-1], nb, "hyperconnection.branches", "the flattened stream width"))
        else:
            if len(x) < 2:
                ctx.invalid("hyperconnectionpremix.rank", f"grouped streams X has rank {len(x)}: it is (..., C, H)",
                            "give X the shape (..., C, H), or set num_branches for flattened streams")
            out = (*x[:-2], x[-1])
    ctx.set_output(0, out, ctx.dtype(0))


@register(MS, "HyperConnectionPostMix", since_version=1)
def hyper_connection_post_mix(ctx):
    contract(ctx)
    ctx.set_output(0, ctx.shape(0), ctx.dtype(0))


@register(MS, "RemovePadding", since_version=1)
def remove_padding(ctx):
    """input (B, S, H) -> output (T, H) with T = the number of real tokens (a data symbol,
    T <= B * S), token_offset (B, S), cumulated_seq_len (B + 1), max_seq_len (1).  (CUDA only.)"""
    contract(ctx)
    x = ctx.shape(0)
    _rank(ctx, x, (3,), "input")
    if x is None:
        for k in range(4):
            ctx.set_output(k, None, ctx.dtype(0) if k == 0 else INT32)
        return
    b, s, h = x
    t = ctx.data_symbol(f"{ctx.name}_tokens", E.mul(b, s), "RemovePadding token count (non-padding tokens)")
    ctx.set_output(0, (t, h), ctx.dtype(0))
    ctx.set_output(1, (b, s), INT32)
    ctx.set_output(2, (E.add(b, 1),), INT32)
    ctx.set_output(3, (1,), INT32)


@register(MS, "RestorePadding", since_version=1)
def restore_padding(ctx):
    """input (T, H) and token_offset (B, S) -> (B, S, H).  (CUDA only.)"""
    contract(ctx)
    x, off = ctx.shape(0), ctx.shape(1)
    _rank(ctx, x, (2,), "input")
    _rank(ctx, off, (2,), "token_offset")
    out = None if x is None or off is None else (off[0], off[1], x[1])
    ctx.set_output(0, out, ctx.dtype(0))


@register(MS, "PackedAttention", since_version=1)
def packed_attention(ctx):
    """input (T, Hin), weights (Hin, Hq + Hk + Hv) -> (T, Hv).  (CUDA only.)"""
    contract(ctx)
    n = _heads(ctx)
    x, w = ctx.shape(0), ctx.shape(1)
    _rank(ctx, x, (2,), "input")
    _rank(ctx, w, (2,), "weights")
    hv = None
    qkv = ctx.attr("qkv_hidden_sizes")
    if w is not None:
        if x is not None:
            unify(ctx, x[1], w[0], "packedattention.weights", f"weights' rows {show(w[0])} must equal the input "
                  f"hidden size {show(x[1])}")
        if qkv is not None:
            qkv = [int(v) for v in qkv]
            if len(qkv) != 3:
                ctx.invalid("packedattention.qkv_hidden_sizes", f"qkv_hidden_sizes {qkv} has {len(qkv)} values: it "
                            "gives the hidden sizes of Q, K and V", "give qkv_hidden_sizes three values")
            unify(ctx, w[1], sum(qkv), "packedattention.qkv", f"weights' columns {show(w[1])} must equal "
                  f"{sum(qkv)}")
            hv = qkv[2]
        else:
            hv = _div(ctx, w[1], 3, "packedattention.qkv", "weights' columns (three equal parts)")
        ctx.require(eq(E.mod(hv, n), 0), "packedattention.heads", f"V hidden {show(hv)} must be divisible by {n}")
    out = None if x is None else (x[0], hv if hv is not None else ctx.unknown_dim(f"{ctx.name}_hv"))
    ctx.set_output(0, out, ctx.dtype(0))


@register(MS, "PackedMultiHeadAttention", since_version=1)
def packed_multi_head_attention(ctx):
    """query (T, D) with value (T, Dv) -> (T, Dv); packed QKV (T, N, 3, H) -> (T, N * H).  (CUDA only.)"""
    contract(ctx)
    n = _heads(ctx)
    q = ctx.shape(0)
    _rank(ctx, q, (2, 4), "query")
    out = None
    if q is not None and len(q) == 4:
        unify(ctx, q[1], n, "packedmha.heads", f"packed QKV heads {show(q[1])} must equal num_heads {n}")
        unify(ctx, q[2], 3, "packedmha.packed", f"packed QKV axis 2 ({show(q[2])}) must be 3")
        out = (q[0], E.mul(n, q[3]))
    elif q is not None:
        k = ctx.shape(1) if ctx.has_input(1) else None
        v = ctx.shape(2) if ctx.has_input(2) else None
        if k is not None:
            same_shape(ctx, q, k, "packedmha.key", "query", "key")
        dv = q[1]
        if v is not None:
            _rank(ctx, v, (2,), "value")
            unify(ctx, v[0], q[0], "packedmha.tokens", f"value's tokens {show(v[0])} must equal query's {show(q[0])}")
            dv = v[1]
        out = (q[0], dv)
    ctx.set_output(0, out, ctx.dtype(0))


@register(MS, "GatedRelativePositionBias", since_version=1)
def gated_relative_position_bias(ctx):
    """(B, N, S, S): from token_offset (B, S) when given, from query_layer (B, S, N * H) otherwise.
    (CUDA only.)"""
    contract(ctx)
    n = _heads(ctx)
    off = ctx.shape(6) if ctx.has_input(6) else None
    q = ctx.shape(0)
    out = None
    if off is not None:
        _rank(ctx, off, (2,), "token_offset")
        out = (off[0], n, off[1], off[1])
    elif q is not None:
        _rank(ctx, q, (3,), "query_layer")
        out = (q[0], n, q[1], q[1])
    ctx.set_output(0, out, ctx.dtype(0))


@register(MS, "RelativePositionBias", since_version=1)
def relative_position_bias(ctx):
    """(1, num_heads, query_length, key_length): num_heads is bias_table's axis 1; the lengths are
    runtime scalars (their values when known, data symbols otherwise).  (CUDA only.)"""
    contract(ctx)
    t = ctx.shape(0)
    _rank(ctx, t, (2,), "bias_table")

    def scalar(i, what):
        v = ctx.value(i)
        if v is not None and len(v) == 1 and v[0] is not None and not isinstance(v[0], bool):
            return v[0]
        return ctx.data_symbol(f"{ctx.name}_{what}", None, f"RelativePositionBias {what} (a runtime scalar)")

    heads = t[1] if t is not None else ctx.unknown_dim(f"{ctx.name}_heads")
    ctx.set_output(0, (1, heads, scalar(1, "query_length"), scalar(2, "key_length")), ctx.dtype(0))


@register(MS, "SparseAttention", since_version=1)
def sparse_attention(ctx):
    """query (B, S, N * H) with key / value, or packed (B, S, (N + 2 Nk) * H): output
    (B, S, N * H); present_key / present_value keep past's shape (shared buffers).  (CUDA only.)"""
    contract(ctx)
    n = _heads(ctx)
    nk = _heads(ctx, "kv_num_heads")
    q = ctx.shape(0)
    _rank(ctx, q, (3,), "query")
    out = None
    if q is not None:
        if ctx.has_input(1) or ctx.has_input(2):
            out = q
        else:
            h = _div(ctx, q[2], n + 2 * nk, "sparseattention.packed", "the packed QKV hidden size")
            out = (q[0], q[1], E.mul(n, h))
    ctx.set_output(0, out, ctx.dtype(0))
    for o, i in ((1, 3), (2, 4)):
        if ctx.has_output(o):
            ctx.set_output(o, ctx.shape(i) if ctx.has_input(i) else None, ctx.dtype(0))
